"""Golden files: the Markdown rendered for each fixture page, one file per page.

Run with UPDATE_GOLDEN=1 to rewrite them after an intended change, then review the diff."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from generator.pages.render import render_site
from generator.pipeline import build_encyclopedia
from tests.conftest import FIXTURE_ENTRIES

GOLDEN = Path(__file__).parent / "golden"
EDIT = "https://example.invalid/edit/{path}"
PAGES = {p.src_uri: p for p in render_site(build_encyclopedia(FIXTURE_ENTRIES), EDIT)}


def golden_name(src_uri: str) -> str:
    return src_uri.replace("/", "__")


@pytest.mark.parametrize("src_uri", sorted(PAGES))
def test_rendered_markdown_matches_golden(src_uri: str) -> None:
    path = GOLDEN / golden_name(src_uri)
    rendered = PAGES[src_uri].markdown
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(rendered, encoding="utf-8")
    assert path.is_file(), f"no golden file for {src_uri}: run with UPDATE_GOLDEN=1"
    assert rendered == path.read_text(encoding="utf-8")


def test_no_stale_golden_files() -> None:
    expected = {golden_name(uri) for uri in PAGES}
    assert {p.name for p in GOLDEN.iterdir()} == expected


def test_a_site_can_override_a_template(tmp_path: Path) -> None:
    """A file in the site's overrides/encyclopedia/ replaces the package's template."""
    (tmp_path / "tag.md.j2").write_text("# Custom tag page for {{ tag }}\n")
    pages = {p.src_uri: p for p in render_site(build_encyclopedia(FIXTURE_ENTRIES), EDIT, tmp_path)}
    assert pages["tags/oom.md"].markdown == "# Custom tag page for oom\n"
    assert pages["memory/alpha-oom.md"].markdown == PAGES["memory/alpha-oom.md"].markdown
