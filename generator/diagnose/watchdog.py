"""The ranks of a collective timeout: which ranks' NCCL watchdogs timed out, on which collective
(SeqNum and OpType), and which ranks the log shows that report no timeout. When one rank stops,
the others time out on the collective it never joined, so the rank that is missing from the
list, or that is on another SeqNum, is where to look. The JavaScript half is the "Watchdog
timeouts" section of site_assets/js/diagnose-core.js; both pass tests/diagnose_vectors/.

Semantics (both implementations): on the ASCII-lower-cased text, every `watchdog caught
collective operation timeout: worknccl(seqnum=N, optype=NAME` gives a timeout; its rank is the
`rank R]` right before `watchdog` (PyTorch's `[Rank R]` or `[PG ... Rank R]`), else the line's
torchrun prefix `[rankR]:`, else none. The ranks the log shows are the timeouts' ranks, every
torchrun tag `[rankR]:` or `[defaultR]:` anywhere in it and torchrun's root-cause rank; every
rank below the highest of them exists (ranks count from 0). The summary goes to the first result
whose evidence holds a timeout line (its `ranks`). Only the first MAX_TIMEOUTS timeouts are
kept, so that a log of nothing but timeout lines keeps diagnose's memory bounded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PHRASE = "watchdog caught collective operation timeout"
MAX_TIMEOUTS = 4096
_TIMEOUT = re.compile(
    r"(?:rank ?([0-9]{1,9})\] ?)?watchdog caught collective operation timeout: ?"
    r"worknccl\(seqnum=([0-9]{1,18}), ?optype=([a-z_]{1,40})"
)
_PREFIX = re.compile(r" ?\[rank ?([0-9]{1,9})\]:")
_TAG = re.compile(rb"\[(?:rank ?|default)([0-9]{1,9})\]:")  # on lower-cased bytes


def tagged_ranks(low_bytes: bytes) -> set[int]:
    """The ranks of the torchrun tags in a chunk (ASCII-lower-cased bytes)."""
    if b"[rank" not in low_bytes and b"[default" not in low_bytes:
        return set()
    return {int(r) for r in set(_TAG.findall(low_bytes))}


@dataclass(frozen=True)
class Timeout:
    line: int
    rank: int | None
    seqnum: str  # as printed (JavaScript's numbers would round one of over 15 digits)
    optype: str  # as printed (ALLREDUCE, _ALLGATHER_BASE...)


def read(text: str, low: str, line: int, room: int = MAX_TIMEOUTS) -> list[Timeout]:
    """The first `room` timeouts in a chunk (`low` is `text` ASCII-lower-cased; `line` its
    first line)."""
    if room <= 0 or PHRASE not in low:
        return []
    out: list[Timeout] = []
    counted, at = 0, line
    for found in _TIMEOUT.finditer(low):
        if len(out) >= room:
            break
        pos = found.start()
        at += low.count("\n", counted, pos)
        counted = pos
        rank = found.group(1)
        if rank is None:
            start = low.rfind("\n", 0, pos) + 1
            prefix = _PREFIX.match(low, start)
            rank = prefix.group(1) if prefix else None
        optype = text[found.start(3) : found.end(3)]
        out.append(Timeout(at, int(rank) if rank else None, found.group(2), optype))
    return out


def ranges(ranks: list[int]) -> str:
    """`0-2, 4, 6-7` for ranks 0, 1, 2, 4, 6, 7 (sorted, without repeats)."""
    parts: list[str] = []
    i = 0
    while i < len(ranks):
        j = i
        while j + 1 < len(ranks) and ranks[j + 1] == ranks[j] + 1:
            j += 1
        parts.append(str(ranks[i]) if j == i else f"{ranks[i]}-{ranks[j]}")
        i = j + 1
    return ", ".join(parts)


def _ranks(ranks: list[int]) -> str:
    return ("rank " if len(ranks) == 1 else "ranks ") + ranges(ranks)


def summary(timeouts: list[Timeout], shown: set[int]) -> str | None:
    """One sentence: the ranks that timed out on each collective (first seen first), and, when
    the log shows more than one rank, the ranks up to the highest it shows with no timeout.
    None when no timeout names its rank."""
    groups: dict[tuple[str, str], set[int]] = {}
    for t in timeouts:
        if t.rank is not None:
            groups.setdefault((t.seqnum, t.optype), set()).add(t.rank)
    if not groups:
        return None
    timed = {r for ranks in groups.values() for r in ranks}
    parts = [
        f"{_ranks(sorted(ranks))} on SeqNum {seqnum} ({optype})"
        for (seqnum, optype), ranks in groups.items()
    ]
    text = "watchdog timeouts from " + "; ".join(parts)
    seen = timed | shown
    if len(seen) > 1:  # (the log of one rank says nothing of the others)
        # Ranks run from 0: every rank below the highest one seen exists.
        silent = sorted(set(range(max(seen) + 1)) - timed)
        if silent:
            text += f"; this log shows no timeout from {_ranks(silent)}"
    return text
