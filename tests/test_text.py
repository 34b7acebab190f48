"""The refused-character check has a fast path for ASCII text: it must refuse exactly the
characters the Unicode-category rule refuses, wherever they stand."""

from __future__ import annotations

import unicodedata

import pytest

from generator.text import refused_character


@pytest.mark.parametrize("code", range(128))
def test_ascii_fast_path_agrees_with_the_category_rule(code: int) -> None:
    char = chr(code)
    refused = char not in "\n\t" and unicodedata.category(char) == "Cc"
    for text, at in ((char, 0), (f"plain text {char} more", 11)):
        assert refused_character(text) == (at if refused else None)


def test_non_ascii_text_still_checked_character_by_character() -> None:
    assert refused_character("caf\u00e9 \u202e") == 5  # a bidi override after a non-ASCII letter
    assert refused_character("caf\u00e9 ok") is None
