"""The values of one metric series as the detectors hold them, and the detectors of the
series other than the loss: a run of zeros (grad_norm, learning rate) and memory that only grows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

ZERO_MIN = 10  # values of a zero loss, grad_norm or learning rate
MEMORY_MIN = 10  # values in a monotone stretch of memory
MEMORY_STEP_SHARE = 0.8  # of its steps, at least this share strictly rise (or fall, for free)
MEMORY_GROWTH = 1.1  # the stretch ends at least 10% above (or below, for free) its start


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


def lines_of(*seen: Seen) -> tuple[tuple[int, str], ...]:
    out: dict[int, str] = {}
    for s in seen:
        out.setdefault(s.line, s.text or "")
    return tuple(sorted(out.items()))


def span_text(first: Seen, last: Seen) -> str:
    return f"line {first.line}" if first.line == last.line else f"lines {first.line}-{last.line}"


Mark = Callable[[int], Seen]  # a value's index in the batch -> a Seen to hold


class Series(Protocol):
    def add_all(self, values: list[float], mark: Mark) -> None:
        """Take the next values of the series, in order; `mark(i)` gives the Seen of the i-th
        of them (made only for the values a detector keeps: the chunk's end resolves them)."""

    def refs(self) -> list[Seen | None]: ...

    def sightings(self) -> list[Sighting]: ...


class Both:
    """Two detectors on one series; a signal the first gives is not repeated by the second."""

    def __init__(self, first: Series, second: Series) -> None:
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


class ZeroRun:
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
            f"{self.name} is 0 for {length} logged values in a row ({span_text(first, last)}; "
            f"{self.count} values in all)"
        )
        return [Sighting(self.signal, desc, lines_of(first, last))]


@dataclass
class Stretch:
    start: float
    first: Seen
    end: float
    last: Seen
    count: int = 1
    strict: int = 0  # steps that strictly rise (or fall)


class Monotone:
    """The longest stretch where a memory series only rises (`sign` 1) or only falls (-1)."""

    def __init__(self, sign: int, name: str) -> None:
        self.sign, self.name = sign, name
        self.run: Stretch | None = None
        self.best: Stretch | None = None

    def add_all(self, values: list[float], mark: Mark) -> None:
        # The current stretch in locals; a Stretch is made only for one long enough to count
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
        run: Stretch | None,
        mark: Mark,
        start: float,
        end: float,
        count: int,
        strict: int,
        first_at: int,
        last_at: int,
    ) -> Stretch:
        first = run.first if run is not None and first_at < 0 else mark(first_at)
        last = run.last if run is not None and last_at < 0 else mark(last_at)
        return Stretch(start, first, end, last, count, strict)

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
        return [Sighting("memory-grows", desc, lines_of(best.first, best.last))]
