"""Contributor text renders exactly as written in every context (the tricky-text fixture)."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from tests.htmltext import texts


@pytest.fixture(scope="module")
def page(fixture_site: Path) -> str:
    return (fixture_site / "kernels" / "tricky-text" / "index.html").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def shown(page: str) -> dict[str, list[str]]:
    return texts(page, "h1", "h3", "td", "li", "pre", "p", "a", "title")


def test_title_heading(shown: dict[str, list[str]]) -> None:
    assert "Tricky | <module> {{ x }} *args __init__ ünïcødé" in shown["h1"]


def test_page_title(shown: dict[str, list[str]]) -> None:
    assert shown["title"][0].startswith("Tricky | `<module>` {{ x }} *args __init__ ünïcødé")


def test_table_cells(shown: dict[str, list[str]]) -> None:
    assert "Cell | with <module> and *args" in shown["td"]
    assert "Cause | with {{ x }} and __init__ and ünïcødé" in shown["td"]


def test_list_items(shown: dict[str, list[str]]) -> None:
    assert "Check | *args and __init__" in shown["li"]
    assert "Step with a | b and <= 3 and {% raw %}" in shown["li"]


def test_prose_paragraphs(shown: dict[str, list[str]]) -> None:
    assert (
        "Text with | pipes, {{ x }}, {% raw %}, *args, __init__ and `backticks` and ünïcødé."
        in shown["p"]
    )
    assert 'In code: File "x.py", line 1, in <module>.' in shown["p"]
    assert any("Pipes | and <script>alert(1)</script> in code" in p for p in shown["p"])


def test_code_blocks(shown: dict[str, list[str]]) -> None:
    code = "\n".join(shown["pre"])
    assert 'print("{{ x }} {% raw %} | <script>alert(1)</script>")' in code
    assert "s = ```nested```" in code
    assert "<script>alert(1)</script> in an error line" in code
    assert 'File "train.py", line 3, in <module> {{ x }}' in code


def test_faq_heading_and_answer(shown: dict[str, list[str]]) -> None:
    assert "Question | with <module> {{ x }} *args?" in shown["h3"]
    assert "Answer __init__ | {% raw %} ünïcødé" in shown["p"]


def test_links_keep_their_text(shown: dict[str, list[str]]) -> None:
    assert "Ref | {{ x }}" in shown["a"]


def test_no_markup_is_injected(page: str) -> None:
    assert "<script>alert(1)</script>" not in page
    assert "<module>" not in page
    hrefs = re.findall(r'<a href="([^"]*)"', page)
    assert "https://example.org/?a=1&b=<2>" in [html.unescape(h) for h in hrefs]
