"""The search box's sharded signature index: a query's own words name every shard a matching
signature can be in, so the sharded search finds exactly what the whole index finds."""

from __future__ import annotations

import base64
import io
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generator import diagnose
from generator.diagnose import from_entries
from generator.pages import exports
from generator.pipeline import build_encyclopedia
from generator.read import pattern
from generator.read.link import Encyclopedia
from generator.search import errorindex
from tests.search_cases import pasted_queries, typed_queries
from tests.support import ROOT

NODE_SCRIPT = Path(__file__).parent / "js" / "search_node.js"


@pytest.fixture(scope="module")
def shipped() -> Encyclopedia:
    return build_encyclopedia(ROOT / "entries")


@pytest.mark.parametrize(
    ("signature", "expected"),
    [
        ("CUDA out of memory. Tried to allocate", "w:memory"),  # "allocate" meets the edge
        ("CUDA out of memory. Tried to allocate *", "w:allocate"),  # the space bounds it
        ("*.so: undefined symbol: *", "w:undefined"),
        ("cudaErrorIllegalAddress", "g:cudaerrorill"),  # both ends open: a gram inside a word
        ("in _lazy_init", "p:_lazy_init"),  # a word begins with "_lazy_init"; "in" is too short
        ("NVRM: Xid", "s:nvrm"),  # a word ends with "NVRM"; "Xid" is too short
        ("ab", None),
    ],
)
def test_key_is_the_cheapest_word_every_match_holds(signature: str, expected: str | None) -> None:
    assert errorindex.key(signature) == expected


def test_query_keys_cover_whole_words_affixes_and_grams() -> None:
    keys = errorindex.query_keys("x cudaErrorIllegalAddress!")
    assert {"w:x", "w:cudaerrorillegaladdress", "p:cuda", "s:ress", "g:rill"} <= keys
    assert {"p:cudaerrorill", "s:egaladdress", "g:errorillegal"} <= keys
    assert "p:x" not in keys  # shorter than a gram
    assert "g:cudaerrorilleg" not in keys  # longer than GRAM_MAX


_WORDS = st.text(alphabet="abcXYZ019_", min_size=1, max_size=8)
_GLUE = st.sampled_from([" ", ".", ": ", "(", ")", "/", "-", "  ", "'"])


@st.composite
def _signature_and_text(draw: st.DrawFn) -> tuple[str, str]:
    parts = draw(st.lists(st.tuples(_WORDS, _GLUE), min_size=1, max_size=5))
    stars = draw(st.sets(st.integers(0, len(parts)), max_size=2))
    signature, filled = "", ""
    for n, (word, glue) in enumerate(parts):
        if n in stars:
            signature += "*"
            filled += draw(_WORDS)
        signature += word + glue
        filled += word + glue
    signature, filled = signature.rstrip(), filled.rstrip()
    before, after = draw(_WORDS), draw(_WORDS)
    return signature, draw(st.sampled_from(["", " "])).join([before, filled, after])


@settings(max_examples=400, deadline=None)
@given(_signature_and_text())
def test_every_text_a_signature_matches_yields_its_key(case: tuple[str, str]) -> None:
    signature, text = case
    compiled = diagnose.compiled(signature)
    if not compiled or pattern.match(compiled, diagnose.normalise(text)) is None:
        return
    found = errorindex.key(signature)
    assert found is None or found in errorindex.query_keys(text), (signature, text, found)


def test_every_evidence_line_of_every_example_yields_its_signature_key(
    shipped: Encyclopedia,
) -> None:
    index = exports.matcher(shipped)
    checked = 0
    for page in shipped.pages.values():
        for example in page.entry.examples:
            lines = example.log.splitlines()
            result = diagnose.diagnose(index, io.BytesIO(example.log.encode())).to_json()
            for match in result["matches"]:
                for hit in match["evidence"]:
                    # A hit may join its line with the next one (a wrapped message).
                    around = "\n".join(lines[hit["line"] - 1 : hit["line"] + 1])
                    found = errorindex.key(hit["signature"])
                    assert found is None or found in errorindex.query_keys(around), hit
                    checked += 1
    assert checked > 300


def test_shards_hold_every_signature_once_in_order(shipped: Encyclopedia) -> None:
    files = errorindex.error_index(shipped)
    meta = json.loads(files["search/errors/meta.json"])
    rows, names = list(meta["signatures"]), dict(meta["entries"])
    for space in ("w", "g"):
        for n in range(meta["shards"][space]):
            shard = json.loads(files[f"search/errors/{space}{n}.json"])
            rows += shard["signatures"]
            names.update(shard["entries"])
    rows = [[names[str(r[0])][0], r[1], r[2], r[3], bool(r[4]), *r[5:]] for r in rows]
    # Symptom signatures come after the entry's own and carry their condition and symptom.
    expected = [
        [page.id, at, sig["text"], sig["weight"], sig["context"]]
        + (
            [{k: sig[k] for k in ("when", "symptom") if k in sig}]
            if "when" in sig or "symptom" in sig
            else []
        )
        for page in shipped.pages.values()
        if page.entry.status == "active"
        for at, sig in enumerate(from_entries.signatures(page))
    ]
    assert any(len(r) == 6 for r in expected)
    assert sorted(rows, key=lambda r: (r[0], r[1])) == sorted(expected, key=lambda r: (r[0], r[1]))
    assert len(files) == 1 + sum(meta["shards"].values())


def test_every_entry_has_one_card_where_its_id_points(shipped: Encyclopedia) -> None:
    files = errorindex.error_index(shipped)
    count = json.loads(files["search/errors/meta.json"])["shards"]["c"]
    cards = {n: json.loads(files[f"search/errors/c{n}.json"]) for n in range(count)}
    for page in shipped.pages.values():
        card = cards[errorindex.fnv1a(page.id) % count][page.id]
        assert (card["title"], card["url"]) == (page.entry.title, page.url)
    assert sum(len(c) for c in cards.values()) == len(shipped.pages)


def test_shard_counts_grow_with_the_index() -> None:
    assert errorindex.shard_count(1000, 12 * 1024) == 1
    assert errorindex.shard_count(100 * 1024, 12 * 1024) == 16
    assert errorindex.shard_count(10**12, 12 * 1024) == 4096


def _without_urls(matches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in m.items() if k != "url"} for m in matches]


def test_sharded_search_in_javascript_finds_what_the_whole_index_finds(
    shipped: Encyclopedia, tmp_path: Path
) -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node not found")
    site = tmp_path / "site"
    for name, content in errorindex.error_index(shipped).items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_text(content)
    cases: dict[str, str] = {}
    for n, query in enumerate(pasted_queries(shipped) + typed_queries()):
        cases[f"query {n}"] = query.text
    for page in shipped.pages.values():
        for n, example in enumerate(page.entry.examples):
            cases[f"{page.id}#{n}"] = example.log
    cases["ansi"] = "\x1b[31mCUDA error: an illegal memory access was encountered\x1b[0m"
    cases["crlf"] = (
        "Traceback (most recent call last):\r\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\r\n"
    )
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    done = subprocess.run(
        [node, str(NODE_SCRIPT), str(site), str(tmp_path / "cases.json")],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    results = json.loads(done.stdout)
    index = exports.matcher(shipped)
    count = sum(json.loads((site / "search/errors/meta.json").read_text())["shards"].values())
    typed = {f"query {n}" for n in range(len(cases)) if f"query {n}" in cases}
    loaded = []
    for name, text in cases.items():
        expected = diagnose.diagnose(index, io.BytesIO(text.encode())).to_json()["matches"]
        assert _without_urls(results[name]["matches"]) == _without_urls(expected), name
        plain = re.sub(r"\x1b\[[0-9;]*m", "", text)
        assert set(results[name]["keys"]) == errorindex.query_keys(plain), name
        if name in typed and len(text) < 40:
            loaded.append(len(results[name]["shards"]))
    # A short query loads a part of the index, not all of it.
    assert loaded and sorted(loaded)[len(loaded) // 2] < count


def _holds(filter_: dict[str, Any], key: str) -> bool:
    bits = base64.b64decode(filter_["bits"])
    return all(
        bits[bit // 8] >> (bit % 8) & 1 for bit in errorindex.bloom_bits(key, filter_["size"])
    )


def test_the_key_filter_holds_every_filed_key_and_few_others(shipped: Encyclopedia) -> None:
    files = errorindex.error_index(shipped)
    filter_ = json.loads(files["search/errors/meta.json"])["bloom"]
    filed = {
        k
        for p in shipped.pages.values()
        for s in from_entries.signatures(p)
        if (k := errorindex.key(s["text"]))
    }
    assert all(_holds(filter_, k) for k in filed)
    others = [f"w:word{n}" for n in range(5000)]
    assert sum(_holds(filter_, k) for k in others) < 0.03 * len(others)
