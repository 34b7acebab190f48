"""Metric lines: failures a log shows only in its numbers (a loss that never moves, a loss that
climbs, a gradient norm or learning rate stuck at 0, GPU memory that rises every step). The
JavaScript half is the "Metric lines" section of site_assets/js/diagnose-core.js; both pass
tests/diagnose_vectors/.

Semantics (both implementations):
- ANSI sequences are removed and the text ASCII-lower-cased, as the matcher does (diagnose.py).
  Each finder in FINDERS has one pattern: its key (`loss`, `grad_norm`, `lr`, `allocated`...)
  at a word start (the character before it, or before a joined prefix such as `train_` in
  `train_loss`, is not a letter, digit, `_`, `/`, `.` or `-`), then an optional quote, `:` or
  `=`, `[` or `tensor(`, and a number (with a unit for memory). Its matches, left to right
  without overlap, are the values of its own series, in order; a memory value needs a unit,
  except an `allocated` or `reserved` count, which is bytes. A loss after the word `val`,
  `eval`, `test`, `dev`, `valid` or `validation` is another run's loss and is not read.
  nvidia-smi's `12345MiB / 81920MiB` gives its first number.
- Each series feeds a detector with bounded state (thresholds below); a detector that fires gives
  a `Sighting`: its signal, a description quoting the values as the log prints them, and the
  lines (line number and text) it rests on.
- An entry lists the signals that point to it (`metric_signals`); diagnose makes each sighting a
  result for those entries, scored by SIGNAL_SCORES.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

# Signal -> what it means (the entry format's documentation and validation use this table).
SIGNALS: dict[str, str] = {
    "loss-flat": (
        "the loss stays within 2% of its first value for most of the run (20+ values), or, from"
        " one of its first 3 values on, within 0.5% of that value or 2% of a chance level ln k"
        " (6+ values)"
    ),
    "loss-flat-at-ln2": (
        "loss-flat at 0.6931, ln 2, in a log that names a preference run's metrics (DPO's loss,"
        " unmoved)"
    ),
    "loss-zero": "the loss is exactly 0 for most of the run from the start (10+ values)",
    "loss-rises": "the loss climbs to 3x and 1.0 above its lowest value so far, no NaN needed",
    "loss-climbs": "the loss rises at each of its last 6 logged values, ending 10% up, no NaN",
    "loss-nonfinite": "the loss turns nan or inf after 3+ finite values (the first such line)",
    "grad-norm-zero": "grad_norm is exactly 0 for 10+ logged values in a row",
    "lr-zero": "the learning rate is exactly 0 for 10+ logged values in a row",
    "memory-grows": "GPU memory in use rises (or free memory falls) at nearly every logged step",
}
# A more specific signal scores higher, so its entry comes first when both fire.
SIGNAL_SCORES: dict[str, int] = {name: 8 for name in SIGNALS} | {"loss-flat-at-ln2": 10}

FLAT_MIN = 20  # values before a flat loss counts
FLAT_SHARE = 0.8  # of the run's loss values, the flat stretch from the start must hold this share
FLAT_BAND = 0.02  # relative to the first value, plus FLAT_SLACK
FLAT_SLACK = 0.001
ZERO_MIN = 10  # values of a zero loss, grad_norm or learning rate
RISE_AFTER = 10  # finite loss values seen before a rise counts
RISE_FACTOR = 3.0
RISE_MARGIN = 1.0
# A loss that settles from (nearly) the start: short logs of a run that learns nothing.
SETTLE_STARTS = 3  # the settled stretch starts at one of the first 3 values (warm-up before it)
SETTLE_MIN = 6  # values in the stretch
SETTLE_BAND = 0.005  # relative to the stretch's first value
CHANCE_BAND = 0.02  # relative to ln k, for a stretch at a chance level
NONFINITE_AFTER = 3  # finite loss values before a non-finite one counts
CLIMB_VALUES = 6  # the last values of the log, each above the one before
CLIMB_GROWTH = 1.1
# A flat ln 2 is DPO's unmoved loss only in a log of a preference run: these words say so (in a
# binary classifier's log it is a chance level like any other).
PAIRWISE_WORDS = ("rewards/", "logps/", "dpo")
MEMORY_MIN = 10  # values in a monotone stretch of memory
MEMORY_STEP_SHARE = 0.8  # of its steps, at least this share strictly rise (or fall, for free)
MEMORY_GROWTH = 1.1  # the stretch ends at least 10% above (or below, for free) its start
# Chance-level losses: ln k for a uniform guess over k classes (2: a pairwise loss such as DPO's;
# the rest are common class counts and tokenizer vocabularies). Written out, so that the Python
# and JavaScript halves compare against the same numbers.
CHANCE: tuple[tuple[int, float, str], ...] = (
    (2, 0.6931471805599453, "0.6931"),
    (10, 2.302585092994046, "2.3026"),
    (100, 4.605170185988092, "4.6052"),
    (1000, 6.907755278982137, "6.9078"),
    (32000, 10.373491181781864, "10.3735"),
    (32768, 10.397207708399179, "10.3972"),
    (50257, 10.82515638, "10.8252"),
    (128256, 11.761783, "11.7618"),
    (151936, 11.931214, "11.9312"),
    (256000, 12.452932, "12.4529"),
)
CHANCE_TOLERANCE = 0.01  # relative
Chance = tuple[int, float, str]  # (k, ln k, ln k as the description prints it)


def _chance(value: float, tolerance: float) -> Chance | None:
    """The chance level nearest `value` within `tolerance` of it (relative), if any."""
    near = [c for c in CHANCE if abs(value - c[1]) <= tolerance * c[1]]
    return min(near, key=lambda c: abs(value - c[1])) if near else None


def _chance_text(chance: Chance) -> str:
    k, _, ln = chance
    return f"; about ln {k} = {ln}, a uniform guess over {k} choices"


_WORD = r"[a-z0-9_/.\-]"
_NUMBER = r"([-+]?(?:nan|inf|(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:e[-+]?[0-9]+)?))"
_UNIT = r"(?:[ \t]?(gib|mib|kib|gb|mb|kb|g|m|bytes))?"
_TAIL = (
    r"""['"]?[ \t]*[:=]?[ \t]*['"]?(?:\[|tensor\()?[ \t]*""" + _NUMBER + _UNIT + r"(?!\.?[a-z0-9_])"
)


def key(
    literal: str,
    rest: str = "",
    joined: tuple[str, ...] = (),
    other_run: tuple[str, ...] = (),
    bare: bool = True,
) -> str:
    """A key's pattern: `literal` at a word start (unless not `bare`) or after one of the
    `joined` prefixes at a word start, not right after one of the `other_run` words, then `rest`
    and the value. The checks are lookbehinds after the literal, so that the search runs as fast
    as a plain substring search for the literal (the same source runs in JavaScript)."""
    starts = [f"(?<!{_WORD}{literal})"] if bare else []
    starts += [f"(?<={p}{literal})(?<!{_WORD}{p}{literal})" for p in joined]
    not_other = "".join(f"(?!(?<={w}{literal})(?<!{_WORD}{w}{literal}))" for w in other_run)
    return f"{literal}(?:{'|'.join(starts)}){not_other}{rest}{_TAIL}"


@dataclass(frozen=True)
class Finder:
    series: str
    pattern: str  # on ASCII-lower-cased text; group 1 the number, group 2 its unit
    unit: str  # "none": a plain number; "required": memory with a unit; "bytes": none is bytes


_OTHER_RUN = ("val ", "valid ", "validation ", "eval ", "test ", "dev ")
FINDERS: tuple[Finder, ...] = (
    Finder(
        "loss",
        key("loss", joined=("train_", "train/", "training_"), other_run=_OTHER_RUN),
        "none",
    ),
    # A validation loss tells only when it sits at a chance level (it may rise in a healthy
    # run that overfits, and settle in one that has converged).
    Finder(
        "val_loss",
        key(
            "loss",
            joined=(*_OTHER_RUN, "val_", "val/", "valid_", "validation_", "eval_", "eval/"),
            bare=False,
        ),
        "none",
    ),
    Finder("xent", key("xent"), "none"),  # OpenNMT-py's cross-entropy
    Finder("grad_norm", key("grad", r"(?:ient)?[_ ]norm"), "none"),
    Finder("lr", key("lr"), "none"),
    Finder("learning_rate", key("learning", "[_ ]rate"), "none"),
    Finder("memory", key("mem", r"(?:ory)?(?:[_ ](?:used|usage))?", ("gpu_", "cuda_")), "required"),
    Finder("allocated", key("allocated"), "bytes"),
    Finder("reserved", key("reserved"), "bytes"),
    Finder("free", key("free", r"(?:[_ ]mem(?:ory)?)?"), "required"),
    Finder(
        "smi",
        rf"(?<!{_WORD})([0-9]+)[ \t]?mib[ \t]*/[ \t]*[0-9]+[ \t]?mib(?![a-z0-9_])()",
        "smi",
    ),
)
# nvidia-smi's pattern starts with a digit, slow to search for: only chunks that hold its
# `MiB /` are searched.
_SMI_GATE = re.compile(r"mib[ \t]*/")
_BREAK = re.compile(r"[\r\n]")
_COMPILED = {f.series: re.compile(f.pattern) for f in FINDERS}
_UNIT_BYTES = {
    "gib": 2**30, "gb": 2**30, "g": 2**30,
    "mib": 2**20, "mb": 2**20, "m": 2**20,
    "kib": 2**10, "kb": 2**10, "bytes": 1,
}  # fmt: skip


def _values(finder: Finder, low: str) -> list[float]:
    """The finder's values in a chunk, in order (the same as `_matches` enumerates)."""
    found: list[tuple[str, str]] = _COMPILED[finder.series].findall(low)
    if finder.unit == "none":
        return [float(n) for n, _ in found]
    if finder.unit == "smi":
        return [float(n) * 2**20 for n, _ in found]
    if finder.unit == "bytes":
        return [float(n) * _UNIT_BYTES[u] if u else float(n) for n, u in found]
    return [float(n) * _UNIT_BYTES[u] for n, u in found if u]


def _matches(finder: Finder, low: str, start: int = 0) -> Iterator[re.Match[str]]:
    """The matches `_values` reads, from `start` (a segment start: no match spans a break)."""
    for found in _COMPILED[finder.series].finditer(low, start):
        if finder.unit != "required" or found.group(2):
            yield found


class Seen:
    """A logged value a detector holds: its index among its series' values in the current
    chunk, until the chunk's end resolves its line, the value as the log prints it, and the
    line's text."""

    __slots__ = ("index", "line", "shown", "text")

    def __init__(self, index: int) -> None:
        self.index, self.line, self.shown = index, 0, ""
        self.text: str | None = None


@dataclass(frozen=True)
class Sighting:
    signal: str
    description: str
    lines: tuple[tuple[int, str], ...]  # (line, text): the values the description quotes


def _lines(*seen: Seen) -> tuple[tuple[int, str], ...]:
    out: dict[int, str] = {}
    for s in seen:
        out.setdefault(s.line, s.text or "")
    return tuple(sorted(out.items()))


def _span(first: Seen, last: Seen) -> str:
    return f"line {first.line}" if first.line == last.line else f"lines {first.line}-{last.line}"


Mark = Callable[[int], Seen]  # a value's index in the batch -> a Seen to hold


class _Series(Protocol):
    def add_all(self, values: list[float], mark: Mark) -> None:
        """Take the next values of the series, in order; `mark(i)` gives the Seen of the i-th
        of them (made only for the values a detector keeps: the chunk's end resolves them)."""

    def refs(self) -> list[Seen | None]: ...

    def sightings(self) -> list[Sighting]: ...


class _Loss:
    def __init__(self, name: str = "loss") -> None:
        self.name = name
        self.count = 0
        self.finite = 0
        self.first: Seen | None = None
        self.first_value = 0.0
        self.flat = True  # every value so far is in the band around the first
        self.flat_count = 0
        self.flat_sum = 0.0
        self.flat_last: Seen | None = None
        self.low: tuple[float, Seen] | None = None
        self.high: tuple[float, Seen] | None = None
        self.least: tuple[float, Seen] | None = None  # the lowest finite value so far
        self.rise: tuple[float, Seen, Seen] | None = None  # (low value, low, risen)
        self.last: tuple[float, Seen] | None = None
        self.finite_before = 0  # finite values before the first non-finite one
        self.watching = True  # until the first non-finite value
        self.nonfinite: tuple[Seen, Seen] | None = None  # (last finite, first non-finite)
        self.tail: list[tuple[float, Seen]] = []  # the last CLIMB_VALUES finite values
        self.ends_finite = True

    def add_all(self, values: list[float], mark: Mark) -> None:
        if not values:
            return
        self.count += len(values)
        if self.first is None:
            self.first, self.first_value = mark(0), values[0]
        if self.flat:
            self._flat(values, mark)
        if self.watching:
            self._nonfinite(values, mark)
        self._tail(values, mark)
        # The rise: every finite value against the lowest before it, until one rises; after
        # that only the last finite value matters.
        isfinite = math.isfinite
        least, finite, rise = self.least, self.finite, self.rise
        last = -1
        for i, value in enumerate(values):
            if rise is not None:
                break
            if not isfinite(value):
                continue
            if least is not None and finite >= RISE_AFTER:
                low = least[0]
                if value >= RISE_FACTOR * low and value - low >= RISE_MARGIN:
                    rise = (low, least[1], mark(i))
            if least is None or value < least[0]:
                least = (value, mark(i))
            finite += 1
            last = i
        if rise is not None:
            # (`finite` stops counting here: only the rise's threshold reads it)
            for i in range(len(values) - 1, last, -1):
                if isfinite(values[i]):
                    last = i
                    break
        self.least, self.finite, self.rise = least, finite, rise
        if last >= 0:
            self.last = (values[last], mark(last))

    def _nonfinite(self, values: list[float], mark: Mark) -> None:
        if math.isfinite(sum(values)):  # (a sum that overflows is checked value by value)
            self.finite_before += len(values)
            return
        for i, value in enumerate(values):
            if math.isfinite(value):
                self.finite_before += 1
                continue
            self.watching = False
            if self.finite_before >= NONFINITE_AFTER:
                # The value before the first non-finite one is finite: in this batch, or the
                # last finite value of an earlier one.
                before = mark(i - 1) if i else (self.last[1] if self.last else None)
                if before is not None:
                    self.nonfinite = (before, mark(i))
            return

    def _tail(self, values: list[float], mark: Mark) -> None:
        isfinite = math.isfinite
        taken: list[tuple[float, Seen]] = []
        for i in range(len(values) - 1, -1, -1):
            if isfinite(values[i]):
                taken.append((values[i], mark(i)))
                if len(taken) == CLIMB_VALUES:
                    break
        self.ends_finite = isfinite(values[-1])
        taken.reverse()
        self.tail = (self.tail + taken)[-CLIMB_VALUES:]

    def _flat(self, values: list[float], mark: Mark) -> None:
        band = FLAT_BAND * abs(self.first_value) + FLAT_SLACK
        first = self.first_value
        low, high = self.low, self.high
        taken = 0
        for i, value in enumerate(values):
            if not abs(value - first) <= band:  # also false for NaN and inf
                self.flat = False
                break
            self.flat_sum += value
            if low is None or value < low[0]:
                low = (value, mark(i))
            if high is None or value > high[0]:
                high = (value, mark(i))
            taken = i + 1
        self.low, self.high = low, high
        if taken:
            self.flat_count += taken
            self.flat_last = mark(taken - 1)

    def refs(self) -> list[Seen | None]:
        held = [x[1] for x in (self.low, self.high, self.least, self.last, *self.tail) if x]
        return [
            self.first,
            self.flat_last,
            *held,
            *(self.rise[1:] if self.rise else ()),
            *(self.nonfinite or ()),
        ]

    def sightings(self) -> list[Sighting]:
        out = []
        flat = self.flat_count >= FLAT_SHARE * self.count
        if flat and self.first and self.flat_last and self.low and self.high:
            span = f"the first {self.flat_count} of {self.count} logged values"
            where = _span(self.first, self.flat_last)
            if self.low[0] == 0 and self.high[0] == 0 and self.flat_count >= ZERO_MIN:
                desc = f"{self.name} is 0 for {span} ({where})"
                out.append(Sighting("loss-zero", desc, _lines(self.first, self.flat_last)))
            elif self.flat_count >= FLAT_MIN:
                desc = (
                    f"{self.name} stays between {self.low[1].shown} and {self.high[1].shown} for "
                    f"{span} ({where})"
                )
                chance = _chance(self.flat_sum / self.flat_count, CHANCE_TOLERANCE)
                if chance:
                    desc += _chance_text(chance)
                lines = _lines(self.first, self.flat_last)
                out.append(Sighting("loss-flat", desc, lines))
                if chance and chance[0] == 2:
                    out.append(Sighting("loss-flat-at-ln2", desc, lines))
        if self.rise and self.last:
            low, at, risen = self.rise
            desc = (
                f"{self.name} rises from {at.shown} (line {at.line}) to {risen.shown} "
                f"(line {risen.line})"
            )
            seen = [at, risen]
            value, last = self.last
            if last.line > risen.line and value >= 2 * low and value - low >= RISE_MARGIN / 2:
                desc += f" and is still {last.shown} at line {last.line}"
                seen.append(last)
            out.append(Sighting("loss-rises", desc, _lines(*seen)))
        elif self._climbs():
            at, last = self.tail[0][1], self.tail[-1][1]
            desc = (
                f"{self.name} rises at each of its last {len(self.tail)} logged values, from "
                f"{at.shown} (line {at.line}) to {last.shown} (line {last.line})"
            )
            out.append(Sighting("loss-climbs", desc, _lines(at, last)))
        if self.nonfinite is not None:
            before, bad = self.nonfinite
            desc = (
                f"{self.name} is {bad.shown} at line {bad.line}, its first non-finite value, "
                f"after {self.finite_before} finite ones (the last {before.shown} at line "
                f"{before.line})"
            )
            out.append(Sighting("loss-nonfinite", desc, _lines(before, bad)))
        return out

    def _climbs(self) -> bool:
        """The log ends on CLIMB_VALUES finite values, each above the one before, the last at
        least CLIMB_GROWTH times the first."""
        tail = self.tail
        return (
            self.ends_finite
            and len(tail) == CLIMB_VALUES
            and tail[0][0] > 0
            and tail[-1][0] >= CLIMB_GROWTH * tail[0][0]
            and all(tail[i][0] > tail[i - 1][0] for i in range(1, len(tail)))
        )


class _Band:
    """A settled stretch from one of a series' first values: every value within `half` of
    `center` (the stretch's first value, or the level of `chance`)."""

    __slots__ = ("center", "chance", "count", "first", "half", "high", "last", "low", "start")

    def __init__(
        self, center: float, half: float, chance: Chance | None, start: int, seen: Seen
    ) -> None:
        self.center, self.half, self.chance, self.start = center, half, chance, start
        self.count = 0
        self.first = self.last = seen
        self.low: tuple[float, Seen] | None = None
        self.high: tuple[float, Seen] | None = None


class _Settled:
    """A loss that settles from (nearly) the start: from one of its first SETTLE_STARTS values
    on, every value within SETTLE_BAND of that value, or (`chance_only` for a validation loss:
    only this) within CHANCE_BAND of one chance level ln k, for SETTLE_MIN+ values and
    FLAT_SHARE of the logged values."""

    def __init__(self, name: str, chance_only: bool) -> None:
        self.name, self.chance_only = name, chance_only
        self.count = 0
        self.open: list[_Band] = []  # stretches still holding
        self.ended: list[_Band] = []  # stretches that held SETTLE_MIN+ values, then broke

    def add_all(self, values: list[float], mark: Mark) -> None:
        for i, value in enumerate(values):
            index = self.count + i
            if index < SETTLE_STARTS:
                self._open(value, index, i, mark)
            elif not self.open:
                break
            kept = []
            for band in self.open:
                if abs(value - band.center) <= band.half:  # also false for NaN and inf
                    seen = band.last = mark(i)
                    band.count += 1
                    if band.low is None or value < band.low[0]:
                        band.low = (value, seen)
                    if band.high is None or value > band.high[0]:
                        band.high = (value, seen)
                    kept.append(band)
                elif band.count >= SETTLE_MIN:
                    self.ended.append(band)
            self.open = kept
        self.count += len(values)

    def _open(self, value: float, index: int, i: int, mark: Mark) -> None:
        if not math.isfinite(value) or value == 0:  # (a zero loss is loss-zero's case)
            return
        seen = mark(i)
        if not self.chance_only:
            self.open.append(_Band(value, SETTLE_BAND * abs(value), None, index, seen))
        chance = _chance(value, CHANCE_BAND)
        if chance:
            self.open.append(_Band(chance[1], CHANCE_BAND * chance[1], chance, index, seen))

    def refs(self) -> list[Seen | None]:
        return [s for b in (*self.open, *self.ended) for s in (b.first, b.last, *_ends(b))]

    def sightings(self) -> list[Sighting]:
        bands = [
            b
            for b in (*self.ended, *self.open)
            if b.count >= SETTLE_MIN and b.count >= FLAT_SHARE * self.count
        ]
        if not bands:
            return []
        # The longest stretch; at one length, the earliest, then one at a chance level.
        best = min(bands, key=lambda b: (-b.count, b.start, b.chance is None))
        assert best.low is not None and best.high is not None
        desc = (
            f"{self.name} stays between {best.low[1].shown} and {best.high[1].shown} for "
            f"{best.count} of {self.count} logged values from value {best.start + 1} "
            f"({_span(best.first, best.last)})"
        )
        out = []
        if best.chance:
            desc += _chance_text(best.chance)
        lines = _lines(best.first, best.last)
        out.append(Sighting("loss-flat", desc, lines))
        if best.chance and best.chance[0] == 2:
            out.append(Sighting("loss-flat-at-ln2", desc, lines))
        return out


def _ends(band: _Band) -> tuple[Seen, ...]:
    return tuple(x[1] for x in (band.low, band.high) if x)


class _Both:
    """Two detectors on one series; a signal the first gives is not repeated by the second."""

    def __init__(self, first: _Series, second: _Series) -> None:
        self.first, self.second = first, second

    def add_all(self, values: list[float], mark: Mark) -> None:
        self.first.add_all(values, mark)
        self.second.add_all(values, mark)

    def refs(self) -> list[Seen | None]:
        return [*self.first.refs(), *self.second.refs()]

    def sightings(self) -> list[Sighting]:
        out = self.first.sightings()
        given = {s.signal for s in out}
        return out + [s for s in self.second.sightings() if s.signal not in given]


class _ZeroRun:
    """The longest run of exact zeros in a series (grad_norm, learning rate)."""

    def __init__(self, signal: str, name: str) -> None:
        self.signal, self.name = signal, name
        self.count = 0
        self.run: tuple[int, Seen, Seen] | None = None  # (length, first, last) of the current run
        self.best: tuple[int, Seen, Seen] | None = None  # the longest run that has ended

    def add_all(self, values: list[float], mark: Mark) -> None:
        self.count += len(values)
        length, first = (self.run[0], self.run[1]) if self.run else (0, None)
        for i, value in enumerate(values):
            if value == 0:
                if not length:
                    first = mark(i)
                length += 1
            elif length:
                assert first is not None
                self._offer((length, first, self.run[2] if self.run and i == 0 else mark(i - 1)))
                self.run, length = None, 0
        if length:
            assert first is not None
            tail = len(values) - 1
            last = self.run[2] if self.run and length == self.run[0] else mark(tail)
            self.run = (length, first, last)

    def _offer(self, run: tuple[int, Seen, Seen]) -> None:
        if self.best is None or run[0] > self.best[0]:
            self.best = run

    def refs(self) -> list[Seen | None]:
        return [*(self.run[1:] if self.run else ()), *(self.best[1:] if self.best else ())]

    def sightings(self) -> list[Sighting]:
        if self.run is not None:
            self._offer(self.run)
            self.run = None
        if self.best is None or self.best[0] < ZERO_MIN:
            return []
        length, first, last = self.best
        desc = (
            f"{self.name} is 0 for {length} logged values in a row ({_span(first, last)}; "
            f"{self.count} values in all)"
        )
        return [Sighting(self.signal, desc, _lines(first, last))]


@dataclass
class _Stretch:
    start: float
    first: Seen
    end: float
    last: Seen
    count: int = 1
    strict: int = 0  # steps that strictly rise (or fall)


class _Monotone:
    """The longest stretch where a memory series only rises (`sign` 1) or only falls (-1)."""

    def __init__(self, sign: int, name: str) -> None:
        self.sign, self.name = sign, name
        self.run: _Stretch | None = None
        self.best: _Stretch | None = None

    def add_all(self, values: list[float], mark: Mark) -> None:
        # The current stretch in locals; a _Stretch is made only for one long enough to count
        # and for the one that goes on into the next batch (a noisy series starts a new
        # stretch at nearly every value).
        sign, run = self.sign, self.run
        start = end = 0.0
        count = strict = 0
        first_at, last_at = -1, -1  # indices in this batch; -1: the carried run's Seen
        if run is not None:
            start, end, count, strict = run.start, run.end, run.count, run.strict
        for i, value in enumerate(values):
            if count and (value - end) * sign >= 0:
                strict += value != end
                end, count, last_at = value, count + 1, i
                continue
            if count >= MEMORY_MIN:
                self.run = self._stretch(run, mark, start, end, count, strict, first_at, last_at)
                self._close()
            run, start, end, count, strict, first_at, last_at = None, value, value, 1, 0, i, i
        if count:
            run = self._stretch(run, mark, start, end, count, strict, first_at, last_at)
        self.run = run

    @staticmethod
    def _stretch(
        run: _Stretch | None,
        mark: Mark,
        start: float,
        end: float,
        count: int,
        strict: int,
        first_at: int,
        last_at: int,
    ) -> _Stretch:
        first = run.first if run is not None and first_at < 0 else mark(first_at)
        last = run.last if run is not None and last_at < 0 else mark(last_at)
        return _Stretch(start, first, end, last, count, strict)

    def _close(self) -> None:
        run = self.run
        if run is None:
            return
        if self.sign > 0:
            grown = run.end >= MEMORY_GROWTH * run.start
        else:
            grown = run.end * MEMORY_GROWTH <= run.start
        if (
            run.count >= MEMORY_MIN
            and run.strict >= MEMORY_STEP_SHARE * (run.count - 1)
            and grown
            and (self.best is None or run.count > self.best.count)
        ):
            self.best = run

    def refs(self) -> list[Seen | None]:
        return [s for r in (self.run, self.best) if r for s in (r.first, r.last)]

    def sightings(self) -> list[Sighting]:
        self._close()
        self.run = None
        best = self.best
        if best is None:
            return []
        verb = "rises" if self.sign > 0 else "falls"
        desc = (
            f"{self.name} {verb} at {best.strict} of {best.count - 1} logged steps, from "
            f"{best.first.shown} (line {best.first.line}) to {best.last.shown} "
            f"(line {best.last.line})"
        )
        return [Sighting("memory-grows", desc, _lines(best.first, best.last))]


_NAMES = {
    "lr": "learning rate",
    "learning_rate": "learning rate",
    "memory": "GPU memory in use",
    "smi": "GPU memory in use",
    "allocated": "allocated GPU memory",
    "reserved": "reserved GPU memory",
    "free": "free GPU memory",
}


def _detector(series: str) -> _Series:
    if series in ("loss", "xent"):
        return _Both(_Loss(series), _Settled(series, chance_only=False))
    if series == "val_loss":
        return _Settled("validation loss", chance_only=True)
    if series == "grad_norm":
        return _ZeroRun("grad-norm-zero", "grad_norm")
    if series in ("lr", "learning_rate"):
        return _ZeroRun("lr-zero", _NAMES[series])
    return _Monotone(-1 if series == "free" else 1, _NAMES[series])


class Reader:
    """Reads the metric series of a log, chunk by chunk (each chunk ends at a segment break)."""

    def __init__(self) -> None:
        self.series = {finder.series: _detector(finder.series) for finder in FINDERS}
        self.pairwise = False  # the log names a preference run's metrics (PAIRWISE_WORDS)

    def feed(self, text: str, low: str, line: int) -> None:
        """Read one chunk: `text` as latin-1, `low` the same ASCII-lower-cased, `line` its first
        line number."""
        if not self.pairwise:
            self.pairwise = any(word in low for word in PAIRWISE_WORDS)
        for finder in FINDERS:
            if finder.unit == "smi" and _SMI_GATE.search(low) is None:
                continue
            series = self.series[finder.series]
            values = _values(finder, low)
            series.add_all(values, Seen)
            # What the detector still holds of this chunk needs its line before the chunk goes.
            held = sorted(
                (s for s in series.refs() if s is not None and s.text is None),
                key=lambda s: s.index,
            )
            if held:
                _resolve(finder, text, low, line, held, len(values))

    def sightings(self) -> list[Sighting]:
        found = [s for series in self.series.values() for s in series.sightings()]
        return [s for s in found if self.pairwise or s.signal != "loss-flat-at-ln2"]


def _resolve(finder: Finder, text: str, low: str, line: int, held: list[Seen], total: int) -> None:
    """Give each held value (of `total` in the chunk) its line number, shown value and line
    text."""
    found = _find(finder, low, {seen.index for seen in held}, total)
    counted = 0
    for seen in held:  # in index order, so in text order
        match = found[seen.index]
        pos = match.start()
        line += low.count("\n", counted, pos)
        counted = pos
        if finder.unit == "smi":
            end = match.end()  # `12345MiB / 81920MiB` as printed
        else:
            end = match.end(2) if match.group(2) else match.end(1)
        start, stop = _segment_start(low, pos), _BREAK.search(low, pos)
        raw = text[start : stop.start() if stop else len(text)].encode("latin-1")
        seen.line, seen.shown = line, text[match.start(1) : end].strip()
        seen.text = raw.decode("utf-8", errors="replace").strip(" \t\f\v")[:500]


def _segment_start(low: str, pos: int) -> int:
    """Where the segment holding `pos` starts. Both searches stop at the nearest break: the CR
    search looks back no further than the last LF, so a chunk without CRs costs nothing."""
    newline = low.rfind("\n", 0, pos)
    return max(newline, low.rfind("\r", newline + 1, pos)) + 1


TAIL_WINDOW = 16 * 1024


def _find(finder: Finder, low: str, wanted: set[int], total: int) -> dict[int, re.Match[str]]:
    """The finder's matches at the `wanted` indices. Held values are mostly near either end of
    a chunk (a run's first value, the latest value): the first half is walked from the start,
    the second from a window before the end, doubled until it holds them."""
    early = {i for i in wanted if i < total // 2}
    found: dict[int, re.Match[str]] = {}
    if early:
        last = max(early)
        for index, match in enumerate(_matches(finder, low)):
            if index in early:
                found[index] = match
            if index >= last:
                break
    late = wanted - early
    window = TAIL_WINDOW
    while late:
        cut = len(low) - window
        begin = _segment_start(low, cut) if cut > 0 else 0
        tail = list(_matches(finder, low, begin))
        first = total - len(tail)
        if begin == 0 or first <= min(late):
            found.update((i, tail[i - first]) for i in late)
            break
        window *= 2
    return found
