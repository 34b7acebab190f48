"""How long the entry pages of a built site are for a reader on a phone: the words of each page's
article as Chromium shows it at 390 px (`innerText`, so folded sections such as the real logs and
the further "Referenced by" titles count only by their summary line). Prints the median over
every entry, how many pages pass 2,000 words, the most common failures (entries/_common.yaml)
and the longest pages. Figures only, no pass/fail: read them.

Usage: python scripts/page_words.py SITE_DIR [ENTRY_ID ...]
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from generator.read.common import read_common  # noqa: E402
from tests.support import CHROMIUM, CHROMIUM_ARGS, serve_dir  # noqa: E402

WORDS = "document.querySelector('article').innerText.split(/\\s+/).filter(Boolean).length"
LONG = 2000  # the bound for the longest pages


def entry_paths() -> dict[str, str]:
    """Each entry id and its page's path in the site."""
    return {
        p.stem: f"/{p.parent.name}/{p.stem}/"
        for p in sorted((ROOT / "entries").glob("*/*.yaml"))
        if not p.stem.startswith("_")
    }


def main() -> None:
    site, only = Path(sys.argv[1]), sys.argv[2:]
    every = entry_paths()
    paths = {i: every[i] for i in only} if only else every
    counts: dict[str, int] = {}
    with serve_dir(site) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 390, "height": 844})
        for entry_id, path in paths.items():
            page.goto(base + path)
            counts[entry_id] = int(page.evaluate(WORDS))
        browser.close()
    print(
        f"{len(counts)} entry pages: median {statistics.median(counts.values()):.0f} words, "
        f"{sum(n >= LONG for n in counts.values())} of {LONG:,} words or more"
    )
    common, _ = read_common(ROOT / "entries", set(every), frozenset())
    common = tuple(i for i in common if i in counts)
    if common:
        print("most common failures: " + ", ".join(f"{i} {counts[i]}" for i in common))
    longest = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
    print("longest: " + ", ".join(f"{i} {n}" for i, n in longest))


if __name__ == "__main__":
    main()
