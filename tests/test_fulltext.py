"""How a large site's full-text index is split into parts (the parts are merged by the search
box: test_browser.py)."""

from __future__ import annotations

from pathlib import Path

from generator import fulltext


def _pages(site: Path, folder: str, count: int, indexed: bool = True) -> None:
    for n in range(count):
        page = site / folder / f"p{n}" / "index.html"
        page.parent.mkdir(parents=True)
        body = "<div data-pagefind-body>x</div>" if indexed else "<p>a list</p>"
        page.write_text(f"<html><body>{body}</body></html>")


def test_a_site_that_fits_keeps_one_index(tmp_path: Path) -> None:
    _pages(tmp_path, "memory", 3)
    _pages(tmp_path, "tags", 5, indexed=False)
    assert fulltext.parts(tmp_path, part_pages=10) == [["memory"]]


def test_a_large_site_is_split_by_folders_of_indexed_pages(tmp_path: Path) -> None:
    for folder, count in (("compile", 4), ("data", 3), ("kernels", 5), ("memory", 2)):
        _pages(tmp_path, folder, count)
    # Folders without an indexed page stay out of every part: Pagefind would index all of a
    # run's pages when none is marked.
    _pages(tmp_path, "tags", 6, indexed=False)
    (tmp_path / "pagefind" / "x").mkdir(parents=True)
    assert fulltext.parts(tmp_path, part_pages=7) == [["compile", "data"], ["kernels", "memory"]]
    # A folder larger than a part is a part of its own.
    assert fulltext.parts(tmp_path, part_pages=4) == [
        ["compile"],
        ["data"],
        ["kernels"],
        ["memory"],
    ]


def test_the_summary_adds_up_pages_over_parts() -> None:
    outputs = [
        "Running Pagefind\n  Indexed 1 language\n  Indexed 30 pages\n  Indexed 900 words",
        "  Indexed 1 language\n  Indexed 12 pages\n  Indexed 700 words",
    ]
    assert fulltext._summary(outputs, 2) == (
        "Indexed 1 language; Indexed 42 pages; Indexed 900 words (in 2 parts)"
    )
