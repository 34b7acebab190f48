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
- Each series feeds a detector with bounded state (thresholds in loss.py and series.py); a
  detector that fires gives a `Sighting`: its signal, a description quoting the values as the
  log prints them, and the lines (line number and text) it rests on.
- An entry lists the signals that point to it (`metric_signals`); diagnose makes each sighting a
  result for those entries, scored by SIGNAL_SCORES.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from .loss import Loss, Settled
from .series import Both, Monotone, Seen, Series, Sighting, ZeroRun

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
# A flat ln 2 is DPO's unmoved loss only in a log of a preference run: these words say so (in a
# binary classifier's log it is a chance level like any other).
PAIRWISE_WORDS = ("rewards/", "logps/", "dpo")

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


_NAMES = {
    "lr": "learning rate",
    "learning_rate": "learning rate",
    "memory": "GPU memory in use",
    "smi": "GPU memory in use",
    "allocated": "allocated GPU memory",
    "reserved": "reserved GPU memory",
    "free": "free GPU memory",
}


def _detector(series: str) -> Series:
    if series in ("loss", "xent"):
        return Both(Loss(series), Settled(series, chance_only=False))
    if series == "val_loss":
        return Settled("validation loss", chance_only=True)
    if series == "grad_norm":
        return ZeroRun("grad-norm-zero", "grad_norm")
    if series in ("lr", "learning_rate"):
        return ZeroRun("lr-zero", _NAMES[series])
    return Monotone(-1 if series == "free" else 1, _NAMES[series])


ALL_SERIES = frozenset(finder.series for finder in FINDERS)


@dataclass(frozen=True)
class Part:
    """What a reader of some of the series found: its sightings by series, and whether the log
    names a preference run's metrics (PAIRWISE_WORDS)."""

    found: dict[str, list[Sighting]]
    pairwise: bool


class Reader:
    """Reads the metric series of a log, chunk by chunk (each chunk ends at a segment break):
    all of them, or only `series` (another reader, in another process, reads the rest)."""

    def __init__(self, series: frozenset[str] = ALL_SERIES) -> None:
        self.finders = tuple(finder for finder in FINDERS if finder.series in series)
        self.series = {finder.series: _detector(finder.series) for finder in self.finders}
        self.pairwise = False  # the log names a preference run's metrics (PAIRWISE_WORDS)

    def feed(self, text: str, low: str, line: int) -> None:
        """Read one chunk: `text` as latin-1, `low` the same ASCII-lower-cased, `line` its first
        line number."""
        if not self.pairwise:
            self.pairwise = any(word in low for word in PAIRWISE_WORDS)
        for finder in self.finders:
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

    def part(self) -> Part:
        return Part({name: s.sightings() for name, s in self.series.items()}, self.pairwise)


def combine(parts: list[Part]) -> list[Sighting]:
    """The sightings of readers that together read every series, as one reader of all of them
    gives them (in FINDERS order)."""
    pairwise = any(part.pairwise for part in parts)
    found = [s for finder in FINDERS for part in parts for s in part.found.get(finder.series, ())]
    return [s for s in found if pairwise or s.signal != "loss-flat-at-ln2"]


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
