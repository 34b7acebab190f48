"""The diagnose index made from the checked entries: each active entry's signatures (its own,
then its symptom rows'), the entries it causes and its `raised` rules (records.py types them)."""

from __future__ import annotations

from ..read.link import Encyclopedia, Page, Relation, under
from ..read.model import Signature, Symptom
from ..read.pattern import compiled, parse_condition, pieces
from . import anchors
from .records import EntrySignatures, SignatureRecord, SymptomRecord


def _signature(
    sig: Signature, symptom: Symptom | None = None, steps: tuple[str, ...] = ()
) -> SignatureRecord:
    record: SignatureRecord = {"text": sig.text, "weight": sig.score, "context": sig.context}
    parts = tuple(pieces(sig.text))
    if parts:
        found = anchors.choose(parts, compiled(sig.text))
        record["anchor"] = found.word
        if found.guard is not None:
            record["guard"] = found.guard
    condition = parse_condition(sig.when) if sig.when else None
    if condition is not None:
        record["when"] = condition.export()
    if symptom is not None:
        shown: SymptomRecord = {"symptom": symptom.symptom, "cause": symptom.cause}
        if symptom.fix_step is not None and symptom.fix_step <= len(steps):
            shown["fix"] = steps[symptom.fix_step - 1]
        record["symptom"] = shown
    return record


def signatures(page: Page) -> list[SignatureRecord]:
    """The entry's signatures, then those of its symptoms (a match of one names the symptom)."""
    return [_signature(s) for s in page.entry.signatures] + [
        _signature(s, symptom, page.entry.fix.steps)
        for symptom in page.entry.symptoms
        for s in symptom.signatures
    ]


def causes(page: Page) -> list[str]:
    """The entries this one causes: a match of one of those next to this one is collateral."""
    links = (*page.related, *page.referenced_by)
    found = {link.id for link in links if link.relation is Relation.LEADS_TO}
    return sorted(found)


def signature_record(page: Page, base: str) -> EntrySignatures:
    """One entry of the diagnose index: its signatures and the entries it causes."""
    return {
        "id": page.id,
        "title": page.entry.title,
        "url": under(base, page.url),
        "severity": page.entry.severity,
        # What a result says to do (the diagnose page and the CLI show it under the title).
        "summary": page.entry.summary,
        "first_step": page.entry.fix.steps[0],
        "causes": causes(page),
        "signatures": signatures(page),
        "metric_signals": list(page.entry.metric_signals),
        "raised": [
            {
                "exception": r.exception,
                "frame": r.frame,
                "function": r.function,
                "weight": r.weight,
            }
            for r in page.entry.raised
        ],
    }


def signature_index(enc: Encyclopedia, base: str) -> list[EntrySignatures]:
    """The diagnose index (api/signatures.json): every active entry's signature record."""
    return [signature_record(p, base) for p in enc.pages.values() if p.entry.status == "active"]
