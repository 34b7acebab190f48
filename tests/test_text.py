"""The refused-character check has a fast path for ASCII text: it must refuse exactly the
characters the Unicode-category rule refuses, wherever they stand."""

from __future__ import annotations

import unicodedata

import pytest

from generator.read.text import (
    after_first_sentence,
    first_sentence,
    refused_character,
    split_first_sentence,
)


@pytest.mark.parametrize("code", range(128))
def test_ascii_fast_path_agrees_with_the_category_rule(code: int) -> None:
    char = chr(code)
    refused = char not in "\n\t" and unicodedata.category(char) == "Cc"
    for text, at in ((char, 0), (f"plain text {char} more", 11)):
        assert refused_character(text) == (at if refused else None)


def test_non_ascii_text_still_checked_character_by_character() -> None:
    assert refused_character("caf\u00e9 \u202e") == 5  # a bidi override after a non-ASCII letter
    assert refused_character("caf\u00e9 ok") is None


# The quick answer shows a fix summary's first sentence and the fix section the rest: together
# they must be the whole summary, cut at the first full stop outside code.
@pytest.mark.parametrize(
    ("summary", "first", "rest"),
    [
        ("Lower the batch.", "Lower the batch.", ""),
        ("Lower the batch. Then accumulate.", "Lower the batch.", "Then accumulate."),
        (
            "Set `a.b = 1.0` first. Then run\n  `x`.",
            "Set `a.b = 1.0` first.",
            "Then run `x`.",
        ),
        ("Use `` a`b `` here. Or not.", "Use `` a`b `` here.", "Or not."),
        ("No stop at all", "No stop at all", ""),
    ],
)
def test_a_fix_summary_splits_after_its_first_sentence(summary: str, first: str, rest: str) -> None:
    assert split_first_sentence(summary) == (first, rest)
    assert first_sentence(summary) == first and after_first_sentence(summary) == rest
