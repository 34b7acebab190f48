"""The recall corpus (tests/recall/): real logs from public threads that no entry cites. Each
in-scope log must diagnose to its expected entry first (or one its case accepts); a case whose
log lacks the decisive line says why (`miss:`) and is expected to fail, strictly, so a log that
starts to diagnose is noticed. No out-of-scope log may get a confident answer.
`python scripts/recall.py` prints the figures."""

from __future__ import annotations

import re

import pytest

from generator import diagnose
from generator.pages import exports
from generator.pipeline import build_encyclopedia
from tests.recall_cases import load_cases, run
from tests.support import ROOT

CASES = load_cases(ROOT / "tests" / "recall")
RECORDS = exports.signature_index(build_encyclopedia(ROOT / "entries"), "/")
INDEX = diagnose.Index.from_export(RECORDS)
ENTRY_IDS = {r["id"] for r in RECORDS}


def test_the_corpus_is_broad_and_its_cases_name_real_entries() -> None:
    in_scope = [c for c in CASES if c.expect]
    assert len(in_scope) >= 100 and len(CASES) - len(in_scope) >= 10
    assert len({c.source for c in CASES}) == len(CASES)  # one case per thread
    for case in CASES:
        assert set(case.accepted) <= ENTRY_IDS, case.name
        assert case.source.startswith("https://"), case.name


def _params() -> list[object]:
    marks = {
        c.name: [pytest.mark.xfail(reason=c.miss, strict=True)] if c.miss else [] for c in CASES
    }
    return [pytest.param(c, id=c.name, marks=marks[c.name]) for c in CASES if c.expect]


@pytest.mark.parametrize("case", _params())
def test_in_scope_log_diagnoses_to_its_entry_first(case: object) -> None:
    outcome = run(INDEX, case)  # type: ignore[arg-type]
    assert outcome.top1, f"got {list(outcome.ids[:3]) or 'nothing'}"


@pytest.mark.parametrize("case", [c for c in CASES if not c.expect], ids=lambda c: c.name)
def test_out_of_scope_log_gets_no_confident_answer(case: object) -> None:
    outcome = run(INDEX, case)  # type: ignore[arg-type]
    assert not outcome.confident, f"confidently named {outcome.ids[0]}"


# Metric-only logs (tests/recall_metrics/): real runs whose failure shows only in logged numbers,
# gathered before the metric detectors were tuned (held out for their first version; the readings
# added on 2026-12-04 were widened on its misses, so it is a development set now, and
# tests/recall_metrics_heldout/ the held-out one). Not every one is recognised yet
# (`python scripts/recall.py --cases tests/recall_metrics` prints the figures); none may name a
# wrong entry first, and a healthy run's log gets no answer at all.
METRIC_CASES = load_cases(ROOT / "tests" / "recall_metrics")


def test_the_metric_corpus_names_real_entries_and_holds_healthy_runs() -> None:
    assert len([c for c in METRIC_CASES if c.expect]) >= 20
    assert len([c for c in METRIC_CASES if not c.expect]) >= 5
    assert len({c.source for c in METRIC_CASES} | {c.source for c in CASES}) == len(
        METRIC_CASES
    ) + len(CASES)  # no thread twice, across both corpora
    for case in METRIC_CASES:
        assert set(case.accepted) <= ENTRY_IDS, case.name


# The held-out round (tests/recall_heldout/): 100 real logs gathered on 2026-12-03 by two helpers
# who never ran the matcher on them, from threads no entry or other corpus cites, half of the
# newest families. The matcher is not tuned on them: `python scripts/recall.py --cases
# tests/recall_heldout` prints the figures (without --misses, so nobody tunes to the cases); the
# tests hold only what no change may break.
HELDOUT_CASES = load_cases(ROOT / "tests" / "recall_heldout")


def test_the_held_out_round_names_real_entries_from_threads_cited_nowhere_else() -> None:
    assert len([c for c in HELDOUT_CASES if c.expect]) >= 90
    assert len([c for c in HELDOUT_CASES if not c.expect]) >= 10
    others = {c.source for c in CASES} | {c.source for c in METRIC_CASES}
    sources = [c.source for c in HELDOUT_CASES]
    assert len(set(sources)) == len(sources) and not set(sources) & others
    cited = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "entries").rglob("*.yaml"))
    for case in HELDOUT_CASES:
        assert set(case.accepted) <= ENTRY_IDS, case.name
        assert case.source.startswith("https://"), case.name
        assert not re.search(re.escape(case.source) + r"(?![\w/])", cited), case.name


@pytest.mark.parametrize("case", [c for c in HELDOUT_CASES if not c.expect], ids=lambda c: c.name)
def test_a_held_out_out_of_scope_log_gets_no_confident_answer(case: object) -> None:
    outcome = run(INDEX, case)  # type: ignore[arg-type]
    assert not outcome.confident, f"confidently named {outcome.ids[0]}"


# The held-out metric round (tests/recall_metrics_heldout/): 26 real metric-only logs gathered on
# 2026-12-04 by a helper that never saw the detectors, before the settled-loss, first non-finite,
# climb and validation-loss readings were measured on them. Not tuned on: `python
# scripts/recall.py --cases tests/recall_metrics_heldout` prints the figures (without --misses).
METRIC_HELDOUT_CASES = load_cases(ROOT / "tests" / "recall_metrics_heldout")


def test_the_held_out_metric_round_comes_from_threads_cited_nowhere_else() -> None:
    assert len([c for c in METRIC_HELDOUT_CASES if c.expect]) >= 20
    assert len([c for c in METRIC_HELDOUT_CASES if not c.expect]) >= 5
    others = {c.source for c in (*CASES, *METRIC_CASES, *HELDOUT_CASES)}
    sources = [c.source for c in METRIC_HELDOUT_CASES]
    assert len(set(sources)) == len(sources) and not set(sources) & others
    for case in METRIC_HELDOUT_CASES:
        assert set(case.accepted) <= ENTRY_IDS, case.name


@pytest.mark.parametrize("case", [*METRIC_CASES, *METRIC_HELDOUT_CASES], ids=lambda c: c.name)
def test_a_metric_log_never_gets_a_wrong_first_answer(case: object) -> None:
    """Both metric rounds: an in-scope log gets its entry first or nothing; a healthy run's log
    gets no answer at all."""
    outcome = run(INDEX, case)  # type: ignore[arg-type]
    if outcome.case.expect:
        assert not outcome.ids or outcome.top1, f"got {list(outcome.ids[:3])}"
    else:
        assert not outcome.ids, f"a healthy run got {list(outcome.ids[:3])}"
