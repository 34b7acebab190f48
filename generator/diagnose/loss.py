"""The loss's detectors: flat from the start, settled at a chance level, zero, rising,
climbing at the end, turning non-finite."""

from __future__ import annotations

import math

from .series import ZERO_MIN, Mark, Seen, Sighting, lines_of, span_text

FLAT_MIN = 20  # values before a flat loss counts
FLAT_SHARE = 0.8  # of the run's loss values, the flat stretch from the start must hold this share
FLAT_BAND = 0.02  # relative to the first value, plus FLAT_SLACK
FLAT_SLACK = 0.001
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


class Loss:
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
            where = span_text(self.first, self.flat_last)
            if self.low[0] == 0 and self.high[0] == 0 and self.flat_count >= ZERO_MIN:
                desc = f"{self.name} is 0 for {span} ({where})"
                out.append(Sighting("loss-zero", desc, lines_of(self.first, self.flat_last)))
            elif self.flat_count >= FLAT_MIN:
                desc = (
                    f"{self.name} stays between {self.low[1].shown} and {self.high[1].shown} for "
                    f"{span} ({where})"
                )
                chance = _chance(self.flat_sum / self.flat_count, CHANCE_TOLERANCE)
                if chance:
                    desc += _chance_text(chance)
                lines = lines_of(self.first, self.flat_last)
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
            out.append(Sighting("loss-rises", desc, lines_of(*seen)))
        elif self._climbs():
            at, last = self.tail[0][1], self.tail[-1][1]
            desc = (
                f"{self.name} rises at each of its last {len(self.tail)} logged values, from "
                f"{at.shown} (line {at.line}) to {last.shown} (line {last.line})"
            )
            out.append(Sighting("loss-climbs", desc, lines_of(at, last)))
        if self.nonfinite is not None:
            before, bad = self.nonfinite
            desc = (
                f"{self.name} is {bad.shown} at line {bad.line}, its first non-finite value, "
                f"after {self.finite_before} finite ones (the last {before.shown} at line "
                f"{before.line})"
            )
            out.append(Sighting("loss-nonfinite", desc, lines_of(before, bad)))
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


class Band:
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


class Settled:
    """A loss that settles from (nearly) the start: from one of its first SETTLE_STARTS values
    on, every value within SETTLE_BAND of that value, or (`chance_only` for a validation loss:
    only this) within CHANCE_BAND of one chance level ln k, for SETTLE_MIN+ values and
    FLAT_SHARE of the logged values."""

    def __init__(self, name: str, chance_only: bool) -> None:
        self.name, self.chance_only = name, chance_only
        self.count = 0
        self.open: list[Band] = []  # stretches still holding
        self.ended: list[Band] = []  # stretches that held SETTLE_MIN+ values, then broke

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
            self.open.append(Band(value, SETTLE_BAND * abs(value), None, index, seen))
        chance = _chance(value, CHANCE_BAND)
        if chance:
            self.open.append(Band(chance[1], CHANCE_BAND * chance[1], chance, index, seen))

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
            f"({span_text(best.first, best.last)})"
        )
        out = []
        if best.chance:
            desc += _chance_text(best.chance)
        lines = lines_of(best.first, best.last)
        out.append(Sighting("loss-flat", desc, lines))
        if best.chance and best.chance[0] == 2:
            out.append(Sighting("loss-flat-at-ln2", desc, lines))
        return out


def _ends(band: Band) -> tuple[Seen, ...]:
    return tuple(x[1] for x in (band.low, band.high) if x)
