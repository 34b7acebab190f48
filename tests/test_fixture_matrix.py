"""Every entry's real log examples must diagnose to that entry first, in Python and in the
browser's JavaScript matcher. Prints the confusion matrix (expected -> diagnosed)."""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path

import pytest

from generator import diagnose
from generator.pages import exports
from generator.pipeline import build_encyclopedia
from tests.support import ROOT
from tests.test_diagnose import run_node

ENC = build_encyclopedia(ROOT / "entries")
RECORDS = exports.signature_index(ENC, "/")
INDEX = diagnose.Index.from_export(RECORDS)
EXAMPLES = {
    f"{page.id}#{i}": (page.id, ex.log)
    for page in ENC.pages.values()
    for i, ex in enumerate(page.entry.examples)
    if page.entry.signatures
}
# Entries no printed text identifies (a run that does not learn) have no signatures; their
# logs need not diagnose to them, but must not be confidently named as an unrelated failure.
SILENT = {
    f"{page.id}#{i}": (page.id, ex.log)
    for page in ENC.pages.values()
    for i, ex in enumerate(page.entry.examples)
    if not page.entry.signatures
}


def matrix(found: dict[str, str | None]) -> tuple[Counter[tuple[str, str]], list[str]]:
    counts: Counter[tuple[str, str]] = Counter()
    misses = []
    for key, (expected, _) in EXAMPLES.items():
        got = found[key] or "(nothing)"
        counts[(expected, got)] += 1
        if got != expected:
            misses.append(f"{key}: diagnosed as {got}")
    return counts, misses


def report(name: str, counts: Counter[tuple[str, str]], misses: list[str]) -> str:
    lines = [
        f"{name}: {len(EXAMPLES)} examples of {len(ENC.pages)} entries, "
        f"{len(EXAMPLES) - len(misses)} diagnosed to their own entry first"
    ]
    for (expected, got), n in sorted(counts.items()):
        mark = "" if expected == got else "   <-- miss"
        lines.append(f"  {expected:45} -> {got:45} {n}{mark}")
    return "\n".join(lines)


def test_every_entry_has_examples() -> None:
    without = sorted(p.id for p in ENC.pages.values() if not p.entry.examples)
    assert without == []


def test_python_matcher_confusion_matrix() -> None:
    found = {}
    for key, (_, log) in EXAMPLES.items():
        result = diagnose.diagnose(INDEX, io.BytesIO(log.encode("utf-8")))
        found[key] = result.matches[0].id if result.matches else None
    counts, misses = matrix(found)
    print(report("python", counts, misses))
    assert misses == []


def test_javascript_matcher_confusion_matrix(tmp_path: Path) -> None:
    index_file = tmp_path / "signatures.json"
    index_file.write_text(json.dumps(RECORDS), encoding="utf-8")
    results = run_node(index_file, {k: log for k, (_, log) in EXAMPLES.items()}, tmp_path)
    found = {k: (r["matches"][0]["id"] if r["matches"] else None) for k, r in results.items()}
    counts, misses = matrix(found)
    print(report("javascript", counts, misses))
    assert misses == []


@pytest.mark.parametrize("key", sorted(EXAMPLES))
def test_python_and_javascript_agree_on_examples(key: str, js_results: dict[str, object]) -> None:
    python = diagnose.diagnose(INDEX, io.BytesIO(EXAMPLES[key][1].encode("utf-8")))
    assert js_results[key] == python.to_json()


@pytest.fixture(scope="module")
def js_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    tmp = tmp_path_factory.mktemp("js")
    index_file = tmp / "signatures.json"
    index_file.write_text(json.dumps(RECORDS), encoding="utf-8")
    return run_node(index_file, {k: log for k, (_, log) in EXAMPLES.items()}, tmp)


def test_silent_entries_logs_are_not_confidently_named_as_something_unrelated() -> None:
    assert SILENT, "no entry without signatures: this test checks nothing"
    for key, (entry_id, log) in SILENT.items():
        related = {link.id for link in ENC.pages[entry_id].related}
        related |= {link.id for link in ENC.pages[entry_id].referenced_by}
        for match in diagnose.diagnose(INDEX, io.BytesIO(log.encode("utf-8"))).matches:
            if match.confidence != "low":
                assert match.id in related, f"{key}: confidently named {match.id}"
