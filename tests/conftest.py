"""Shared fixtures: sites are built once per session and shared between tests."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import CHROMIUM, CHROMIUM_ARGS, ROOT, build_site, serve_dir

FIXTURE_ENTRIES = ROOT / "tests" / "fixtures" / "site" / "entries"


@pytest.fixture(scope="session")
def fixture_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture entries built with `mkdocs build --strict`."""
    return build_site(FIXTURE_ENTRIES, tmp_path_factory.mktemp("fixture") / "site")


@pytest.fixture(scope="session")
def shipped_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped entries built with `mkdocs build --strict`."""
    return build_site(ROOT / "entries", tmp_path_factory.mktemp("shipped") / "site")


@pytest.fixture(scope="session")
def chromium() -> Iterator[object]:
    """Debian's Chromium driven by Playwright. Missing Chromium fails in CI and skips elsewhere."""
    if not os.path.exists(CHROMIUM):
        message = f"{CHROMIUM} not found: install Debian's chromium package"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def shipped_url(shipped_site: Path) -> Iterator[str]:
    with serve_dir(shipped_site) as url:
        yield url


@pytest.fixture(scope="session")
def fixture_url(fixture_site: Path) -> Iterator[str]:
    with serve_dir(fixture_site) as url:
        yield url


@pytest.fixture(scope="session")
def redteam_outcomes(tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    """Every red-team placement run through `encyclopedia check` (about 20 s)."""
    from tests.redteam.corpus import outcome, placements

    root = tmp_path_factory.mktemp("redteam-cases")
    results = []
    for n, placement in enumerate(placements()):
        case = root / str(n)
        case.mkdir()
        results.append(outcome(placement, case))
    return results


@pytest.fixture(scope="session")
def redteam_entries(
    tmp_path_factory: pytest.TempPathFactory, redteam_outcomes: list[object]
) -> Path:
    from tests.redteam.corpus import combined_files, write

    return write(combined_files(redteam_outcomes), tmp_path_factory.mktemp("redteam"))  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def redteam_site(tmp_path_factory: pytest.TempPathFactory, redteam_entries: Path) -> Path:
    """Every accepted payload built into one site with `mkdocs build --strict`."""
    return build_site(redteam_entries, redteam_entries.parent / "site")
