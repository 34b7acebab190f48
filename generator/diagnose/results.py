"""From a scan's candidates to the diagnosis: which entries, in which order, with what
confidence, and which follow from another (collateral) or read the same lines (also possible)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from . import watchdog
from .beside import beside
from .candidates import Candidate
from .index import Index
from .scanner import SEGMENT_BYTES, Scanner, scan, strip_ansi


def _has_own_line(cause: Candidate, effect: Candidate) -> bool:
    """A cause explains an effect only with evidence of its own: a primary match on a line where
    the effect matched nothing. (Two entries that share one error line are alternatives, not a
    cause and its collateral damage.)"""
    effect_lines = {h.line for h in effect.hits}
    return any(not h.context and h.line not in effect_lines for h in cause.hits)


LEVELS = ("low", "medium", "high")


def confidence(score: int) -> str:
    return "high" if score >= 15 else "medium" if score >= 8 else "low"


@dataclass(frozen=True)
class Evidence:
    """A log line that matched one of the entry's signatures."""

    line: int
    text: str
    signature: str


@dataclass(frozen=True)
class SymptomShown:
    """The symptom row of the entry the log shows most strongly, with the values read from it."""

    symptom: str
    cause: str
    values: dict[str, str]  # slot name -> the text the log holds there
    fix: str | None  # the entry's fix step for this row's cause, to lead with


@dataclass(frozen=True)
class Match:
    """One entry the log points to (schema/diagnose.schema.json: one item of `matches`)."""

    id: str
    title: str
    url: str
    score: int
    confidence: str  # low, medium or high
    rank: int | None  # the distributed rank its first evidence came from
    collateral_of: str | None  # the entry whose failure this one follows from
    also_possible_for: str | None  # the stronger result that reads the same lines
    symptom: SymptomShown | None
    readings: tuple[str, ...]  # what the log's numbers show (metric signals), one sentence each
    ranks: str | None  # which ranks timed out on which collective (watchdog.py), or None
    evidence: tuple[Evidence, ...]


@dataclass(frozen=True)
class Diagnosis:
    """The diagnosis of a log: its matches, best first, and torchrun's root-cause rank."""

    matches: tuple[Match, ...]
    root_rank: int | None

    def to_json(self) -> dict[str, Any]:
        """As `encyclopedia diagnose --json` prints it (schema/diagnose.schema.json), and as
        the diagnose page's matcher returns it: lists, not tuples."""
        return {
            "matches": [
                dataclasses.asdict(m)
                | {
                    "readings": list(m.readings),
                    "evidence": [dataclasses.asdict(e) for e in m.evidence],
                }
                for m in self.matches
            ],
            "root_rank": self.root_rank,
        }


def _symptom(cand: Candidate) -> SymptomShown | None:
    """The symptom row the log shows most strongly (highest weight, then earliest line)."""
    shown = [h for h in cand.hits if h.symptom is not None]
    if not shown:
        return None
    best = min(shown, key=lambda h: (-h.weight, h.line))
    assert best.symptom is not None
    return SymptomShown(
        best.symptom[0], best.symptom[1], dict(best.values), best.symptom[2] or None
    )


def _order(index: Index, found: dict[str, Candidate], root_rank: int | None) -> list[Any]:
    """Initiating failures before collateral ones, then confidence, then evidence from
    torchrun's root-cause rank, printed text before numbers alone, score, earliest evidence and
    id."""
    keyed = []
    for cand in found.values():
        causes = [
            other
            for other in found.values()
            if other.id != cand.id
            and cand.id in index.causes.get(other.id, ())
            and _has_own_line(other, cand)
        ]
        cause = max(causes, key=lambda c: (c.score, c.id)) if causes else None
        ranks = [h.rank for h in sorted(cand.hits, key=lambda h: h.line) if h.rank is not None]
        from_root = root_rank is not None and root_rank in ranks
        level = LEVELS.index(confidence(cand.score))
        first = min(h.line for h in cand.hits)
        # At one confidence, a match on printed text goes before one read from numbers alone.
        numbers_only = all(h.signal for h in cand.hits)
        # Confidence before torchrun's root rank: a weak reading of the rank torchrun names does
        # not outrank a confident first-hand error on another rank.
        key = (cause is not None, -level, not from_root, numbers_only, -cand.score, first, cand.id)
        keyed.append((key, cand, cause, ranks[0] if ranks else None))
    return sorted(keyed, key=lambda item: item[0])


def _fold_host(
    cand: Candidate, found: dict[str, Candidate], hosts: list[tuple[Candidate, Match]]
) -> Match | None:
    """The result `cand` folds under as "also possible": when stronger candidates already hold
    each of its evidence lines, it is only another reading of those lines; it goes under the
    first initiating result listed so far that it shares a line with."""
    lines = {h.line for h in cand.hits}
    if not lines <= {h.line for c in found.values() if c.score > cand.score for h in c.hits}:
        return None
    for other, result in hosts:
        if other.score > cand.score and lines & {h.line for h in other.hits}:
            return result
    return None


def rank_candidates(
    index: Index,
    candidates: dict[str, Candidate],
    root_rank: int | None,
    timeouts: Sequence[watchdog.Timeout] = (),
    tagged: frozenset[int] = frozenset(),
) -> list[Match]:
    found = {k: c for k, c in candidates.items() if c.primary}
    shown = tagged | ({root_rank} if root_rank is not None else set())
    ranks = watchdog.summary(list(timeouts), set(shown)) if timeouts else None
    timeout_lines = {t.line for t in timeouts}
    results: list[Match] = []
    hosts: list[tuple[Candidate, Match]] = []  # initiating, not folded
    cap = len(LEVELS) - 1
    for _, cand, cause, rank in _order(index, found, root_rank):
        # A result is never labelled more confident than one listed above it (folded
        # alternatives are not listed: they set no bound).
        host = _fold_host(cand, found, hosts) if cause is None else None
        level = min(LEVELS.index(confidence(cand.score)), cap)
        cap = cap if host else level
        said = None
        if ranks and any(h.line in timeout_lines for h in cand.hits):
            said, ranks = ranks, None  # said once, by the first such result
        result = Match(
            cand.id,
            cand.title,
            cand.url,
            cand.score,
            LEVELS[level],
            rank,
            cause.id if cause else None,
            host.id if host else None,
            _symptom(cand),
            tuple(cand.readings),
            said,
            tuple(
                Evidence(h.line, h.text, h.signature)
                for h in sorted(cand.hits, key=lambda h: h.line)
            ),
        )
        if cause is None and host is None:
            hosts.append((cand, result))
        results.append(result)
    # Each folded alternative right after the result it belongs to (and its earlier ones).
    placed = [r for r in results if r.also_possible_for is None]
    for folded in (r for r in results if r.also_possible_for is not None):
        at = next(i for i, r in enumerate(placed) if r.id == folded.also_possible_for)
        while at + 1 < len(placed) and placed[at + 1].also_possible_for == folded.also_possible_for:
            at += 1
        placed.insert(at + 1, folded)
    return placed


def result(index: Index, scanner: Scanner, top: int | None) -> Diagnosis:
    """The diagnosis of a scanned log, at most `top` matches."""
    ranked = rank_candidates(
        index,
        scanner.candidates,
        scanner.root_rank,
        scanner.timeouts,
        frozenset(scanner.tagged),
    )
    return Diagnosis(tuple(ranked[:top] if top else ranked), scanner.root_rank)


def diagnose(
    index: Index, stream: BinaryIO, top: int | None = None, path: Path | None = None
) -> Diagnosis:
    """The diagnosis of the log `stream` reads. `path`: the file it reads, whose metric lines a
    second process may read beside the scan (beside.py); the diagnosis is the same."""
    other = beside(path) if index.signals else None
    return result(index, scan(index, stream, other), top)


class Streaming:
    """Diagnose output as it arrives from several streams (a command's stdout and stderr):
    each stream's complete lines are matched as one log, in arrival order. Memory stays bounded:
    a stream's unfinished line keeps at most SEGMENT_BYTES (the rest could never match)."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self.scanner = Scanner(index)
        self.partial: dict[str, bytearray] = {}

    def push(self, stream: str, data: bytes) -> None:
        buf = self.partial.setdefault(stream, bytearray())
        room = SEGMENT_BYTES + 1 - len(buf)
        cut = data.rfind(b"\n")
        if cut < 0:
            buf += data[: max(room, 0)]
            # A progress bar redraws with CR only: its segments can be matched at once.
            cr = buf.rfind(b"\r", 0, len(buf) - 1)
            if cr >= 0:
                self._feed(bytes(buf[: cr + 1]))
                del buf[: cr + 1]
            return
        self._feed(bytes(buf) + data[: cut + 1])
        buf.clear()
        buf += data[cut + 1 : cut + 1 + SEGMENT_BYTES + 1]

    def _feed(self, chunk: bytes) -> None:
        if chunk:
            self.scanner.feed(strip_ansi(chunk))

    def result(self, top: int | None = None) -> Diagnosis:
        for buf in self.partial.values():
            if buf:
                self._feed(bytes(buf) + b"\n")
                buf.clear()
        self.scanner.finish()
        return result(self.index, self.scanner, top)
