"""Time the header search box in Chromium on sites of 52 (shipped), 1,000 and 5,000 entries.

Usage: python scripts/bench_search.py [N ...] [--sites DIR] [--runs K]
  N        entry counts to build and measure (default: shipped 1000 5000; "shipped" = entries/)
  --sites  keep the built sites in DIR and reuse them on the next run (a 5,000-entry build
           takes several minutes on two cores)
  --runs   page loads per site for the first-search figure (default 3)

For each site it prints, per query: the time from the keystroke that completes the query to the
first result on screen, on the first search after a page load (cold cache) and on a later
search (this query typed after another one in the same page), and the bytes the query
transferred (every resource fetched after the keystroke, headers included, all from the local
server: nothing else is contacted).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts.bench_build import build, synthetic  # noqa: E402

CONFIG = ROOT / "mkdocs.yml"
from tests.search_cases import PUT_QUERY  # noqa: E402
from tests.support import serve_dir  # noqa: E402

QUERIES = [
    "CUDA out of memory",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    "nccl timeout",
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "max_seqlen_k",
]
TRACEBACK = """Traceback (most recent call last):
  File "train.py", line 88, in <module>
    loss.backward()
  File "/usr/lib/python3/site-packages/torch/_tensor.py", line 521, in backward
    torch.autograd.backward(
RuntimeError: CUDA error: an illegal memory access was encountered
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
"""  # noqa: E501

# Put the query in the box (an input event, or a paste); time until the first results are on
# screen (the error matches, else the full-text ones); wait for all results; sum the transfer
# sizes of everything fetched after the keystroke.
MEASURE = (
    """async ([query, pasted]) => {
  const before = document.body.getAttribute('data-enc-search-done');
  const beforeFirst = document.body.getAttribute('data-enc-search-first');
  const t0 = performance.now();
  ("""
    + PUT_QUERY
    + """)(query, pasted);
  while (document.body.getAttribute('data-enc-search-first') === beforeFirst) {
    await new Promise(r => requestAnimationFrame(r));
  }
  const ms = performance.now() - t0;
  while (document.body.getAttribute('data-enc-search-done') === before) {
    await new Promise(r => requestAnimationFrame(r));
  }
  const bytes = performance.getEntriesByType('resource')
    .filter(e => e.startTime >= t0).reduce((n, e) => n + e.transferSize, 0);
  const top = document.querySelector('li.md-search-result__item a');
  return {ms, bytes, first: top ? new URL(top.href).pathname : null};
}"""
)


def measure(site: Path, runs: int) -> None:
    from playwright.sync_api import sync_playwright

    cases = [(q, False) for q in QUERIES] + [(TRACEBACK, True)]
    first: dict[int, list[dict[str, Any]]] = {n: [] for n in range(len(cases))}
    later: dict[int, list[dict[str, Any]]] = {n: [] for n in range(len(cases))}
    with serve_dir(site) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium")
        for n, (query, pasted) in enumerate(cases):
            for _ in range(runs):
                # First search: a cold cache and a fresh page.
                context = browser.new_context()
                page = context.new_page()
                page.goto(url + "/")
                page.wait_for_load_state("load")
                first[n].append(page.evaluate(MEASURE, [query, pasted]))
                context.close()
                # A later search: this query after another one in the same fresh page.
                context = browser.new_context()
                page = context.new_page()
                page.goto(url + "/")
                page.wait_for_load_state("load")
                page.evaluate(MEASURE, list(cases[(n + 1) % len(cases)]))
                later[n].append(page.evaluate(MEASURE, [query, pasted]))
                context.close()
        browser.close()
    for n, (query, _) in enumerate(cases):
        label = "pasted 7-line traceback" if n == len(QUERIES) else repr(query[:60])
        cold = [r["ms"] for r in first[n]]
        warm = [r["ms"] for r in later[n]]
        cold_kb = statistics.median(r["bytes"] for r in first[n]) / 1024
        warm_kb = statistics.median(r["bytes"] for r in later[n]) / 1024
        print(
            f"  {label}: first search {min(cold):.0f}/{statistics.median(cold):.0f}/"
            f"{max(cold):.0f} ms, {cold_kb:.0f} KB; later {min(warm):.0f}/"
            f"{statistics.median(warm):.0f}/{max(warm):.0f} ms, {warm_kb:.0f} KB "
            f"(first result {first[n][0]['first']})"
        )


def site_for(count: str, sites: Path) -> Path:
    site = sites / f"site-{count}"
    if (site / "pagefind" / "pagefind-entry.json").is_file():
        return site
    if count == "shipped":
        entries = ROOT / "entries"
    else:
        # The shipped entries, so that a real error line has its real entry to find, plus
        # synthetic copies of them up to `count` (scripts/bench_build.py).
        entries = sites / f"entries-{count}"
        if not entries.is_dir():
            # Made under another name and renamed when complete: an interrupted run leaves
            # nothing a later run would take for a finished corpus.
            part, copies = sites / f"entries-{count}.part", sites / f"copies-{count}.part"
            shutil.rmtree(part, ignore_errors=True)
            shutil.rmtree(copies, ignore_errors=True)
            shutil.copytree(ROOT / "entries", part)
            shipped = sum(1 for p in part.glob("*/*.yaml") if p.name != "_category.yaml")
            copies.mkdir()
            synthetic(copies, int(count) - shipped)
            for path in copies.glob("*/*.yaml"):
                if path.name != "_category.yaml":
                    shutil.copy(path, part / path.parent.name / path.name)
            shutil.rmtree(copies)
            part.rename(entries)
    seconds = build(CONFIG, entries, site)[0]
    print(f"built {count} in {seconds:.0f} s")
    return site


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("counts", nargs="*", default=["shipped", "1000", "5000"])
    parser.add_argument("--sites", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sites = args.sites or Path(tmp)
        sites.mkdir(parents=True, exist_ok=True)
        for count in args.counts:
            site = site_for(count, sites)
            shards = sum(1 for _ in (site / "search" / "errors").iterdir())
            print(f"{count} entries: {shards} signature files (min/median/max of {args.runs})")
            measure(site, args.runs)


if __name__ == "__main__":
    main()
