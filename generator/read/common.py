"""`entries/_common.yaml`: the failures readers meet most, most common first.

The home page leads with them, and category and tag pages list them ahead of the rest in this
order, then the others by how many entries link to them (the canonical entry of a family is the
one its neighbours point at), then by severity and title. One order for every list, so a
category page and a tag page never disagree about which entry comes first."""

from __future__ import annotations

import stat
from pathlib import Path

from .files import COMMON_FILE, display
from .load import read_checked
from .model import CommonFailures
from .problems import Problem

__all__ = ["COMMON_FILE", "read_common"]


def read_common(
    entries_dir: Path, ids: set[str], failed: frozenset[str]
) -> tuple[tuple[str, ...], list[Problem]]:
    """The listed ids, or the problems of the file; no file is an empty list. `failed` holds
    ids whose files did not load: listing one is not reported (its own problem says why)."""
    path = entries_dir / COMMON_FILE
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return (), []
    if not stat.S_ISREG(mode):
        return (), []  # files.scan reports it
    shown = display(path, entries_dir.parent)
    record, source, problems = read_checked(path, shown, CommonFailures)
    if record is None:
        return (), problems
    seen: set[str] = set()
    for i, entry_id in enumerate(record.common):
        line, col = source.position(("common", i))
        if entry_id in seen:
            problems.append(
                Problem(shown, line, col, f"`{entry_id}` is listed twice", "keep its first place")
            )
        elif entry_id not in ids and entry_id not in failed:
            problems.append(
                Problem(
                    shown,
                    line,
                    col,
                    f"no entry has the id `{entry_id}`",
                    "use the file name of an entry under entries/<category>/, without `.yaml`",
                )
            )
        seen.add(entry_id)
    return (tuple(record.common), []) if not problems else ((), problems)
