"""The recall corpus (tests/recall/): real failure logs from public threads, each with the
entry a reader needs first, or `expect: null` for a failure no entry covers. Shared by the test
that holds every case and by scripts/recall.py, which prints the figures (not part of the
package: the wheel ships no test corpus)."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import yaml

from generator import diagnose

CONFIDENT = ("medium", "high")


@dataclass(frozen=True)
class Case:
    name: str
    source: str
    expect: str | None  # None: out of scope
    also: tuple[str, ...]  # other acceptable first answers
    log: str
    miss: str | None  # why the log cannot be diagnosed (the decisive line is not in it)

    @property
    def accepted(self) -> tuple[str, ...]:
        return ((self.expect,) if self.expect else ()) + self.also


def load_cases(folder: Path) -> list[Case]:
    cases = []
    for path in sorted(folder.glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        cases.append(
            Case(
                path.stem,
                data["source"],
                data.get("expect"),
                tuple(data.get("also") or ()),
                data["log"],
                data.get("miss"),
            )
        )
    return cases


@dataclass(frozen=True)
class Outcome:
    case: Case
    ids: tuple[str, ...]  # the results, first first (folded alternatives left out)
    confident: bool  # the first result is labelled medium or high

    @property
    def top1(self) -> bool:
        return bool(self.ids) and self.ids[0] in self.case.accepted

    @property
    def top3(self) -> bool:
        return any(i in self.case.accepted for i in self.ids[:3])


def run(index: diagnose.Index, case: Case) -> Outcome:
    matches = diagnose.diagnose(index, io.BytesIO(case.log.encode("utf-8"))).matches
    shown = [m for m in matches if not m.also_possible_for]
    confident = bool(shown) and shown[0].confidence in CONFIDENT
    return Outcome(case, tuple(m.id for m in shown), confident)
