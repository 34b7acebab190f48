"""How a large site's full-text index is split into parts (the search box merges them:
test_browser.py)."""

from __future__ import annotations

from pathlib import Path

from generator.search import fulltext


def _pages(site: Path, folder: str, count: int, indexed: bool = True) -> None:
    for n in range(count):
        page = site / folder / f"p{n}" / "index.html"
        page.parent.mkdir(parents=True)
        body = "<div data-pagefind-body>x</div>" if indexed else "<p>a list</p>"
        page.write_text(f"<html><body>{body}</body></html>")


def test_a_site_that_fits_keeps_one_index(tmp_path: Path) -> None:
    _pages(tmp_path, "memory", 3)
    _pages(tmp_path, "tags", 5, indexed=False)
    assert fulltext.parts(tmp_path, part_pages=10) == [
        ["memory/p0/index.html", "memory/p1/index.html", "memory/p2/index.html"]
    ]


def test_a_large_site_is_split_into_parts_that_mix_its_folders(tmp_path: Path) -> None:
    for folder in ("compile", "data", "kernels", "memory"):
        _pages(tmp_path, folder, 25)
    _pages(tmp_path, "tags", 30, indexed=False)  # never indexed: no page of it is marked
    (tmp_path / "pagefind").mkdir()
    (tmp_path / "pagefind" / "x.html").write_text("<div data-pagefind-body></div>")
    grouped = fulltext.parts(tmp_path, part_pages=30)
    assert len(grouped) == 4  # 100 indexed pages, at most 30 a part on average
    every = sorted(page for part in grouped for page in part)
    assert every == sorted(
        f"{f}/p{n}/index.html" for f in ("compile", "data", "kernels", "memory") for n in range(25)
    )
    # Pages go by a hash of their path: each part holds pages of every folder, so each ranks
    # by much the same word statistics as the whole.
    for part in grouped:
        assert {page.split("/")[0] for page in part} == {"compile", "data", "kernels", "memory"}
    assert fulltext.parts(tmp_path, part_pages=30) == grouped  # the same on every build


def test_the_summary_adds_up_pages_over_parts() -> None:
    outputs = [
        "Running Pagefind\n  Indexed 1 language\n  Indexed 30 pages\n  Indexed 900 words",
        "  Indexed 1 language\n  Indexed 12 pages\n  Indexed 700 words",
    ]
    assert fulltext._summary(outputs, 2) == (
        "Indexed 1 language; Indexed 42 pages; Indexed 900 words (in 2 parts)"
    )
