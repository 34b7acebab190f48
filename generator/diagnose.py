"""Diagnose a log against the signature index: the Python half of one matcher semantics whose
JavaScript half is site_assets/js/diagnose-core.js. Both pass tests/diagnose_vectors/.

Semantics (both implementations):
- ANSI escape sequences are removed first. The log is split into segments at each CRLF, LF or
  CR (progress bars redraw with CR; a CRLF is one break). Line numbers count LFs, from 1.
- A segment longer than SEGMENT_BYTES bytes of UTF-8 is cut there (bounded memory).
- Text is normalised by lower-casing ASCII letters only and turning each run of spaces, tabs,
  form feeds and vertical tabs into one space. A signature is normalised the same way (and
  trimmed) and split on `*` into literal pieces; it matches a text when the pieces occur in it in
  order. No other character is special, so matching is linear in the log size.
- A signature matches at a segment when it matches the segment; or the segment joined by a space
  to the next one (a wrapped line) while not matching that next one alone.
- An entry is a candidate when one of its primary signatures matches. Its score is the sum of
  the weights of its distinct matched signatures (primary and context); its evidence is the
  first match of each, at most MAX_EVIDENCE: the earliest by line, matches on one line in the
  index's order of signatures (never in the order the scan happens to find them, which depends
  on the anchor each twin chose).
- A candidate that another candidate causes (`leads-to` / `often-caused-by`) is collateral,
  when that cause has a primary match on a line of its own.
- Tracebacks (frames.py) that an entry's `raised` rule names (the exception and a frame it
  passed through) make a primary match of that entry, with the rule's weight, its evidence the
  exception line; hits on one line sort after the signatures' hits.
- Metric lines (metrics.py) give sightings; each makes a primary match of the entries that
  list its signal, scored by metrics.SIGNAL_SCORES, its evidence the lines it rests on.
- Order: initiating before collateral, then confidence, then evidence from the rank torchrun
  names as the root cause first, then matches on printed text before those read from numbers
  alone, then higher score, then earlier first evidence, then id.

This module streams: memory is bounded by CHUNK_BYTES plus one segment, whatever the log size.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import ahocorasick_rs

from . import anchors, frames, metrics, watchdog
from .pattern import Condition, Piece, Slot, Value, compile_pieces, literal_view, match

CHUNK_BYTES = 4 * 1024 * 1024
SEGMENT_BYTES = 64 * 1024
MAX_EVIDENCE = 5
ROOT_BLOCK_LINES = 12

_ANSI = re.compile(
    rb"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\n\r]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]"
)
_SPACES = re.compile(r"[ \t\f\v]+")
_RANK = re.compile(r"^ ?\[(?:rank ?|default)([0-9]{1,9})\]:")  # a rank fits in 9 digits
_ROOT_CAUSE = "root cause (first observed failure)"
_ROOT_WORD = "observed"  # every line holding _ROOT_CAUSE holds this word, whatever its spacing
_ROOT_RANK = re.compile(r"^ ?rank ?: ?([0-9]{1,9})(?![0-9])")
_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
# The same on bytes: much faster than str.translate on text that is not ASCII.
_LOWER_BYTES = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz")
_BREAK = re.compile(r"[\r\n]")
_NONFINITE_HINT = re.compile(r"nan|inf")  # on ASCII-lower-cased text


def ascii_lower(text: str) -> str:
    return text.translate(_LOWER)


def normalise(text: str) -> str:
    return _SPACES.sub(" ", ascii_lower(text))


def pieces(signature: str) -> list[str]:
    """The literal pieces of a signature, normalised, in order (a placeholder splits pieces
    like `*`: its text is not in the log)."""
    return [p for p in normalise(literal_view(signature)).strip(" ").split("*") if p]


@functools.lru_cache(maxsize=100_000)
def compiled(signature: str) -> tuple[Piece, ...]:
    """The signature as the matcher runs it: literal text and placeholders (pattern.py)."""
    return compile_pieces(normalise(signature).strip(" "))


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


@dataclass
class Hit:
    line: int
    text: str
    signature: str
    rank: int | None
    context: bool
    weight: int = 0
    symptom: tuple[str, str, str] | None = None
    values: dict[str, str] = field(default_factory=dict)
    signal: bool = False  # a metric sighting's line (metrics.py), not a signature's match
    order: int = 0  # the signature's place in the index: the tie-break among hits on one line


@dataclass
class Candidate:
    id: str
    title: str
    url: str
    score: int = 0
    primary: bool = False
    hits: list[Hit] = field(default_factory=list)
    matched: set[str] = field(default_factory=set)
    readings: list[str] = field(default_factory=list)  # metric sightings' descriptions


@dataclass(frozen=True)
class Index:
    """The signature index as exported in api/signatures.json."""

    entries: dict[str, dict[str, Any]]
    signatures: tuple[Signature, ...]
    causes: dict[str, frozenset[str]]
    signals: dict[str, tuple[str, ...]] = field(default_factory=dict)  # signal -> entry ids
    raised: tuple[frames.Rule, ...] = ()  # the entries' `raised` rules (frames.py)

    @classmethod
    def from_export(cls, data: list[dict[str, Any]]) -> Index:
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


def _chunks(stream: BinaryIO) -> Iterator[bytes]:
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


class _Scanner:
    """Finds candidate segments with one Aho-Corasick pass over each chunk (the anchors), then
    runs the full match only on those segments and, for wrapped lines, their neighbours."""

    def __init__(self, index: Index) -> None:
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
        self.metrics = metrics.Reader() if index.signals else None
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
        low_bytes = chunk.translate(_LOWER_BYTES)
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

    def finish(self) -> None:
        if self.pending is not None:
            seg, words, prev, _ = self.pending
            self.pending = None
            self._match(seg, words, prev, None, "", -1)
        if self.metrics is not None:
            for sighting in self.metrics.sightings():
                for entry in self.index.signals.get(sighting.signal, ()):
                    _record_sighting(self.candidates, self.index, entry, sighting)
            self.metrics = None

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
        nearby = nearby.encode("latin-1").translate(_LOWER_BYTES).decode("latin-1")
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
                _record(self.candidates, self.index, sig.entry, sig.text, not sig.context, hit)
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
                found = _RANK.match(normalise(text))
                rank = int(found.group(1)) if found else None
                hit = Hit(raised.line, text.strip(" \t\f\v")[:500], rule.label, rank, False)
                hit.weight, hit.order = rule.weight, offset + rule.order
                _record(self.candidates, self.index, rule.entry, rule.label, True, hit)

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
    found = _RANK.match(rank_text)
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


def scan(index: Index, stream: BinaryIO) -> _Scanner:
    """Match every signature against every segment: the finished scanner holds the candidates,
    torchrun's root rank and the watchdog timeouts."""
    scanner = _Scanner(index)
    for chunk in _chunks(stream):
        scanner.feed(chunk)
    scanner.finish()
    return scanner


def _candidate(candidates: dict[str, Candidate], index: Index, entry: str) -> Candidate:
    if entry not in candidates:
        data = index.entries[entry]
        candidates[entry] = Candidate(entry, data["title"], data["url"])
    return candidates[entry]


def _record(
    candidates: dict[str, Candidate], index: Index, entry: str, key: str, primary: bool, hit: Hit
) -> None:
    """A match of `entry` by a signature (its text as `key`) or a `raised` rule (its label): it
    counts once, its hit among the earliest by line, ties in the order `hit.order` gives."""
    cand = _candidate(candidates, index, entry)
    cand.primary = cand.primary or primary
    if key not in cand.matched:
        cand.matched.add(key)
        cand.score += hit.weight
        bisect.insort(cand.hits, hit, key=lambda h: (h.line, h.order))
        del cand.hits[MAX_EVIDENCE:]


def _record_sighting(
    candidates: dict[str, Candidate], index: Index, entry: str, sighting: metrics.Sighting
) -> None:
    """A metric sighting as a primary match of `entry`: its description one of the entry's
    readings, and one hit per line it rests on, labelled `signal: NAME`."""
    cand = _candidate(candidates, index, entry)
    label = "signal: " + sighting.signal  # where a signature's text would be
    if label in cand.matched:
        return
    # A signature of the entry that matched the line the reading ends on (a NaN loss line) has
    # already counted that evidence: it is not counted twice.
    last = sighting.lines[-1][0] if sighting.lines else None
    if any(not h.signal and h.line == last for h in cand.hits):
        return
    cand.primary = True
    cand.matched.add(label)
    score = metrics.SIGNAL_SCORES[sighting.signal]
    cand.score += score
    cand.readings.append(sighting.description)
    shown = {h.line for h in cand.hits}
    for line, text in sighting.lines:
        if len(cand.hits) < MAX_EVIDENCE and line not in shown:
            found = _RANK.match(normalise(text))
            rank = int(found.group(1)) if found else None
            hit = Hit(line, text, label, rank, False, score, signal=True)
            cand.hits.append(hit)


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


def result(index: Index, scanner: _Scanner, top: int | None) -> Diagnosis:
    """The diagnosis of a scanned log, at most `top` matches."""
    ranked = rank_candidates(
        index,
        scanner.candidates,
        scanner.root_rank,
        scanner.timeouts,
        frozenset(scanner.tagged),
    )
    return Diagnosis(tuple(ranked[:top] if top else ranked), scanner.root_rank)


def diagnose(index: Index, stream: BinaryIO, top: int | None = None) -> Diagnosis:
    return result(index, scan(index, stream), top)


class Streaming:
    """Diagnose output as it arrives from several streams (a command's stdout and stderr):
    each stream's complete lines are matched as one log, in arrival order. Memory stays bounded:
    a stream's unfinished line keeps at most SEGMENT_BYTES (the rest could never match)."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self.scanner = _Scanner(index)
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
