"""Benchmark the diagnose matcher and print figures (no pass/fail: read them).

- CLI throughput on a 100 MB training log against all signatures, beside
  `grep -F -i -f <every literal piece of every signature>` on the same file, at the shipped
  entries and at 1,000 synthetic ones (copies with signatures of their own).
- Hostile inputs: 100 MB on one line, 10 million short lines, 100 MB of binary junk.
- Peak memory of the CLI on a 1 GB log (with --gigabyte): streaming keeps it bounded.
- The browser: a 10 MB log through the diagnose page in Debian's Chromium, and how long the
  page's event loop stalls meanwhile.

Usage: python scripts/bench_diagnose.py [--gigabyte] [--no-browser] [--no-synthetic]
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generator import diagnose  # noqa: E402
from generator.diagnose.records import EntrySignatures  # noqa: E402
from generator.pages import exports  # noqa: E402
from generator.pipeline import build_encyclopedia  # noqa: E402

MB = 1024 * 1024
NOISE = [
    "[rank{r}]: step {s} | loss {l:.4f} | lr 3.0e-04 | grad_norm {g:.3f} | tokens/s {t}",
    "{s}/100000 [{m:02d}:{x:02d}<12:34:56, 1.23it/s]",
    "INFO:root:Saving checkpoint to /checkpoints/step_{s}",
    "[W1129 10:{m:02d}:{x:02d}.000000 ProcessGroupNCCL.cpp:1234] Warning: something benign {s}",
    '  File "/opt/conda/lib/python3.11/site-packages/torch/nn/modules/module.py", line {s}',
    "wandb: logging step {s} memory allocated {g:.2f} GiB reserved {l:.2f} GiB",
]


def make_log(path: Path, size: int) -> None:
    rng = random.Random(42)
    with path.open("w") as out:
        written = 0
        block = []
        while written < size:
            line = (
                rng.choice(NOISE).format(
                    r=rng.randint(0, 7),
                    s=rng.randint(0, 99999),
                    l=rng.random() * 5,
                    g=rng.random() * 3,
                    t=rng.randint(1000, 99999),
                    m=rng.randint(0, 59),
                    x=rng.randint(0, 59),
                )
                + "\n"
            )
            block.append(line)
            written += len(line)
            if len(block) >= 10000:
                out.write("".join(block))
                block = []
        out.write("".join(block))
        out.write(
            "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
        )


# Run in a fresh process of its own, so that the peak it reports is this command's alone
# (RUSAGE_CHILDREN of the benchmark itself is the largest child so far).
_PROBE = (
    "import resource, subprocess, sys, time; t = time.perf_counter(); "
    "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, "
    "stderr=subprocess.DEVNULL).returncode; "
    "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, code)"
)


def timed(cmd: list[str]) -> tuple[float, float, int]:
    """(seconds, peak RSS of the command in MiB, exit code)."""
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, *cmd], capture_output=True, text=True, check=True
    )
    seconds, peak, code = out.stdout.split()
    return float(seconds), int(peak) / 1024, int(code)


def literals(index_records: list[EntrySignatures], path: Path) -> None:
    pieces: set[str] = set()
    for record in index_records:
        for sig in record["signatures"]:
            pieces.update(p.strip() for p in sig["text"].split("*") if p.strip())
    path.write_text("\n".join(sorted(pieces)) + "\n")


def bench_training_log(tmp: Path, index_file: Path, patterns: Path, label: str) -> None:
    """The headline figure: the 100 MB training log against `index_file`, beside grep over the
    same signatures' literal pieces."""
    cli = [
        sys.executable,
        "-m",
        "generator.terminal.cli",
        "diagnose",
        "--index",
        str(index_file),
        "--json",
    ]
    log = tmp / "train-100mb.log"
    if not log.exists():
        make_log(log, 100 * MB)
    grep_s, _, _ = timed(["grep", "-F", "-i", "-c", "-f", str(patterns), str(log)])
    ours, rss, code = timed([*cli, str(log)])
    print(
        f"100 MB training log, {label}: encyclopedia diagnose {ours:.2f} s (peak {rss:.0f} MiB, "
        f"exit {code}); grep -F -i -f {grep_s:.2f} s; ratio {ours / grep_s:.1f}x"
    )


def bench_synthetic(tmp: Path, count: int) -> None:
    """The same figure at `count` entries: copies of the shipped ones with signatures of their
    own (scripts/bench_build.py's synthetic entries)."""
    from scripts.bench_build import synthetic

    entries = tmp / f"entries-{count}"
    made = synthetic(entries, count)
    records = exports.signature_index(build_encyclopedia(entries), "/")
    index_file = tmp / f"signatures-{count}.json"
    index_file.write_text(json.dumps(records))
    patterns = tmp / f"literals-{count}.txt"
    literals(records, patterns)
    sigs = len(diagnose.Index.from_export(records).signatures)
    bench_training_log(tmp, index_file, patterns, f"{made} synthetic entries ({sigs} signatures)")


def bench_cli(tmp: Path, index_file: Path) -> None:
    cli = [
        sys.executable,
        "-m",
        "generator.terminal.cli",
        "diagnose",
        "--index",
        str(index_file),
        "--json",
    ]

    one_line = tmp / "one-line.log"
    with one_line.open("w") as out:
        chunk = "x" * MB
        for _ in range(100):
            out.write(chunk)
        out.write(" CUDA out of memory. Tried to allocate 1 GiB\n")
    ours, rss, code = timed([*cli, str(one_line)])
    print(f"100 MB on one line: {ours:.2f} s (peak {rss:.0f} MiB, exit {code})")

    short = tmp / "short-lines.log"
    with short.open("w") as out:
        out.write("ok\n" * 10_000_000)
    ours, rss, code = timed([*cli, str(short)])
    print(f"10 million short lines: {ours:.2f} s (peak {rss:.0f} MiB, exit {code})")

    junk = tmp / "junk.bin"
    with junk.open("wb") as out:
        rng = random.Random(7)
        for _ in range(100):
            out.write(rng.randbytes(MB))
    ours, rss, code = timed([*cli, str(junk)])
    print(f"100 MB of binary junk: {ours:.2f} s (peak {rss:.0f} MiB, exit {code})")


def bench_gigabyte(tmp: Path, index_file: Path) -> None:
    log = tmp / "train-1gb.log"
    base = tmp / "train-100mb.log"
    with log.open("wb") as out:
        data = base.read_bytes()
        for _ in range(10):
            out.write(data)
    cli = [sys.executable, "-m", "generator.terminal.cli", "diagnose", "--index", str(index_file)]
    ours, rss, code = timed([*cli, str(log)])
    print(f"1 GB log: {ours:.1f} s, peak {rss:.0f} MiB (streamed), exit {code}")


def bench_browser(tmp: Path) -> None:
    from playwright.sync_api import sync_playwright

    from tests.support import CHROMIUM, CHROMIUM_ARGS, serve_dir

    site = tmp / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-q", "-d", str(site)],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
    )
    log = tmp / "train-10mb.log"
    make_log(log, 10 * MB)
    with serve_dir(site) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.goto(url + "/diagnose/")
        page.evaluate("""() => { window.__stalls = []; let last = performance.now();
            (function tick() { const now = performance.now();
              window.__stalls.push(now - last); last = now; setTimeout(tick, 10); })(); }""")
        start = time.perf_counter()
        page.set_input_files(".enc-diagnose input[type=file]", str(log))
        page.wait_for_selector(".enc-diagnose-match", timeout=60000)
        seconds = time.perf_counter() - start
        worst = page.evaluate("Math.max(...window.__stalls)")
        status = page.inner_text(".enc-diagnose-status")
        browser.close()
    print(
        f"browser, 10 MB file: results after {seconds:.2f} s; worst event-loop stall "
        f"{worst:.0f} ms; page says: {status}"
    )


def bench_run(tmp: Path) -> None:
    """`encyclopedia run` around a command printing the 100 MB log: its throughput when the
    command succeeds (the output is copied through and spooled; nothing waits for the matcher),
    and the whole time when it fails (the diagnosis is waited for at the end). Peak memory is
    measured in a fresh process whose only descendants are the wrapper and command. Run in the
    repository, the wrapper reads its entries folder before starting the command: about 2 s for
    200 entries the first time, then from the record cache (generator/terminal/recordcache.py),
    which the warm-up call below fills; installed elsewhere it reads the packaged index."""
    log = tmp / "train-100mb.log"
    size_mb = log.stat().st_size / 1e6
    for status in (0, 1):
        child = [
            sys.executable,
            "-c",
            "import shutil, sys; "
            f"shutil.copyfileobj(open({str(log)!r}, 'rb'), sys.stdout.buffer); sys.exit({status})",
        ]
        _bench_run_once(child, size_mb, "succeeds" if status == 0 else "fails")


def _bench_run_once(child: list[str], size_mb: float, outcome: str) -> None:
    timed(
        [sys.executable, "-m", "generator.terminal.cli", "run", "--", "true"]
    )  # fills the record cache
    for label, cmd in (
        ("the command alone", child),
        (
            "encyclopedia run -- command",
            [sys.executable, "-m", "generator.terminal.cli", "run", "--", *child],
        ),
    ):
        seconds, peak, code = timed(cmd)
        print(
            f"{label}, printing {size_mb:.0f} MB and {outcome}: {seconds:.2f} s "
            f"({size_mb / seconds:.0f} MB/s), peak {peak:.0f} MiB, exit {code}"
        )


def main() -> None:
    enc = build_encyclopedia(ROOT / "entries")
    records = exports.signature_index(enc, "/")
    index = diagnose.Index.from_export(records)
    print(f"{len(records)} entries, {len(index.signatures)} signatures")
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        index_file = tmp / "signatures.json"
        index_file.write_text(json.dumps(records))
        patterns = tmp / "literals.txt"
        literals(records, patterns)
        bench_training_log(tmp, index_file, patterns, "shipped entries")
        if "--no-synthetic" not in sys.argv:
            bench_synthetic(tmp, 1000)
        bench_cli(tmp, index_file)
        bench_run(tmp)
        if "--gigabyte" in sys.argv:
            bench_gigabyte(tmp, index_file)
        if "--no-browser" not in sys.argv:
            bench_browser(tmp)


if __name__ == "__main__":
    main()
