"""The described-query ranking (generator/search/describe.py and site_assets/js/describe-core.js):
its query steps, its vectors (tests/search/describe_vectors.json, one case per scenario), and the
two halves giving the same ranking, score for score, on every query the project holds."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import pytest

from generator.pages import exports
from generator.pipeline import build_encyclopedia
from generator.search import describe
from tests.search_cases import described_queries, typed_queries
from tests.support import ROOT

VECTORS = json.loads((ROOT / "tests/search/describe_vectors.json").read_text(encoding="utf-8"))
NODE = ROOT / "tests/js/describe_node.js"


@pytest.fixture(scope="module")
def enc() -> Any:
    return build_encyclopedia(ROOT / "entries")


@pytest.fixture(scope="module")
def index(enc: Any) -> dict[str, Any]:
    return describe.build_index(exports.entry_record(p, "/") for p in enc.pages.values())


def _queries() -> list[str]:
    queries = [q.text for q in described_queries()] + [q.text for q in typed_queries()]
    queries += [c["query"] for c in VECTORS]
    return queries + [q[:-2] for q in queries if len(q) > 6]  # the last word still being typed


@pytest.fixture(scope="module")
def node_ranked(index: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every query ranked by describe-core.js in one Node process: query -> [[id, score]...]."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    tmp = tmp_path_factory.mktemp("describe")
    queries = _queries()
    (tmp / "index.json").write_text(json.dumps(index, ensure_ascii=False), encoding="utf-8")
    (tmp / "queries.json").write_text(json.dumps(queries, ensure_ascii=False), encoding="utf-8")
    out = subprocess.run(
        ["node", str(NODE), str(tmp / "index.json"), str(tmp / "queries.json")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(zip(queries, json.loads(out), strict=True))


@pytest.mark.parametrize(
    ("word", "stem"),
    [
        ("decreasing", "decreas"),
        ("decrease", "decreas"),
        ("decreased", "decreas"),
        ("running", "run"),
        ("stopped", "stop"),
        ("killed", "kill"),
        ("losses", "loss"),
        ("loss", "loss"),
        ("gpus", "gpu"),
        ("entries", "entry"),
        ("axis", "axis"),
        ("fp16", "fp16"),
        ("显存", "显存"),
    ],
)
def test_stems(word: str, stem: str) -> None:
    assert describe.stem(word) == stem


def test_query_terms_fold_synonyms_drop_stop_words_and_split_chinese_into_bigrams() -> None:
    assert describe.terms("Out of memory when fine-tuning") == ["oom", "memory", "finetun"]
    assert describe.terms("the loss is NaN") == ["loss", "nan"]
    assert describe.terms("显存不足") == ["显存", "存不", "不足"]
    assert describe.terms("all_reduce hangs") == ["allreduc", "all_reduc", "hang"]


@pytest.mark.parametrize(
    ("a", "b", "limit", "within"),
    [
        ("memroy", "memory", 1, True),  # a swap of neighbours is one edit
        ("memry", "memory", 1, True),
        ("memoryy", "memory", 1, True),
        ("mmeory", "memory", 1, True),
        ("dataloadr", "dataloader", 1, True),
        ("dtaloadr", "dataloader", 1, False),
        ("dtaloadr", "dataloader", 2, True),
        ("abc", "xyz", 2, False),
        ("memiry", "memory", 1, True),  # i is o's neighbour on the keyboard
        ("matter", "master", 1, False),  # t is not s's: another word, not a slip
        ("matter", "master", 2, True),
    ],
)
def test_edit_distance(a: str, b: str, limit: int, within: bool) -> None:
    assert (describe.distance(a, b, limit) <= limit) is within


@pytest.mark.parametrize("case", VECTORS, ids=[c["name"] for c in VECTORS])
def test_vectors(case: dict[str, Any], index: dict[str, Any], node_ranked: dict[str, Any]) -> None:
    """Each vector in both halves: its entry among the first `within` results, or no result."""
    python = [r.id for r in describe.rank(index, case["query"])]
    node = [row[0] for row in node_ranked[case["query"]]]
    for ids in (python, node):
        if case["expected"] is None:
            assert ids == []
        else:
            assert case["expected"] in ids[: case["within"]], ids[:5]


def test_both_halves_rank_alike_score_for_score(
    index: dict[str, Any], node_ranked: dict[str, Any]
) -> None:
    differ = []
    for query, node in node_ranked.items():
        python = [[r.id, r.score] for r in describe.rank(index, query)]
        if python != node:
            differ.append((query, python, node))
    assert differ == []


def test_an_index_names_only_active_entries_and_carries_its_word_lists(
    enc: Any, index: dict[str, Any]
) -> None:
    active = [p.id for p in enc.pages.values() if p.entry.status == "active"]
    assert [d["id"] for d in index["docs"]] == active
    assert index["stop"] == list(describe.STOP_WORDS)
    assert [tuple(s) for s in index["synonyms"]] == list(describe.SYNONYMS)
    assert index["params"]["title_bonus"] == describe.TITLE_BONUS
    assert index["params"]["min_score"] == describe.MIN_SCORE


@pytest.mark.parametrize(
    ("tail", "line"),
    [
        ("step 1 loss 2.0\nValueError: bad thing\nexiting\n", "ValueError: bad thing"),
        ("step 1 loss 2.0\nstep 2 loss 1.9\n", "step 2 loss 1.9"),
        ("\n\n", None),
    ],
)
def test_last_error_line(tail: str, line: str | None) -> None:
    assert describe.last_error_line(tail) == line


def test_another_form_of_an_entry_word_is_not_corrected() -> None:
    """`leaking` is not a typo of an entry word one edit away (`leading`): its stem `leak` is
    an entry term, so it is read as itself."""
    vocabulary = {"leading": 3, "leak": 2}
    known = {describe.stem("leak"): 1.0}
    assert describe.correct(["leaking"], vocabulary, False, known) == ["leaking"]
    assert describe.correct(["laeding"], vocabulary, False, known) == ["leading"]
