"""What a scan collects: each candidate entry, its score and the hits that are its evidence."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from ..read.pattern import normalise
from . import metrics
from .index import Index
from .series import Sighting

MAX_EVIDENCE = 5
RANK = re.compile(r"^ ?\[(?:rank ?|default)([0-9]{1,9})\]:")  # a rank fits in 9 digits


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


def candidate(candidates: dict[str, Candidate], index: Index, entry: str) -> Candidate:
    if entry not in candidates:
        data = index.entries[entry]
        candidates[entry] = Candidate(entry, data["title"], data["url"])
    return candidates[entry]


def record(
    candidates: dict[str, Candidate], index: Index, entry: str, key: str, primary: bool, hit: Hit
) -> None:
    """A match of `entry` by a signature (its text as `key`) or a `raised` rule (its label): it
    counts once, its hit among the earliest by line, ties in the order `hit.order` gives."""
    cand = candidate(candidates, index, entry)
    cand.primary = cand.primary or primary
    if key not in cand.matched:
        cand.matched.add(key)
        cand.score += hit.weight
        bisect.insort(cand.hits, hit, key=lambda h: (h.line, h.order))
        del cand.hits[MAX_EVIDENCE:]


def record_sighting(
    candidates: dict[str, Candidate], index: Index, entry: str, sighting: Sighting
) -> None:
    """A metric sighting as a primary match of `entry`: its description one of the entry's
    readings, and one hit per line it rests on, labelled `signal: NAME`."""
    cand = candidate(candidates, index, entry)
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
            found = RANK.match(normalise(text))
            rank = int(found.group(1)) if found else None
            hit = Hit(line, text, label, rank, False, score, signal=True)
            cand.hits.append(hit)
