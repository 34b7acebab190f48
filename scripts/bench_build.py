"""Build figures at the shipped size and at N synthetic entries; print them.

Usage: python scripts/bench_build.py [N ...] [--runs K] [--preview N ...] [--keep DIR]
  N          entry counts to measure (default: shipped 1000); "shipped" = entries/
  --runs     interleaved runs per build for the overhead ratio (default 3)
  --preview  counts at which to time an edit under `mkdocs serve` (default: shipped 1000)
  --keep     keep the synthetic entries folders here and reuse them

For each size it prints:
- the full build with the plugin (`mkdocs build --strict`, Pagefind included): wall and CPU
  seconds and peak memory of the build process and its children;
- the overhead ratio: the plugin's build against MkDocs building the very same Markdown without
  the plugin (the tree `encyclopedia render` writes, built with the same theme and
  extensions), interleaved runs, medians; once with the plugin's full-text index off (the
  same work) and once with it on (what a real build does);
- edit-to-visible under `mkdocs serve`: the time from saving an entry with a new title to that
  title being served, the median of three edits.

The synthetic entries are copies of every shipped entry under new ids (related links kept
inside each copy set), so each page costs what a real page costs.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
SETTLE = 6.0  # seconds between two timed edits of the preview


def _suffixed(signatures: list[str | dict[str, str]], suffix: str) -> list[str | dict[str, str]]:
    return [
        s + suffix if isinstance(s, str) else {**s, "text": s["text"] + suffix} for s in signatures
    ]


def synthetic(target: Path, count: int) -> int:
    shipped = sorted(p for p in (ROOT / "entries").glob("*/*.yaml") if p.name != "_category.yaml")
    for category in (ROOT / "entries").glob("*/_category.yaml"):
        (target / category.parent.name).mkdir(parents=True, exist_ok=True)
        shutil.copy(category, target / category.parent.name / "_category.yaml")
    made, copy = 0, 0
    while made < count:
        for path in shipped:
            if made >= count:
                break
            data = yaml.safe_load(path.read_text())
            suffix = f"-copy{copy}"
            data["title"] = f"{data['title']} (copy {copy})"
            data["related"] = [{**r, "id": r["id"] + suffix} for r in data.get("related", [])]
            data.pop("aliases", None)
            # A signature may not be claimed by two unrelated entries: make each copy's unique.
            data["signatures"] = _suffixed(data.get("signatures", []), suffix)
            for row in data["symptoms"]:
                if "signatures" in row:
                    row["signatures"] = _suffixed(row["signatures"], suffix)
            # The copied signatures are proven by a log of the copy that holds each of them (a
            # signature no example log holds must name a source).
            texts = [
                # a value where the signature has a placeholder or a wildcard
                re.sub(r"\{[^}]*\}", "nan", (sig if isinstance(sig, str) else sig["text"])).replace(
                    "*", "X"
                )
                for rows in [data["signatures"]]
                + [r.get("signatures", []) for r in data["symptoms"]]
                for sig in rows
            ]
            where = data["references"][0]["url"]
            for at in range(0, len(texts), 30):
                lines = [*texts[at : at + 30], "synthetic", "synthetic"]
                log = "".join(line + "\n" for line in lines)
                data.setdefault("examples", []).append({"source": where, "log": log})
            out = target / path.parent.name / f"{path.stem}{suffix}.yaml"
            out.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False))
            made += 1
        copy += 1
    # Links to ids of a copy set that was cut short would dangle: drop them.
    ids = {p.stem for p in target.glob("*/*.yaml")}
    for path in target.glob("*/*.yaml"):
        if path.name == "_category.yaml":
            continue
        data = yaml.safe_load(path.read_text())
        kept = [r for r in data.get("related", []) if r["id"] in ids]
        if kept != data.get("related", []):
            data["related"] = kept
            path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False))
    return made


def _configs(folder: Path, rendered: Path) -> dict[str, Path]:
    """mkdocs.yml as it is, with the full-text index off, and without the plugin over the
    rendered tree (every other setting the same)."""
    text = (ROOT / "mkdocs.yml").read_text()
    text = text.replace("custom_dir: overrides", f"custom_dir: {ROOT / 'overrides'}")
    plugin = re.search(r"  - encyclopedia:\n(    .*\n)+", text)
    assert plugin, "mkdocs.yml lists the encyclopedia plugin"
    docs = f"docs_dir: {ROOT / 'site_assets'}"
    variants = {
        "plugin": text.replace("docs_dir: site_assets", docs),
        "plugin, no full text": text.replace("docs_dir: site_assets", docs).replace(
            plugin.group(0), plugin.group(0) + "      full_text: false\n"
        ),
        "no plugin": text.replace("docs_dir: site_assets", f"docs_dir: {rendered}").replace(
            plugin.group(0), ""
        ),
    }
    paths = {}
    for name, body in variants.items():
        path = folder / (re.sub(r"\W+", "-", name) + ".yml")
        path.write_text(body)
        paths[name] = path
    return paths


def build(config: Path, entries: Path, site: Path) -> tuple[float, float, float]:
    """One build in a fresh process: wall seconds, CPU seconds, peak memory in MiB (of the
    largest process of the build: MkDocs itself, or Pagefind)."""
    env = {**ENV, "ENCYCLOPEDIA_ENTRIES": str(entries)}
    command = [str(BIN / "mkdocs"), "build", "--strict", "-q", "-f", str(config), "-d", str(site)]
    start = time.perf_counter()
    child = subprocess.Popen(command, cwd=ROOT, env=env)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"build failed: {' '.join(command)}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def render(entries: Path, out: Path) -> None:
    subprocess.run(
        [str(BIN / "encyclopedia"), "render", str(out), "--entries", str(entries)],
        cwd=ROOT,
        env=ENV,
        check=True,
        capture_output=True,
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return str(response.read().decode("utf-8", "replace"))
    except OSError:
        return ""


def edit_to_visible(entries: Path, field: str = "title", edits: int = 3) -> list[float]:
    """Seconds from saving an entry with a new `field` (its title, which every page listing or
    linking the entry shows, or its fix time, which only its own page shows) to the served
    page showing it."""
    port = _free_port()
    env = {**ENV, "ENCYCLOPEDIA_ENTRIES": str(entries)}
    # As `make serve` runs it: a dirty preview rebuilds only what changed.
    command = [str(BIN / "mkdocs"), "serve", "--dirty", "--livereload"]
    command += ["--dev-addr", f"127.0.0.1:{port}"]
    server = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    path = sorted(entries.glob("memory/cuda-out-of-memory*.yaml"))[0]
    url = f"http://127.0.0.1:{port}/memory/{path.stem}/"
    try:
        deadline = time.monotonic() + 1800
        while "<h1" not in _get(url):
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit("the preview server did not come up")
            time.sleep(0.5)
        # The first edit, too, comes to an idle server: one done indexing the site it built.
        while not _get(f"http://127.0.0.1:{port}/pagefind/pagefind-entry.json"):
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit("the preview's full-text index never appeared")
            time.sleep(0.5)
        original = path.read_text()
        times = []
        for n in range(edits):
            marker = f"Edited title {n} {time.time_ns()}"
            text = re.sub(rf"^{field}: .*$", f"{field}: {marker}", original, count=1, flags=re.M)
            assert text != original, f"the entry has no one-line `{field}:`"
            # Edits some seconds apart, as a contributor makes them: each one starts on a
            # server done with the last (the rest of its pages, the full-text index).
            time.sleep(SETTLE)
            start = time.perf_counter()
            path.write_text(text)
            while marker not in _get(url):
                if time.perf_counter() - start > 900:
                    raise SystemExit("the edit never became visible")
                time.sleep(0.05)
            times.append(time.perf_counter() - start)
        path.write_text(original)
        return times
    finally:
        server.terminate()
        server.wait()


def _median(values: list[float]) -> float:
    return statistics.median(values)


def measure(label: str, entries: Path, work: Path, runs: int, preview: bool) -> None:
    rendered = work / "rendered"
    render(entries, rendered)
    configs = _configs(work, rendered)
    sites = work / "sites"
    first = build(configs["plugin"], entries, sites / "plugin")
    print(
        f"{label}: full build {first[0]:.1f} s wall, {first[1]:.1f} s CPU, peak {first[2]:.0f} MiB"
    )
    results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in configs}
    for _ in range(runs):  # interleaved, so load on the machine affects every variant alike
        for name, config in configs.items():
            results[name].append(build(config, entries, sites / re.sub(r"\W+", "-", name)))
    base_wall = _median([r[0] for r in results["no plugin"]])
    base_cpu = _median([r[1] for r in results["no plugin"]])
    for name in ("plugin, no full text", "plugin"):
        wall = _median([r[0] for r in results[name]])
        cpu = _median([r[1] for r in results[name]])
        print(
            f"{label}: {name} vs the same Markdown without the plugin: "
            f"{wall / base_wall:.2f}x wall, {cpu / base_cpu:.2f}x CPU "
            f"({wall:.1f} s vs {base_wall:.1f} s, medians of {runs})"
        )
    peaks = ", ".join(f"{name} {max(r[2] for r in results[name]):.0f} MiB" for name in configs)
    print(f"{label}: peak memory by variant: {peaks}")
    pages = list((sites / "plugin").rglob("index.html"))
    largest = max(pages, key=lambda p: p.stat().st_size)
    print(
        f"{label}: {len(pages)} pages; largest {largest.relative_to(sites / 'plugin')} "
        f"{largest.stat().st_size / 1024:.0f} KiB"
    )
    served = [p for p in (sites / "plugin").rglob("*") if p.is_file() and p.suffix != ".html"]
    served = [p for p in served if "pagefind" not in p.parts and "assets" not in p.parts]
    biggest = max(served, key=lambda p: p.stat().st_size)
    print(
        f"{label}: largest generated file besides pages {biggest.relative_to(sites / 'plugin')} "
        f"{biggest.stat().st_size / 1024:.0f} KiB"
    )
    if preview:
        for field in ("title", "fix_time"):
            times = edit_to_visible(entries, field)
            print(
                f"{label}: edit of a {field} to visible under mkdocs serve --dirty: median "
                f"{_median(times):.2f} s ({', '.join(f'{t:.2f}' for t in times)})"
            )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("sizes", nargs="*", default=["shipped", "1000"])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--preview", nargs="*", default=["shipped", "1000"])
    parser.add_argument("--keep", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        for size in args.sizes:
            work = tmp / size
            work.mkdir()
            if size == "shipped":
                entries = work / "entries"
                shutil.copytree(ROOT / "entries", entries)
                count = len(list(entries.glob("*/*.yaml"))) - len(
                    list(entries.glob("*/_category.yaml"))
                )
            else:
                keep = args.keep / size if args.keep else None
                entries = keep or work / "entries"
                if not (entries / "memory").is_dir():
                    count = synthetic(entries, int(size))
                count = int(size)
            measure(f"{count} entries", entries, work, args.runs, size in args.preview)


if __name__ == "__main__":
    main()
