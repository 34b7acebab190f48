"""The built site in Debian's Chromium: search finds entries by their error text, and reading
pages or searching makes no request to any host but the local server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

pytestmark = pytest.mark.browser

# query -> the entry that must come first (ids of shipped entries)
SEARCHES = {
    "illegal memory access": "cuda-illegal-memory-access",
    "max_seqlen_k": "flash-attention-max-seqlen-illegal-access",
    "cu_seqlens": "flash-attention-max-seqlen-illegal-access",
    "int32": "flash-attention-max-seqlen-illegal-access",
    "RuntimeError: CUDA error: an illegal memory access was encountered": (
        "cuda-illegal-memory-access"
    ),
}


@pytest.fixture()
def page(chromium: Any) -> Iterator[Any]:
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    yield context.new_page()
    context.close()


def search(page: Any, query: str) -> list[str]:
    """Type `query` into the real search box; return the result links, best first."""
    page.click("label.md-search__icon, .md-search__input", timeout=5000)
    box = page.locator("input.md-search__input")
    box.fill("")
    box.type(query, delay=5)
    page.wait_for_selector(".md-search-result__item a", timeout=10000)
    return page.eval_on_selector_all(
        "li.md-search-result__item > a.md-search-result__link", "els => els.map(e => e.href)"
    )


def entry_id(href: str) -> str:
    return urlsplit(href).path.rstrip("/").split("/")[-1]


@pytest.mark.parametrize("query", sorted(SEARCHES))
def test_search_box_brings_the_right_entry_first(page: Any, shipped_url: str, query: str) -> None:
    page.goto(shipped_url + "/")
    results = search(page, query)
    assert results, f"no result for {query!r}"
    assert entry_id(results[0]) == SEARCHES[query], results[:5]


def test_no_request_leaves_the_local_server(
    page: Any, shipped_url: str, shipped_site: Path
) -> None:
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    entries = json.loads((shipped_site / "api" / "entries.json").read_text())
    page.goto(shipped_url + "/")
    page.wait_for_load_state("networkidle")
    page.goto(shipped_url + "/" + entries[0]["url"].lstrip("/"))
    page.wait_for_load_state("networkidle")
    search(page, "illegal memory access")
    page.wait_for_load_state("networkidle")
    local = urlsplit(shipped_url).netloc
    foreign = [
        u
        for u in requests
        if urlsplit(u).scheme in ("http", "https", "ws", "wss") and urlsplit(u).netloc != local
    ]
    assert requests, "no request was recorded at all"
    assert foreign == []


def test_entry_page_reads_without_javascript(chromium: Any, fixture_url: str) -> None:
    context = chromium.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(fixture_url + "/memory/alpha-oom/")
    assert page.locator("h1").inner_text().rstrip("¶") == "Alpha out of memory"
    assert page.locator("#fix").is_visible()
    assert page.locator("table td").first.inner_text() == "Crash at the first step"
    context.close()
