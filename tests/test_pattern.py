"""The signature language's placeholders and conditions (generator/read/pattern.py), case by case.
The JavaScript half is held to the same results by tests/diagnose_vectors/."""

from __future__ import annotations

import pytest

from generator import diagnose
from generator.read import pattern

# (signature, normalised text, captured values or None for no match)
CASES = [
    ("loss: {nonfinite}", "step 3 loss: nan", {}),
    ("loss: {nonfinite}", "step 3 loss: -inf, lr 1e-4", {}),
    ("loss: {nonfinite}", "loss: +infinity", {}),
    ("loss: {nonfinite}", "loss: tensor(nan, device='cuda:0')", {}),
    ("loss: {nonfinite}", "loss: 0.5231", None),
    ("loss: {nonfinite}", "loss: nanoseconds", None),
    ("loss: {nonfinite}", "loss: info", None),
    ("loss: {nonfinite}", "loss: nan_count", None),
    # The earliest occurrence that matches, not the first occurrence of the text before it.
    ("loss: {nonfinite}", "loss: 0.5 then loss: nan", {}),
    ("{nonfinite} at the start", "{nonfinite} at the start", {}),
    ("{nonfinite} at the start", "nan at the start", None),
    ("allocate {size:r}", "tried to allocate 20.00 mib.", {"r": (20 * 1024**2, "20.00 MiB")}),
    ("allocate {size:r}", "tried to allocate 2gib", {"r": (2 * 1024**3, "2 GiB")}),
    ("and {size:u} is", "and 0 bytes is reserved", {"u": (0, "0 bytes")}),
    ("allocate {size:r}", "tried to allocate 20.00", None),
    ("allocate {size:r}", "tried to allocate 20 mibs", None),
    ("allocate {size:r}", "tried to allocate mib", None),
]


@pytest.mark.parametrize(("signature", "text", "expected"), CASES)
def test_placeholders(
    signature: str, text: str, expected: dict[str, tuple[float, str]] | None
) -> None:
    found = pattern.match(diagnose.compiled(signature), text)
    if expected is None:
        assert found is None
    else:
        assert found is not None
        assert {k: (v.bytes, v.text) for k, v in found.items()} == expected


def test_a_size_reads_a_bounded_number_of_digits() -> None:
    digits = "9" * (pattern.NUMBER_DIGITS + 5)
    assert pattern.match(diagnose.compiled("allocate {size:r}"), f"allocate {digits} mib") is None


@pytest.mark.parametrize(
    ("condition", "values", "holds"),
    [
        ("unallocated > requested", {"unallocated": 3.0, "requested": 2.0}, True),
        ("unallocated > requested", {"unallocated": 2.0, "requested": 2.0}, False),
        ("unallocated <= requested", {"unallocated": 2.0, "requested": 2.0}, True),
        ("total < 16 GiB", {"total": 15.0 * 1024**3}, True),
        ("total >= 16gib", {"total": 15.0 * 1024**3}, False),
        ("free < 100", {"free": 99.0}, True),
        ("free < requested", {"free": 1.0}, False),  # a name the match did not capture
    ],
)
def test_conditions(condition: str, values: dict[str, float], holds: bool) -> None:
    parsed = pattern.parse_condition(condition)
    assert parsed is not None
    assert parsed.holds({k: pattern.Value(v, "") for k, v in values.items()}) is holds


@pytest.mark.parametrize("text", ["free is small", "a > ", "> b", "a = b", "a < 2 parsecs"])
def test_what_is_not_a_condition(text: str) -> None:
    assert pattern.parse_condition(text) is None


def test_literal_pieces_leave_placeholders_out() -> None:
    # What anchors, search keys and length rules see: the text a matching line must contain.
    assert diagnose.pieces("Tried to allocate {size:r}*and {size:u} is reserved") == [
        "tried to allocate ",
        "and ",
        " is reserved",
    ]
