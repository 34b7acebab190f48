"""The diagnose index as records: what api/signatures.json holds for each entry (made from the
checked entries by from_entries.py) and what the matcher reads, here and in diagnose-core.js.
Types only: the commands that read a packaged index load nothing of the site's stack."""

from __future__ import annotations

from typing import NotRequired, TypedDict

from ..read.pattern import ConditionRecord


class SymptomRecord(TypedDict):
    """The symptom row a signature belongs to, and the fix step to lead with for its cause."""

    symptom: str
    cause: str
    fix: NotRequired[str]


class SignatureRecord(TypedDict):
    text: str
    weight: int
    context: bool
    when: NotRequired[ConditionRecord]
    symptom: NotRequired[SymptomRecord]
    # Where the matcher looks (anchors.py): the word the scan finds and the guard that must
    # match right after it. The exports write them for diagnose-core.js, which would otherwise
    # send every line holding a common word to the full match; this half derives its own.
    anchor: NotRequired[str]
    guard: NotRequired[str]


class RaisedRecord(TypedDict):
    """An entry's `raised` rule: the exception a traceback ends with and a frame it passed."""

    exception: str
    frame: str
    function: str | None
    weight: int


class EntrySignatures(TypedDict):
    """One entry of the diagnose index. The exports write every key; the matcher needs only
    the first four (a hand-made index, as the tests make, may leave out the rest)."""

    id: str
    title: str
    url: str
    signatures: list[SignatureRecord]
    severity: NotRequired[str]
    summary: NotRequired[str]  # what a result says to do, with first_step
    first_step: NotRequired[str]
    causes: NotRequired[list[str]]  # the entries it causes: a match of one beside it is collateral
    metric_signals: NotRequired[list[str]]
    raised: NotRequired[list[RaisedRecord]]
