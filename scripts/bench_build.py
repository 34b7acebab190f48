"""Build figures at the shipped size and at N synthetic entries; print them.

Usage: python scripts/bench_build.py [N ...] [--runs K] [--preview N ...] [--keep DIR]
                                     [--only-preview]
  N          entry counts to measure (default: shipped 1000); "shipped" = entries/
  --runs     interleaved runs per build for the overhead ratio (default 3)
  --preview  counts at which to time an edit under `mkdocs serve` (default: shipped 1000)
  --keep     keep the synthetic entries folders here and reuse them
  --only-preview  only the edit-to-reload figures

For each size it prints:
- the full build with the plugin (`mkdocs build --strict`, Pagefind included): wall and CPU
  seconds and peak memory of the build process and its children;
- the overhead ratio: the plugin's build against MkDocs building the very same Markdown without
  the plugin (the tree `encyclopedia render` writes, built with the same theme and
  extensions), interleaved runs, medians; once with the plugin's full-text index off (the
  same work) and once with it on (what a real build does);
- edit-to-reload under `mkdocs serve --dirty` (as `make serve` runs it), measured in Chromium:
  from saving a file to the open page having reloaded itself and showing the change, median of
  three, for a valid edit (a new title, on the entry's page), an edit that breaks the entry (the
  problem banner), the edit that mends it, a new entry and a deleted one (on the category's list
  pages, every one of them open). Each save comes to an idle server (its search index written).

The synthetic entries are copies of every shipped entry under new ids (related links kept
inside each copy set), so each page costs what a real page costs.
"""

from __future__ import annotations

import argparse
import functools
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
SETTLE = 6.0  # seconds between two timed edits of the preview


def copy_entry(
    data: dict[str, Any], suffix: str, title: str, relink: bool = True
) -> dict[str, Any]:
    """A shipped entry's data as a new entry of its own: `title`, and signatures (and, with
    `relink`, related ids: links within a set of copies) with `suffix` (a signature may not be
    claimed by two unrelated entries), each signature proven by an example log of the copy."""
    data = {**data, "title": title}
    if relink:
        data["related"] = [{**r, "id": r["id"] + suffix} for r in data.get("related", [])]
    data.pop("aliases", None)
    data["signatures"] = _suffixed(data.get("signatures", []), suffix)
    data["symptoms"] = [
        {**row, "signatures": _suffixed(row["signatures"], suffix)} if "signatures" in row else row
        for row in data["symptoms"]
    ]
    texts = [
        # a value where the signature has a placeholder or a wildcard
        re.sub(r"\{[^}]*\}", "nan", (sig if isinstance(sig, str) else sig["text"])).replace(
            "*", "X"
        )
        for rows in [data["signatures"]] + [r.get("signatures", []) for r in data["symptoms"]]
        for sig in rows
    ]
    where = data["references"][0]["url"]
    examples = list(data.get("examples", []))
    for at in range(0, len(texts), 30):
        lines = [*texts[at : at + 30], "synthetic", "synthetic"]
        examples.append({"source": where, "log": "".join(line + "\n" for line in lines)})
    data["examples"] = examples
    return data


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
            data = copy_entry(data, suffix, f"{data['title']} (copy {copy})")
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


def _children(pid: int) -> list[str]:
    """The processes `pid` started that still run (the preview's search indexer), not those
    that have ended and wait to be reaped."""
    found = subprocess.run(
        ["ps", "--ppid", str(pid), "-o", "stat=,pid="], capture_output=True, text=True
    )
    return [line.split()[1] for line in found.stdout.splitlines() if not line.startswith("Z")]


class Preview:
    """`mkdocs serve --dirty` over an entries folder, and Chromium with pages of it open."""

    def __init__(self, entries: Path, browser: Any) -> None:
        self.port = _free_port()
        env = {**ENV, "ENCYCLOPEDIA_ENTRIES": str(entries)}
        command = [str(BIN / "mkdocs"), "serve", "--dirty", "--livereload"]
        command += ["--dev-addr", f"127.0.0.1:{self.port}"]
        self.server = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        self.context = browser.new_context()
        self.tabs: list[Any] = []

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}/{path}"

    def wait_idle(self, first: bool = False) -> None:
        """Until the server answers and its full-text indexer (a child process) is done."""
        deadline = time.monotonic() + 1800
        while "<h1" not in _get(self.url("")) or (
            first and not _get(self.url("pagefind/pagefind-entry.json"))
        ):
            if time.monotonic() > deadline or self.server.poll() is not None:
                raise SystemExit("the preview server did not come up")
            time.sleep(0.5)
        time.sleep(1.0)  # the second half of the last edit, which starts the indexer
        while _children(self.server.pid):
            time.sleep(0.2)
        time.sleep(SETTLE)

    def open(self, paths: list[str]) -> None:
        for tab in self.tabs:
            tab.close()
        self.tabs = []
        for path in paths:
            tab = self.context.new_page()
            tab.goto(self.url(path))
            tab.wait_for_load_state("load")
            self.tabs.append(tab)

    def timed(self, save: Callable[[], object], text: str, shown: bool) -> float:
        """Seconds from `save()` to one open tab having reloaded itself with `text` shown (or,
        with `shown` false, no longer shown)."""
        holds = f"document.body.innerText.includes({text!r})"
        wanted = f"!window.notReloaded && {holds} === {str(shown).lower()}"
        # What goes away is watched where it was shown: another tab shows nothing either way.
        tabs = self.tabs if shown else [tab for tab in self.tabs if tab.evaluate(holds)]
        assert tabs, f"no open page shows {text!r}"
        for tab in tabs:
            tab.evaluate("window.notReloaded = true")
        start = time.perf_counter()
        save()
        while True:
            for tab in tabs:
                try:
                    if tab.evaluate(wanted):
                        return time.perf_counter() - start
                except Exception:  # navigating: its context is gone for a moment
                    pass
            if time.perf_counter() - start > 900:
                raise SystemExit(f"the open pages never reloaded to show {text!r}")
            time.sleep(0.02)

    def close(self) -> None:
        self.context.close()
        self.server.terminate()
        self.server.wait()


def _list_pages(preview: Preview, category: str) -> list[str]:
    """A category's list pages: the first, and each `page/N/` it links to."""
    first = _get(preview.url(f"{category}/"))
    count = max([1, *(int(n) for n in re.findall(r'href="page/(\d+)/"', first))])
    return [f"{category}/", *(f"{category}/page/{n}/" for n in range(2, count + 1))]


def edit_to_reload(entries: Path, runs: int = 3) -> dict[str, list[float]]:
    """Seconds from a save to the open page reloading itself with the change, for each kind
    of save, `runs` times each."""
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(ROOT))
    from tests.support import CHROMIUM, CHROMIUM_ARGS

    path = sorted(entries.glob("memory/cuda-out-of-memory*.yaml"))[0]
    original = path.read_text()
    data = yaml.safe_load(original)
    times: dict[str, list[float]] = {
        k: [] for k in ("valid edit", "invalid edit", "fixing edit", "new entry", "deleted entry")
    }
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        preview = Preview(entries, browser)
        try:
            preview.wait_idle(first=True)
            lists = _list_pages(preview, "memory")
            for n in range(runs):
                title = f"Edited title {n} {time.time_ns()}"
                edited = re.sub(r"^title: .*$", f"title: {title}", original, count=1, flags=re.M)
                broken = re.sub(r"^severity: .*$", "severity: hihg", edited, count=1, flags=re.M)
                mended = edited.replace(title, title + " mended")
                preview.open([f"memory/{path.stem}/"])
                for kind, text, shown in (
                    ("valid edit", edited, title),
                    ("invalid edit", broken, "problem in entries"),
                    ("fixing edit", mended, "problem in entries"),
                ):
                    preview.wait_idle()
                    times[kind].append(
                        preview.timed(
                            functools.partial(path.write_text, text), shown, kind != "fixing edit"
                        )
                    )
                new = entries / "memory" / f"bench-new-{n}.yaml"
                new_title = f"Bench new entry {n} {time.time_ns()}"
                copy = copy_entry(data, f"-bench{n}", new_title, relink=False)
                preview.open(lists)
                preview.wait_idle()
                times["new entry"].append(
                    preview.timed(
                        functools.partial(new.write_text, yaml.safe_dump(copy)),
                        new_title,
                        True,
                    )
                )
                preview.wait_idle()
                times["deleted entry"].append(preview.timed(new.unlink, new_title, False))
        finally:
            path.write_text(original)
            preview.close()
            browser.close()
    return times


def _median(values: list[float]) -> float:
    return statistics.median(values)


def measure(label: str, entries: Path, work: Path, runs: int, preview: bool) -> None:
    if runs:
        measure_builds(label, entries, work, runs)
    if preview:
        for kind, times in edit_to_reload(entries).items():
            print(
                f"{label}: {kind} to the open page reloaded (Chromium, mkdocs serve --dirty): "
                f"median {_median(times):.2f} s ({', '.join(f'{t:.2f}' for t in times)})"
            )


def measure_builds(label: str, entries: Path, work: Path, runs: int) -> None:
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("sizes", nargs="*", default=["shipped", "1000"])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--preview", nargs="*", default=["shipped", "1000"])
    parser.add_argument("--keep", type=Path)
    parser.add_argument("--only-preview", action="store_true")
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
            runs = 0 if args.only_preview else args.runs
            measure(f"{count} entries", entries, work, runs, size in args.preview)


if __name__ == "__main__":
    main()
