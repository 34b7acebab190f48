"""Diagnose a log against the signature index: the Python half of one matcher semantics whose
JavaScript half is site_assets/js/diagnose-core.js. Both pass tests/diagnose_vectors/.

Semantics (both implementations):
- The log is split into lines on LF; each line into segments on CR (progress bars redraw with
  CR). Line numbers count LF only, from 1. ANSI escape sequences are removed first.
- A segment longer than SEGMENT_BYTES bytes of UTF-8 is cut there (bounded memory).
- A segment is normalised by lower-casing ASCII letters only and turning each run of spaces,
  tabs, form feeds and vertical tabs into one space. A signature is normalised the same way
  (and trimmed) and split on `*` into literal pieces; it matches a segment when the pieces occur
  in order. No other character is special, so matching is linear in the log size.
- An entry is a candidate when one of its primary signatures matches. Its score is the sum of
  the weights of its distinct matched signatures (primary and context).
- A candidate that another candidate causes (`leads-to` / `often-caused-by`) is collateral,
  when that cause has a primary match on a line of its own.
- Order: initiating before collateral, then evidence from the rank torchrun names as the root
  cause first, then higher score, then earlier first evidence, then id.

This module streams: memory is bounded by CHUNK_BYTES plus one segment, whatever the log size.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import ahocorasick  # type: ignore[import-not-found]

CHUNK_BYTES = 4 * 1024 * 1024
SEGMENT_BYTES = 64 * 1024
MAX_EVIDENCE = 5
ROOT_BLOCK_LINES = 12

_ANSI = re.compile(
    rb"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\n\r]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]"
)
_SPACES = re.compile(r"[ \t\f\v]+")
_RANK = re.compile(r"^ ?\[(?:rank ?|default)([0-9]+)\]:")
_ROOT_CAUSE = "root cause (first observed failure)"
_ROOT_WORD = "observed"  # every line holding _ROOT_CAUSE holds this word, whatever its spacing
_ROOT_RANK = re.compile(r"^ ?rank ?: ?([0-9]+)")
_UPPER = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz")


def ascii_lower(text: str) -> str:
    return (
        "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in text)
        if any("A" <= c <= "Z" for c in text)
        else text
    )


def normalise(text: str) -> str:
    return _SPACES.sub(" ", ascii_lower(text))


def pieces(signature: str) -> list[str]:
    """The literal pieces of a signature, normalised, in order."""
    return [p for p in normalise(signature).strip(" ").split("*") if p]


def anchor(signature: str) -> str:
    """The longest run without spaces or `*`: a substring of every line the signature matches,
    used to find candidate lines fast before the full match."""
    tokens = [t for p in pieces(signature) for t in p.split(" ") if t]
    return max(tokens, key=len) if tokens else ""


def matches(parts: list[str], segment: str) -> bool:
    """True when the pieces occur in `segment` (normalised) in order."""
    pos = 0
    for part in parts:
        found = segment.find(part, pos)
        if found < 0:
            return False
        pos = found + len(part)
    return True


@dataclass(frozen=True)
class Signature:
    order: int  # position in the index: signatures found in one segment are tried in this order
    entry: str
    text: str
    weight: int
    context: bool
    parts: tuple[str, ...]
    anchor: bytes


@dataclass
class Hit:
    line: int
    text: str
    signature: str
    rank: int | None
    context: bool


@dataclass
class Candidate:
    id: str
    title: str
    url: str
    score: int = 0
    primary: bool = False
    hits: list[Hit] = field(default_factory=list)
    matched: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class Index:
    """The signature index as exported in api/signatures.json."""

    entries: dict[str, dict[str, Any]]
    signatures: tuple[Signature, ...]
    causes: dict[str, frozenset[str]]

    @classmethod
    def from_export(cls, data: list[dict[str, Any]]) -> Index:
        signatures: list[Signature] = []
        for item in data:
            for sig in item["signatures"]:
                parts = tuple(pieces(sig["text"]))
                if parts:
                    signatures.append(
                        Signature(
                            len(signatures),
                            item["id"],
                            sig["text"],
                            int(sig["weight"]),
                            bool(sig["context"]),
                            parts,
                            anchor(sig["text"]).encode("utf-8"),
                        )
                    )
        return cls(
            {item["id"]: item for item in data},
            tuple(signatures),
            {item["id"]: frozenset(item.get("causes", ())) for item in data},
        )


def _chunks(stream: BinaryIO) -> Iterator[bytes]:
    """The log in pieces that end at a line or segment break (except the last), ANSI removed.
    A segment longer than a chunk keeps only its head: the rest can never match."""
    carry = b""
    while True:
        chunk = stream.read(CHUNK_BYTES)
        if not chunk:
            if carry:
                yield _strip_ansi(carry)
            return
        data = carry + chunk
        cut = max(data.rfind(b"\n"), data.rfind(b"\r"))
        if cut < 0:
            carry = data[: SEGMENT_BYTES + 1]
            continue
        carry = data[cut + 1 :]
        yield _strip_ansi(data[: cut + 1])


def _strip_ansi(data: bytes) -> bytes:
    return _ANSI.sub(b"", data) if b"\x1b" in data else data


def _decode(segment: bytes) -> str:
    return segment[:SEGMENT_BYTES].decode("utf-8", errors="replace")


class _Scanner:
    """Finds candidate segments with one Aho-Corasick pass over each chunk (the anchors), then
    runs the full match only on those segments."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self.by_anchor: dict[str, list[Signature]] = {}
        for sig in index.signatures:
            self.by_anchor.setdefault(sig.anchor.decode("latin-1"), []).append(sig)
        self.automaton = ahocorasick.Automaton(ahocorasick.STORE_LENGTH)
        for word in [*self.by_anchor, _ROOT_WORD]:
            self.automaton.add_word(word)
        self.automaton.make_automaton()
        self.candidates: dict[str, Candidate] = {}
        self.root_rank: int | None = None
        self.root_lines_left = 0
        self.line = 1

    def feed(self, chunk: bytes) -> None:
        text = chunk.translate(_UPPER).decode("latin-1")
        if self.root_lines_left:
            self._root_block(chunk, 0)
        counted_to, line = 0, self.line
        segment_start, words = -1, set[str]()
        for end, length in self.automaton.iter(text):
            start = end - length + 1
            seg = max(text.rfind("\n", 0, start), text.rfind("\r", 0, start)) + 1
            if seg != segment_start:
                if words:
                    self._match(chunk, segment_start, words, line)
                line += text.count("\n", counted_to, seg)
                counted_to, segment_start, words = seg, seg, set()
            words.add(text[start : end + 1])
        if words:
            self._match(chunk, segment_start, words, line)
        self.line += text.count("\n")

    def _segment(self, chunk: bytes, start: int) -> bytes:
        ends = [i for i in (chunk.find(b"\n", start), chunk.find(b"\r", start)) if i >= 0]
        return chunk[start : min(ends) if ends else len(chunk)]

    def _match(self, chunk: bytes, start: int, words: set[str], line: int) -> None:
        raw = self._segment(chunk, start)
        text = _decode(raw)
        norm = normalise(text)
        if _ROOT_WORD in words and self.root_rank is None and _ROOT_CAUSE in norm:
            newline = chunk.find(b"\n", start)
            self.root_lines_left = ROOT_BLOCK_LINES
            self._root_block(chunk, len(chunk) if newline < 0 else newline + 1)
        found = _RANK.match(norm)
        rank = int(found.group(1)) if found else None
        tried = sorted(
            {sig for word in words if word != _ROOT_WORD for sig in self.by_anchor.get(word, ())},
            key=lambda sig: sig.order,
        )
        for sig in tried:
            if matches(list(sig.parts), norm):
                _record(
                    self.candidates,
                    self.index,
                    sig,
                    Hit(line, text.strip(" \t\f\v")[:500], sig.text, rank, sig.context),
                )

    def _root_block(self, chunk: bytes, pos: int) -> None:
        """Read the lines after torchrun's "Root Cause" header for `rank : N`."""
        while self.root_lines_left and pos < len(chunk):
            end = chunk.find(b"\n", pos)
            end = len(chunk) if end < 0 else end
            self.root_lines_left -= 1
            found = _ROOT_RANK.match(normalise(_decode(chunk[pos:end]).replace("\r", " ")))
            if found:
                self.root_rank, self.root_lines_left = int(found.group(1)), 0
            pos = end + 1


def scan(index: Index, stream: BinaryIO) -> tuple[dict[str, Candidate], int | None]:
    """Match every signature against every segment; return candidates and torchrun's root rank."""
    scanner = _Scanner(index)
    for chunk in _chunks(stream):
        scanner.feed(chunk)
    return scanner.candidates, scanner.root_rank


def _record(candidates: dict[str, Candidate], index: Index, sig: Signature, hit: Hit) -> None:
    entry = index.entries[sig.entry]
    cand = candidates.setdefault(sig.entry, Candidate(sig.entry, entry["title"], entry["url"]))
    if not sig.context:
        cand.primary = True
    if sig.text not in cand.matched:
        cand.matched.add(sig.text)
        cand.score += sig.weight
        if len(cand.hits) < MAX_EVIDENCE:
            cand.hits.append(hit)


def _has_own_line(cause: Candidate, effect: Candidate) -> bool:
    """A cause explains an effect only with evidence of its own: a primary match on a line where
    the effect matched nothing. (Two entries that share one error line are alternatives, not a
    cause and its collateral damage.)"""
    effect_lines = {h.line for h in effect.hits}
    return any(not h.context and h.line not in effect_lines for h in cause.hits)


def confidence(score: int) -> str:
    return "high" if score >= 15 else "medium" if score >= 8 else "low"


def rank_candidates(
    index: Index, candidates: dict[str, Candidate], root_rank: int | None
) -> list[dict[str, Any]]:
    found = {k: c for k, c in candidates.items() if c.primary}
    results = []
    for cand in found.values():
        causes = [
            other
            for other in found.values()
            if other.id != cand.id
            and cand.id in index.causes.get(other.id, ())
            and _has_own_line(other, cand)
        ]
        cause = max(causes, key=lambda c: (c.score, c.id)) if causes else None
        first = min(h.line for h in cand.hits)
        ranks = [h.rank for h in sorted(cand.hits, key=lambda h: h.line) if h.rank is not None]
        rank = ranks[0] if ranks else None
        from_root = root_rank is not None and root_rank in ranks
        results.append(
            (
                (cause is not None, not from_root, -cand.score, first, cand.id),
                {
                    "id": cand.id,
                    "title": cand.title,
                    "url": cand.url,
                    "score": cand.score,
                    "confidence": confidence(cand.score),
                    "rank": rank,
                    "collateral_of": cause.id if cause else None,
                    "evidence": [
                        {"line": h.line, "text": h.text, "signature": h.signature}
                        for h in sorted(cand.hits, key=lambda h: h.line)
                    ],
                },
            )
        )
    return [item for _, item in sorted(results, key=lambda pair: pair[0])]


def diagnose(index: Index, stream: BinaryIO, top: int | None = None) -> dict[str, Any]:
    candidates, root_rank = scan(index, stream)
    ranked = rank_candidates(index, candidates, root_rank)
    return {"matches": ranked[:top] if top else ranked, "root_rank": root_rank}
