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

from .model import Reproduce
from .problems import Problem

RESULTS_FILE = "_reproduced.json"
FORMAT = 1
Status = Literal["passed", "failed"]


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
    id: str
    digest: str  # of the scripts that ran: a page shows the result only while they are unchanged
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
        """True when this result is of the scripts the entry holds now."""
        return reproduce is not None and digest(reproduce) == self.digest


def digest(reproduce: Reproduce) -> str:
    text = f"{reproduce.failing}\0{reproduce.fixed}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _run(data: dict[str, Any]) -> Run:
    return Run(data["exit_code"], data["seconds"], data["output"], data.get("cut_lines", 0))


def _record(data: dict[str, Any]) -> Reproduction:
    return Reproduction(
        id=data["id"],
        digest=data["digest"],
        status=data["status"],
        problems=tuple(data["problems"]),
        failing=_run(data["failing"]),
        fixed=_run(data["fixed"]),
        diagnosed_first=data["diagnosed_first"],
        signatures=tuple(data["signatures"]),
        torch=data["torch"],
        python=data["python"],
        platform=data["platform"],
        date=data["date"],
    )


def read_results(path: Path) -> tuple[dict[str, Reproduction], list[Problem]]:
    """The results by entry id, or the problem that keeps the file from being read. The file is
    written by `encyclopedia reproduce`; a missing file is no results."""
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
        records = [_record(item) for item in data["reproductions"]]
    except (KeyError, TypeError) as err:
        return {}, [Problem(str(path), 1, 1, f"a result lacks a field ({err})", fix)]
    return {r.id: r for r in records}, []


def results_text(results: Iterable[Reproduction]) -> str:
    records = [asdict(r) for r in sorted(results, key=lambda r: r.id)]
    return json.dumps({"format": FORMAT, "reproductions": records}, indent=1) + "\n"


def write_results(path: Path, results: Iterable[Reproduction], merge: bool) -> None:
    """Write the results, keeping earlier records of entries not run this time when `merge`.
    The file is replaced whole, never left half-written."""
    combined = read_results(path)[0] if merge else {}
    combined.update({r.id: r for r in results})
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(results_text(combined.values()), encoding="utf-8")
    temporary.replace(path)
