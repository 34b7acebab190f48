"""The signature index as the matcher runs it: each signature's literal pieces, anchor word and
placeholders, built from the exported records (api/signatures.json)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..read.pattern import Condition, Piece, Value, compiled, match, pieces
from . import anchors, frames
from .records import EntrySignatures


@dataclass(frozen=True)
class Signature:
    order: int  # position in the index: signatures found in one segment are tried in this order
    entry: str
    text: str
    weight: int
    context: bool
    parts: tuple[str, ...]  # the literal pieces (pattern.literal_view)
    anchor: bytes
    compiled: tuple[Piece, ...] = ()
    when: Condition | None = None
    # (symptom, cause, the fix step to lead with or "") of the symptom row it belongs to
    symptom: tuple[str, str, str] | None = None
    guard: str | None = None  # anchors.Anchor.guard

    def match(self, text: str) -> dict[str, Value] | None:
        """The captured sizes when the signature matches normalised `text`, else None."""
        values = match(self.compiled, text)
        if values is None or (self.when is not None and not self.when.holds(values)):
            return None
        return values

    @property
    def tokens(self) -> tuple[str, ...]:
        """Its words, as the raw bytes of a log hold them (latin-1 text of UTF-8): every one must
        be in a stretch of log for the signature to match there."""
        return tuple(
            t.encode("utf-8").decode("latin-1") for p in self.parts for t in p.split(" ") if t
        )


@dataclass(frozen=True)
class Index:
    """The signature index as exported in api/signatures.json."""

    entries: dict[str, EntrySignatures]
    signatures: tuple[Signature, ...]
    causes: dict[str, frozenset[str]]
    signals: dict[str, tuple[str, ...]] = field(default_factory=dict)  # signal -> entry ids
    raised: tuple[frames.Rule, ...] = ()  # the entries' `raised` rules (frames.py)

    @classmethod
    def from_export(cls, data: Sequence[EntrySignatures]) -> Index:
        signatures: list[Signature] = []
        for item in data:
            for sig in item["signatures"]:
                parts = tuple(pieces(sig["text"]))
                if parts:
                    found = anchors.choose(parts, compiled(sig["text"]))
                    when, symptom = sig.get("when"), sig.get("symptom")
                    signatures.append(
                        Signature(
                            len(signatures),
                            item["id"],
                            sig["text"],
                            int(sig["weight"]),
                            bool(sig["context"]),
                            parts,
                            found.word.encode("utf-8"),
                            compiled(sig["text"]),
                            Condition(**when) if when else None,
                            (
                                (symptom["symptom"], symptom["cause"], symptom.get("fix", ""))
                                if symptom
                                else None
                            ),
                            found.guard,
                        )
                    )
        signals: dict[str, list[str]] = {}
        for item in data:
            for name in item.get("metric_signals", ()):
                signals.setdefault(name, []).append(item["id"])
        return cls(
            {item["id"]: item for item in data},
            tuple(signatures),
            {item["id"]: frozenset(item.get("causes", ())) for item in data},
            {name: tuple(ids) for name, ids in signals.items()},
            frames.rules(data),
        )
