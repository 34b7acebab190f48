"""The red-team site in Chromium: no page that shows a payload opens a dialog, runs a script
that sets the payloads' marker (`window.__pwned`) or asks another host for anything."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.support import serve_dir

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def redteam_url(redteam_site: Path) -> Iterator[str]:
    with serve_dir(redteam_site) as url:
        yield url


def test_payload_pages_run_nothing_and_request_nothing_elsewhere(
    chromium: Any, redteam_site: Path, redteam_url: str
) -> None:
    paths = ["", "categories/", "severity/", "tags/", "diagnose/"]
    for page_file in sorted(redteam_site.glob("cat-*/**/index.html")):
        if not page_file.parent.name.endswith("-old"):  # alias stubs redirect at once
            paths.append(page_file.parent.relative_to(redteam_site).as_posix() + "/")
    paths += [
        p.parent.relative_to(redteam_site).as_posix() + "/"
        for p in sorted(redteam_site.glob("tags/tag-*/index.html"))
    ]
    assert len(paths) > 100
    context = chromium.new_context()
    page = context.new_page()
    events: list[str] = []
    local = urlsplit(redteam_url).netloc

    def dialog(d: Any) -> None:
        events.append(f"dialog: {d.message}")
        d.dismiss()

    page.on("dialog", dialog)
    page.on(
        "request",
        lambda r: (
            events.append(f"request: {r.url}")
            if urlsplit(r.url).scheme in ("http", "https", "ws", "wss")
            and urlsplit(r.url).netloc != local
            else None
        ),
    )
    try:
        for path in paths:
            page.goto(f"{redteam_url}/{path}", wait_until="load")
            # hover and focus everything, so that handlers waiting for a user would fire
            page.evaluate("""() => { for (const el of document.querySelectorAll('*')) {
                el.dispatchEvent(new MouseEvent('mouseover', {bubbles: true}));
                if (el.focus) el.focus(); } }""")
            if page.evaluate("() => window.__pwned !== undefined"):
                events.append(f"script ran on /{path}")
    finally:
        context.close()
    assert events == []
