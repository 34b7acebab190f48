"""WCAG AA on the built site, checked by axe-core (axe-playwright-python's bundled copy) in
Debian's Chromium: the home page, a category, a tag, an entry, the severity and diagnose pages
and a page of search results, at desktop and phone width, with no serious or critical
violation; and no page wider than a 360 px screen."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe

pytestmark = pytest.mark.browser

PAGES = {
    "home": "/",
    "category": "/memory/",
    "tag": "/tags/cuda/",
    "entry": "/memory/cuda-out-of-memory/",
    "severity": "/severity/",
    "diagnose": "/diagnose/",
}
SCREENS = {"desktop": (1280, 800), "phone": (390, 844)}
BLOCKING = {"serious", "critical"}


@pytest.fixture(params=sorted(SCREENS))
def screen(request: pytest.FixtureRequest, chromium: Any) -> Iterator[Any]:
    width, height = SCREENS[request.param]
    context = chromium.new_context(viewport={"width": width, "height": height})
    yield context.new_page()
    context.close()


def _blocking(page: Any) -> list[str]:
    found = Axe().run(page).response["violations"]
    return [
        f"{v['id']} ({v['impact']}) at {v['nodes'][0]['target']}: {v['help']}"
        for v in found
        if v["impact"] in BLOCKING
    ]


@pytest.mark.parametrize("name", sorted(PAGES))
def test_page_has_no_serious_accessibility_violation(
    screen: Any, shipped_url: str, name: str
) -> None:
    screen.goto(shipped_url + PAGES[name])
    assert _blocking(screen) == []


def test_search_results_have_no_serious_accessibility_violation(
    screen: Any, shipped_url: str
) -> None:
    screen.goto(shipped_url + "/")
    # On a phone the box opens from the header's magnifier; on a desktop it is in the header.
    wide = screen.viewport_size["width"] > 960
    screen.click(".md-search__input" if wide else 'label.md-header__button[for="__search"]')
    screen.locator("input.md-search__input").type("CUDA out of memory", delay=5)
    screen.wait_for_selector(".md-search-result__item a", timeout=10000)
    assert _blocking(screen) == []


@pytest.mark.parametrize("name", sorted(PAGES))
def test_page_fits_a_360_pixel_screen(chromium: Any, shipped_url: str, name: str) -> None:
    context = chromium.new_context(viewport={"width": 360, "height": 740})
    page = context.new_page()
    page.goto(shipped_url + PAGES[name])
    width = page.evaluate("document.documentElement.scrollWidth")
    context.close()
    assert width <= 360, f"{PAGES[name]} is {width} px wide"
