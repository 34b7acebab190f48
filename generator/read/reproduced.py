"""The results of `encyclopedia reproduce`: typed records and the JSON file that holds them
(`entries/_reproduced.json`), which the site reads to say when and with which PyTorch each
entry's failure was last reproduced."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from .model import CURRENT_SET, Reproduce, SetRun
from .problems import Problem

RESULTS_FILE = "_reproduced.json"
FORMAT = 2
# passed: it did what the entry says; failed: it did something else (the entry may be wrong);
# broken: it could not say (a package missing, an import error, a time limit), which is no pass.
Status = Literal["passed", "failed", "broken"]
STATUSES: tuple[Status, ...] = ("passed", "failed", "broken")


@dataclass(frozen=True)
class Run:
    """One script's run: exit code (None when it was stopped at its time limit), wall time and
    output (stdout and stderr interleaved, terminal codes removed, the end kept; `cut_lines`
    earlier lines were left out)."""

    exit_code: int | None
    seconds: float
    output: str
    cut_lines: int = 0


@dataclass(frozen=True)
class Reproduction:
    """One reproducer run on one set of releases."""

    id: str
    digest: str  # of the scripts that ran: a page shows the result only while they are unchanged
    set: str  # the set of releases it ran on
    expect: str  # what the entry said the failing script does on that set (`fails` or `runs`)
    versions: tuple[str, ...]  # "package version" for torch and each package the scripts import
    status: Status
    problems: tuple[str, ...]
    failing: Run
    fixed: Run
    diagnosed_first: str | None
    signatures: tuple[str, ...]  # this entry's primary signatures the failing output matched
    torch: str
    python: str
    platform: str
    date: str

    def current(self, reproduce: Reproduce | None) -> bool:
        """True when this result is of the scripts the entry holds now, on a set it names, with
        the expectation it states."""
        return (
            reproduce is not None
            and digest(reproduce) == self.digest
            and any(run.set == self.set and run.expect == self.expect for run in reproduce.runs)
        )


Results = dict[tuple[str, str], Reproduction]  # by entry id and set


def runs_of(
    results: Results, entry_id: str, reproduce: Reproduce
) -> list[tuple[SetRun, Reproduction | None]]:
    """Each set the entry names with its last run, or None where the run on record is of other
    scripts or another expectation (or there is none)."""
    shown = []
    for run in reproduce.runs:
        found = results.get((entry_id, run.set))
        shown.append((run, found if found is not None and found.current(reproduce) else None))
    return shown


def digest(reproduce: Reproduce) -> str:
    text = f"{reproduce.failing}\0{reproduce.fixed}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _typed(data: Any, name: str, kinds: tuple[type, ...]) -> Any:
    """`data[name]`, refused unless it is of one of `kinds` (a bool is no number here)."""
    if not isinstance(data, dict) or name not in data:
        raise KeyError(name)
    value = data[name]
    if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
        raise TypeError(
            f"`{name}` is {type(value).__name__}, not {' or '.join(k.__name__ for k in kinds)}"
        )
    return value


def _strings(data: Any, name: str) -> tuple[str, ...]:
    items = _typed(data, name, (list,))
    if not all(isinstance(item, str) for item in items):
        raise TypeError(f"`{name}` holds something other than text")
    return tuple(items)


def _run(data: Any) -> Run:
    cut = data.get("cut_lines", 0) if isinstance(data, dict) else 0
    if isinstance(cut, bool) or not isinstance(cut, int):
        raise TypeError("`cut_lines` is not a whole number")
    return Run(
        _typed(data, "exit_code", (int, type(None))),
        _typed(data, "seconds", (int, float)),
        _typed(data, "output", (str,)),
        cut,
    )


def _record(data: Any) -> Reproduction:
    status = _typed(data, "status", (str,))
    if status not in STATUSES:
        raise TypeError(f"`status` is {status!r}, not one of {', '.join(STATUSES)}")
    names = ("id", "digest", "set", "expect", "torch", "python")
    text = {name: _typed(data, name, (str,)) for name in names}
    return Reproduction(
        id=text["id"],
        digest=text["digest"],
        set=text["set"],
        expect=text["expect"],
        versions=_strings(data, "versions"),
        status=status,
        problems=_strings(data, "problems"),
        failing=_run(_typed(data, "failing", (dict,))),
        fixed=_run(_typed(data, "fixed", (dict,))),
        diagnosed_first=_typed(data, "diagnosed_first", (str, type(None))),
        signatures=_strings(data, "signatures"),
        torch=text["torch"],
        python=text["python"],
        platform=_typed(data, "platform", (str,)),
        date=_typed(data, "date", (str,)),
    )


def read_results(path: Path) -> tuple[Results, list[Problem]]:
    """The results by entry id and set, or the problem that keeps the file from being read. The
    file is written by `encyclopedia reproduce`; a missing file is no results."""
    if not path.is_file():
        return {}, []
    fix = "rerun `encyclopedia reproduce --out` to rewrite it, or delete it"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        return {}, [Problem(str(path), err.lineno, err.colno, f"not valid JSON: {err.msg}", fix)]
    except UnicodeDecodeError:
        return {}, [Problem(str(path), 1, 1, "not UTF-8 text", fix)]
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        found = data.get("format") if isinstance(data, dict) else None
        return {}, [Problem(str(path), 1, 1, f"results format {found!r}, expected {FORMAT}", fix)]
    try:
        records = [_record(item) for item in _typed(data, "reproductions", (list,))]
    except KeyError as err:
        return {}, [Problem(str(path), 1, 1, f"a result lacks a field ({err})", fix)]
    except TypeError as err:
        return {}, [Problem(str(path), 1, 1, f"a result has a field of the wrong kind: {err}", fix)]
    return {(r.id, r.set): r for r in records}, []


def results_text(results: Iterable[Reproduction]) -> str:
    records = [
        asdict(r) for r in sorted(results, key=lambda r: (r.id, r.set != CURRENT_SET, r.set))
    ]
    return json.dumps({"format": FORMAT, "reproductions": records}, indent=1) + "\n"


def write_results(path: Path, results: Iterable[Reproduction], merge: bool) -> None:
    """Write the results, keeping earlier records of entries (and sets) not run this time when
    `merge`. The file is replaced whole, never left half-written."""
    combined = read_results(path)[0] if merge else {}
    combined.update({(r.id, r.set): r for r in results})
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(results_text(combined.values()), encoding="utf-8")
    temporary.replace(path)
