"""Serve a built site on localhost and screenshot pages with Debian's Chromium.

Usage: python scripts/screenshot.py SITE_DIR OUT_DIR PATH [PATH ...]
"""

from __future__ import annotations

import functools
import http.server
import sys
import threading
from pathlib import Path

from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def main() -> None:
    site, out, paths = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
    out.mkdir(parents=True, exist_ok=True)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        for i, path in enumerate(paths):
            page.goto(base + path)
            page.wait_for_load_state("networkidle")
            name = out / f"{i:02d}-{path.strip('/').replace('/', '_') or 'home'}.png"
            page.screenshot(path=str(name), full_page=True)
            print(name)
        browser.close()
    server.shutdown()


if __name__ == "__main__":
    main()
