"""Serve a built site on localhost and screenshot pages with Debian's Chromium.

Usage: python scripts/screenshot.py SITE_DIR OUT_DIR PATH [PATH ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.support import CHROMIUM, CHROMIUM_ARGS, serve_dir  # noqa: E402


def main() -> None:
    site, out, paths = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
    out.mkdir(parents=True, exist_ok=True)
    with serve_dir(site) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        for i, path in enumerate(paths):
            page.goto(base + path)
            page.wait_for_load_state("networkidle")
            name = out / f"{i:02d}-{path.strip('/').replace('/', '_') or 'home'}.png"
            page.screenshot(path=str(name), full_page=True)
            print(name)
        browser.close()


if __name__ == "__main__":
    main()
