"""The scan: one Aho-Corasick pass over each chunk of the log finds the segments worth a full
match; tracebacks, metric lines and NCCL watchdog timeouts are read on the way."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO, Protocol

import ahocorasick_rs

from ..read.pattern import Slot, Value, normalise
from . import anchors, frames, metrics, watchdog
from .candidates import RANK, Candidate, Hit, record, record_sighting
from .index import Index, Signature

CHUNK_BYTES = 4 * 1024 * 1024
SEGMENT_BYTES = 64 * 1024
ROOT_BLOCK_LINES = 12

_ANSI = re.compile(
    rb"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\n\r]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]"
)
_ROOT_CAUSE = "root cause (first observed failure)"
_ROOT_WORD = "observed"  # every line holding _ROOT_CAUSE holds this word, whatever its spacing
_ROOT_RANK = re.compile(r"^ ?rank ?: ?([0-9]{1,9})(?![0-9])")
# The same on bytes: much faster than str.translate on text that is not ASCII.
LOWER_BYTES = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz")
_BREAK = re.compile(r"[\r\n]")
_NONFINITE_HINT = re.compile(r"nan|inf")  # on ASCII-lower-cased text


def chunks(stream: BinaryIO) -> Iterator[bytes]:
    """The log in pieces that end with a segment break, ANSI removed. A CR is never the last
    byte of a piece unless the log ends there (a CRLF must not be cut in two). A segment longer
    than a chunk keeps only its head: the rest can never match."""
    carry = b""
    while True:
        chunk = stream.read(CHUNK_BYTES)
        if not chunk:
            if carry:
                yield strip_ansi(carry)
            return
        data = carry + chunk
        cut = data.rfind(b"\n")
        if cut < 0:
            cut = data.rfind(b"\r", 0, len(data) - 1)
        if cut < 0:
            carry = data[: SEGMENT_BYTES + 1]
            continue
        carry = data[cut + 1 :]
        yield strip_ansi(data[: cut + 1])


def strip_ansi(data: bytes) -> bytes:
    return _ANSI.sub(b"", data) if b"\x1b" in data else data


def _decode(segment: str) -> str:
    """A segment held as latin-1 text (one char per byte), cut and decoded as UTF-8."""
    return segment[:SEGMENT_BYTES].encode("latin-1").decode("utf-8", errors="replace")


@dataclass
class _Segment:
    text: str  # the raw bytes as latin-1 text
    line: int

    @property
    def decoded(self) -> str:
        return _decode(self.text)


PRUNE_MATCHED = True  # drop anchors whose signatures all matched (tests compare with False)


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    """`re.compile` with no bound on the cache: the guards outnumber `re`'s own cache."""
    return re.compile(pattern)


class Scanner:
    """Finds candidate segments with one Aho-Corasick pass over each chunk (the anchors), then
    runs the full match only on those segments and, for wrapped lines, their neighbours."""

    def __init__(self, index: Index, metric_series: frozenset[str] = metrics.ALL_SERIES) -> None:
        self.index = index
        self.by_anchor: dict[str, list[Signature]] = {}
        for sig in index.signatures:
            self.by_anchor.setdefault(sig.anchor.decode("latin-1"), []).append(sig)
        # Only a signature's first match counts, so an anchor whose signatures have all matched
        # is dropped from the automaton: a busy log stops paying for lines it cannot change.
        self.unmatched = {word: len(sigs) for word, sigs in self.by_anchor.items()}
        self.matched: set[int] = set()  # Signature.order of every signature that has matched
        self.stale = False
        self.root_rank: int | None = None
        # Per anchor word, what must follow it for one of its signatures to match there; a word
        # with a signature that needs nothing more has no guard, nor has torchrun's root word.
        # The source only: a guard is compiled when its word is first found (_compiled), since
        # compiling all of them took longer than scanning 20 MB.
        self.guards: dict[str, str] = {}
        # Guarded anchors that fill ordinary logs (`loss`, `reserved`: anchors.COMMON_WORDS) are
        # found by one regular expression each, the word then its guard, which scans in C; the
        # automaton would hand every one of them to the Python loop in _hit_segments.
        self.scanned: dict[str, re.Pattern[str]] = {}
        for word, sigs in self.by_anchor.items():
            if word != _ROOT_WORD and all(sig.guard for sig in sigs):
                guard = "|".join(sorted({f"(?:{sig.guard})" for sig in sigs}))
                self.guards[word] = guard
                if word in anchors.COMMON_WORDS and not _overlaps_itself(word):
                    self.scanned[word] = _compiled(f"{re.escape(word)}(?={guard})")
        self.automaton = self._automaton()
        self.tokens = [sig.tokens for sig in index.signatures]
        # A `{nonfinite}` value is `nan` or `inf` in some spelling: a line with neither cannot
        # match, which spares the full match on every ordinary `loss: 0.5` line.
        self.nonfinite = [
            any(isinstance(t, Slot) and t.kind == "nonfinite" for p in sig.compiled for t in p)
            for sig in index.signatures
        ]
        self.candidates: dict[str, Candidate] = {}
        # (the metric series it does not read, another process reads: beside.py)
        self.metrics = metrics.Reader(metric_series) if index.signals else None
        self.tracebacks = frames.Reader() if index.raised else None
        self.raised_matched: set[int] = set()  # frames.Rule.order of every rule that has matched
        self.timeouts: list[watchdog.Timeout] = []  # NCCL watchdog timeouts, for their ranks
        self.tagged: set[int] = set()  # the ranks of torchrun's `[rankN]:` tags
        self.root_lines_left = 0
        self.line = 1  # the line the next chunk starts on
        self.tail: _Segment | None = None  # the last segment of the previous chunk
        # A hit segment that ended a chunk waits for its next segment:
        # (segment, words, prev, whether the break after it held a line feed).
        self.pending: tuple[_Segment, set[str], _Segment | None, bool] | None = None

    def _automaton(self) -> tuple[ahocorasick_rs.BytesAhoCorasick, list[str]] | None:
        """An automaton of the anchors still worth finding, or None when none is left."""
        live = [
            word
            for word, left in self.unmatched.items()
            if (left or not PRUNE_MATCHED) and word not in self.scanned
        ]
        if self.root_rank is None:
            live.append(_ROOT_WORD)
        if not live:
            return None
        return ahocorasick_rs.BytesAhoCorasick([word.encode("latin-1") for word in live]), live

    def feed(self, chunk: bytes) -> None:
        if self.stale:
            self.automaton, self.stale = self._automaton(), False
        text = chunk.decode("latin-1")
        if self.root_lines_left:
            self._root_block(text, 0)
        if self.pending is not None:
            seg, words, prev, newline = self.pending
            self.pending = None
            end = _segment_end(text, 0)
            root_pos = 0 if newline else _after_newline(text, 0)
            self._match(seg, words, prev, _Segment(text[:end], self.line), text, root_pos)
        low_bytes = chunk.translate(LOWER_BYTES)
        low = low_bytes.decode("latin-1")
        if self.metrics is not None:
            self.metrics.feed(text, low, self.line)
        room = watchdog.MAX_TIMEOUTS - len(self.timeouts)
        self.timeouts += watchdog.read(text, low, self.line, room)
        self.tagged |= watchdog.tagged_ranks(low_bytes)
        if self.tracebacks is not None:
            self.tracebacks.feed(text, self.line)
            self._raised()
        hits = self._hit_segments(text, low, low_bytes)
        for i, (start, end, line, words) in enumerate(hits):
            prev = self._previous(text, start, line, hits[i - 1][0] if i else 0)
            after = end + _separator_length(text, end)
            seg = _Segment(text[start:end], line)
            if after >= len(text):
                self.pending = (seg, words, prev, "\n" in text[end:after])
                continue
            following = _Segment(
                text[after : _segment_end(text, after)], line + text.count("\n", end, after)
            )
            self._match(seg, words, prev, following, text, _after_newline(text, start))
        last_end = len(text) - _separator_before(text, len(text))
        lo = hits[-1][0] if hits else 0
        start = _segment_start(text, lo, last_end)
        self.line += text.count("\n")
        self.tail = _Segment(text[start:last_end], self.line - text.count("\n", start))

    def finish(self, other: metrics.Part | None = None) -> None:
        """The end of the log; `other`: what another process read of the metric series this
        scanner does not read."""
        if self.pending is not None:
            seg, words, prev, _ = self.pending
            self.pending = None
            self._match(seg, words, prev, None, "", -1)
        parts = [] if self.metrics is None else [self.metrics.part()]
        self.metrics = None
        for sighting in metrics.combine(parts + ([other] if other else [])):
            for entry in self.index.signals.get(sighting.signal, ()):
                record_sighting(self.candidates, self.index, entry, sighting)

    def _hit_segments(
        self, text: str, low: str, low_bytes: bytes
    ) -> list[tuple[int, int, int, set[str]]]:
        """(start, end, line, anchor words) of each segment holding an anchor, in order; `low`
        is `text` with ASCII letters lower-cased, `low_bytes` the same as bytes."""
        hits: list[tuple[int, int, int, set[str]]] = []
        seg_end, counted_to, line = -1, 0, self.line
        for start, word in self._anchors_found(low, low_bytes):
            if start >= seg_end:
                lo = hits[-1][0] if hits else 0
                seg_start = _segment_start(text, lo, start)
                line += text.count("\n", counted_to, seg_start)
                counted_to = seg_start
                seg_end = _segment_end(text, start)
                hits.append((seg_start, seg_end, line, set()))
            hits[-1][3].add(word)
        return hits

    def _anchors_found(self, low: str, low_bytes: bytes) -> list[tuple[int, str]]:
        """(start, word) of each anchor in `low` whose guard holds there, by position (the
        automaton reports by end, the same order across lines, and a segment is a line)."""
        # A guard cannot see into the next chunk: in the last segment, where a wrapped phrase may
        # go on there, every anchor counts.
        tail_from = _segment_start(low, 0, len(low) - _separator_before(low, len(low)))
        found: list[tuple[int, str]] = []
        if self.automaton is not None:
            automaton, words = self.automaton
            guards = self.guards
            # The search runs in Rust over the bytes; only its few hits come back to Python.
            for which, start, end in automaton.find_matches_as_indexes(low_bytes, overlapping=True):
                word = words[which]
                guard = guards.get(word)
                if (
                    guard is not None
                    and start < tail_from
                    and _compiled(guard).match(low, end) is None
                ):
                    continue
                found.append((start, word))
        more = len(found)
        for word, pattern in self.scanned.items():
            if PRUNE_MATCHED and not self.unmatched[word]:
                continue
            found += [(m.start(), word) for m in pattern.finditer(low) if m.start() < tail_from]
            at = low.find(word, tail_from)
            while at >= 0:
                found.append((at, word))
                at = low.find(word, at + 1)
        if len(found) > more:
            found.sort()
        return found

    def _previous(self, text: str, start: int, line: int, lo: int) -> _Segment | None:
        if start == 0:
            return self.tail
        sep = _separator_before(text, start)
        prev_start = _segment_start(text, lo, start - sep)
        return _Segment(text[prev_start : start - sep], line - text.count("\n", start - sep, start))

    def _match(
        self,
        seg: _Segment,
        words: set[str],
        prev: _Segment | None,
        following: _Segment | None,
        text: str,
        root_pos: int,
    ) -> None:
        """Match the signatures of `words` around `seg`; `root_pos` is where the line after
        `seg` starts in `text`, for torchrun's root-cause block (-1: not in `text`)."""
        if _ROOT_WORD in words and self.root_rank is None and _ROOT_CAUSE in normalise(seg.decoded):
            self.root_lines_left = ROOT_BLOCK_LINES
            if root_pos >= 0:
                self._root_block(text, root_pos)
        # A cheap necessary test first: every word of the signature somewhere in the segment or
        # its neighbours (the full match normalises them and may join them).
        nearby = "\n".join(s.text for s in (prev, seg, following) if s is not None)
        nearby = nearby.encode("latin-1").translate(LOWER_BYTES).decode("latin-1")
        tried = sorted(
            {
                sig
                for word in words
                for sig in self.by_anchor.get(word, ())
                if sig.order not in self.matched
                and all(token in nearby for token in self.tokens[sig.order])
                and (not self.nonfinite[sig.order] or _NONFINITE_HINT.search(nearby) is not None)
            },
            key=lambda sig: sig.order,
        )
        if not tried:
            return
        around = _Around(seg, prev, following)
        for sig in tried:
            hit = _match_at(sig, around)
            if hit is not None:
                hit.order = sig.order
                record(self.candidates, self.index, sig.entry, sig.text, not sig.context, hit)
                self.matched.add(sig.order)
                word = sig.anchor.decode("latin-1")
                self.unmatched[word] -= 1
                self.stale = self.stale or not self.unmatched[word]

    def _raised(self) -> None:
        """Match the tracebacks read so far against the rules that have not matched yet."""
        assert self.tracebacks is not None
        offset = len(self.index.signatures)  # a rule's hits sort after signatures on a line
        for raised in self.tracebacks.take():
            for rule in self.index.raised:
                if rule.order in self.raised_matched or not rule.matches(
                    raised.kind, raised.frames
                ):
                    continue
                self.raised_matched.add(rule.order)
                text = _decode(raised.text)
                found = RANK.match(normalise(text))
                rank = int(found.group(1)) if found else None
                hit = Hit(raised.line, text.strip(" \t\f\v")[:500], rule.label, rank, False)
                hit.weight, hit.order = rule.weight, offset + rule.order
                record(self.candidates, self.index, rule.entry, rule.label, True, hit)

    def _root_block(self, text: str, pos: int) -> None:
        """Read the lines after torchrun's "Root Cause" header for `rank : N`."""
        while self.root_lines_left and pos < len(text):
            end = text.find("\n", pos)
            end = len(text) if end < 0 else end
            self.root_lines_left -= 1
            found = _ROOT_RANK.match(normalise(_decode(text[pos:end]).replace("\r", " ")))
            if found:
                self.root_rank, self.root_lines_left = int(found.group(1)), 0
                self.stale = True
            pos = end + 1


class _Around:
    """A hit segment and its neighbours, each decoded and normalised at most once."""

    def __init__(self, seg: _Segment, prev: _Segment | None, following: _Segment | None):
        self.seg, self.prev, self.following = seg, prev, following
        self.decoded = seg.decoded
        self.norm = normalise(self.decoded)
        self._cache: dict[str, str] = {}

    def get(self, key: str) -> str:
        if key not in self._cache:
            prev = self.prev.decoded if self.prev else ""
            nxt = self.following.decoded if self.following else ""
            self._cache[key] = {
                "prev": normalise(prev),
                "with_prev": normalise(prev + " " + self.decoded),
                "next": normalise(nxt),
                "with_next": normalise(self.decoded + " " + nxt),
            }[key]
        return self._cache[key]


def _match_at(sig: Signature, around: _Around) -> Hit | None:
    """Where `sig` matches around a segment that holds its anchor: in the segment itself; across
    the break from the previous segment (a wrapped line, reported at the previous one); or across
    the break into the next segment, unless the next segment matches on its own."""
    seg, prev, following = around.seg, around.prev, around.following
    values = sig.match(around.norm)
    if values is not None:
        return _hit(sig, seg.line, around.decoded, around.norm, values)
    if prev is not None:
        values = sig.match(around.get("with_prev"))
        if values is not None:
            text = prev.decoded + " " + around.decoded
            return _hit(sig, prev.line, text, around.get("prev"), values)
    if following is not None:
        values = sig.match(around.get("with_next"))
        if values is not None and sig.match(around.get("next")) is None:
            text = around.decoded + " " + following.decoded
            return _hit(sig, seg.line, text, around.norm, values)
    return None


def _hit(sig: Signature, line: int, text: str, rank_text: str, values: dict[str, Value]) -> Hit:
    found = RANK.match(rank_text)
    return Hit(
        line,
        text.strip(" \t\f\v")[:500],
        sig.text,
        int(found.group(1)) if found else None,
        sig.context,
        sig.weight,
        sig.symptom,
        {name: value.text for name, value in values.items()},
    )


def _after_newline(text: str, pos: int) -> int:
    """Where the line after the one holding `pos` starts, or -1 when it is not in `text`."""
    newline = text.find("\n", pos)
    return newline + 1 if newline >= 0 else -1


def _segment_end(text: str, pos: int) -> int:
    found = _BREAK.search(text, pos)
    return found.start() if found else len(text)


def _overlaps_itself(word: str) -> bool:
    """Whether two places of `word` can overlap (`aa`): a regular expression search, which
    resumes after each match, would miss the second."""
    return any(word[:n] == word[-n:] for n in range(1, len(word)))


def _segment_start(text: str, lo: int, pos: int) -> int:
    """Start of the segment that holds `pos`, given `lo`, the start of an earlier segment (the
    search never looks further back than `lo`, which keeps the scan linear)."""
    return max(text.rfind("\n", lo, pos), text.rfind("\r", lo, pos), lo - 1) + 1


def _separator_length(text: str, end: int) -> int:
    return 2 if text.startswith("\r\n", end) else 1


def _separator_before(text: str, start: int) -> int:
    """Length of the break just before `start` (0 at the start of the text)."""
    if start >= 2 and text[start - 2 : start] == "\r\n":
        return 2
    return 1 if start >= 1 and text[start - 1] in "\r\n" else 0


def scan(index: Index, stream: BinaryIO, other: Other | None = None) -> Scanner:
    """Match every signature against every segment: the finished scanner holds the candidates,
    torchrun's root rank and the watchdog timeouts. `other`, when given, reads some of the
    log's metric series elsewhere (beside.py) and answers for them once the scan is done."""
    mine = metrics.ALL_SERIES - other.series if other else metrics.ALL_SERIES
    scanner = Scanner(index, mine)
    for chunk in chunks(stream):
        scanner.feed(chunk)
    scanner.finish(other.part() if other else None)
    return scanner


class Other(Protocol):
    """A reader of some metric series of the same log, elsewhere."""

    series: frozenset[str]

    def part(self) -> metrics.Part: ...
