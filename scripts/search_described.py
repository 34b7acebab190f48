"""How the search box ranks described queries (tests/search/described.json): each query typed
into the real box of a built site in Chromium, the entry ids read off the results in order.

Usage: python scripts/search_described.py [SITE_DIR] [--without-described] [--misses]
  SITE_DIR             a built site (default: build the shipped entries into a temp folder)
  --without-described  block search/described.json: the box as it was before that index
                       (error signatures, then Pagefind's full text)
  --misses             list the queries whose entry is not first
Prints top-1 and top-3 for all queries, the held-out fifth, and each language."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.search_cases import (  # noqa: E402
    DESCRIBED,
    Described,
    described_queries,
    figures,
    ranked_ids,
)
from tests.support import CHROMIUM, CHROMIUM_ARGS, build_site, serve_dir  # noqa: E402


def measure(site: Path, without: bool) -> list[tuple[Described, list[str]]]:
    from playwright.sync_api import sync_playwright

    queries = described_queries()
    with serve_dir(site) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        if without:
            page.route("**/search/described.json", lambda route: route.abort())
        page.goto(url + "/")
        results = [(q, ranked_ids(page, q.text)) for q in queries]
        browser.close()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("site", nargs="?", type=Path)
    parser.add_argument("--without-described", action="store_true")
    parser.add_argument("--misses", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        site = args.site or build_site(ROOT / "entries", Path(tmp) / "site")
        results = measure(site, args.without_described)
    label = "without the described index" if args.without_described else "the search box"
    print(f"{DESCRIBED.relative_to(ROOT)}, {label}:")
    for line in figures(results):
        print("  " + line)
    if args.misses:
        for q, ids in results:
            if ids[:1] != [q.expected]:
                mark = "held-out " if q.held_out else ""
                print(f"  miss {mark}{q.lang} {q.text!r}: {q.expected} -> {ids[:3]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
