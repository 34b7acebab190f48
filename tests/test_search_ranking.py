"""The ranking matrix: queries typed or pasted into the real search box in Chromium.

Pasted: the first error line of every example log of every entry must bring that entry first,
except lines that by themselves name a more general entry (tests/search/shared-lines.json says
why for each), which must still be in the first three. Typed: every short query of
tests/search/typed.json must bring its entry first. The figures are printed (`pytest -s`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from generator.pipeline import build_encyclopedia
from tests.search_cases import (
    Query,
    described_queries,
    figures,
    pasted_queries,
    ranked,
    ranked_ids,
    typed_queries,
    with_typo,
)
from tests.support import ROOT

pytestmark = pytest.mark.browser

SHARED = {
    c["source"]: c["why"] for c in json.loads((ROOT / "tests/search/shared-lines.json").read_text())
}


@pytest.fixture(scope="module")
def box(chromium: Any, shipped_url: str) -> Iterator[Any]:
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(shipped_url + "/")
    yield page
    context.close()


def _matrix(box: Any, queries: list[Query], label: str) -> list[tuple[Query, list[str]]]:
    results = [(q, [r["id"] for r in ranked(box, q.text)]) for q in queries]
    top1 = sum(ids[:1] == [q.expected] for q, ids in results)
    top3 = sum(q.expected in ids[:3] for q, ids in results)
    n = len(results)
    print(
        f"\n{label}: {n} queries, top-1 {top1} ({100 * top1 / n:.0f}%), "
        f"top-3 {top3} ({100 * top3 / n:.0f}%)"
    )
    return results


def test_pasted_first_error_lines_bring_their_entry_first(box: Any) -> None:
    queries = pasted_queries(build_encyclopedia(ROOT / "entries"))
    misses = []
    for q, ids in _matrix(box, queries, "pasted error lines"):
        wanted = ids[:3] if q.source in SHARED else ids[:1]
        if q.expected not in wanted:
            misses.append(f"{q.source}: {q.text[:100]!r} -> {ids[:3]}")
    assert misses == []
    # The exceptions are still real: each is a line another entry rightly comes first for.
    by_source = {q.source: q for q in queries}
    for source in SHARED:
        assert source in by_source, f"shared-lines.json names {source}, which no longer exists"
        assert ranked(box, by_source[source].text)[0]["id"] != by_source[source].expected


def test_typed_queries_bring_their_entry_first(box: Any) -> None:
    misses = [
        f"{q.text!r} -> {ids[:3]}, expected {q.expected}"
        for q, ids in _matrix(box, typed_queries(), "typed queries")
        if ids[:1] != [q.expected]
    ]
    assert misses == []


# The held-back fifth of tests/search/described.json (real issue titles and forum questions,
# never used to tune the ranking) and its Chinese part: the levels the ranking reached when it
# was last measured (scripts/search_described.py prints the figures with the misses).
HELD_OUT_TOP1 = 0.8
HELD_OUT_TOP3 = 0.91
HELD_OUT_CHINESE_TOP1 = 0.7


def test_described_queries_bring_their_entry_first(box: Any) -> None:
    results = [(q, ranked_ids(box, q.text)) for q in described_queries()]
    print("\n" + "\n".join(figures(results)))
    held = [(q, ids) for q, ids in results if q.held_out]
    chinese = [(q, ids) for q, ids in held if q.lang == "zh"]

    def share(group: list[Any], n: int) -> float:
        return sum(q.expected in ids[:n] for q, ids in group) / len(group)

    assert share(held, 1) >= HELD_OUT_TOP1
    assert share(held, 3) >= HELD_OUT_TOP3
    assert share(chinese, 1) >= HELD_OUT_CHINESE_TOP1


def test_a_typo_keeps_a_typed_query_in_the_first_three(box: Any) -> None:
    misses = []
    for q in typed_queries():
        typo = with_typo(q.text)
        if typo is None:
            continue
        ids = ranked_ids(box, typo)
        if q.expected not in ids[:3]:
            misses.append(f"{typo!r} -> {ids[:3]}, expected {q.expected}")
    assert misses == []


def test_a_pasted_traceback_finds_its_entry_first_marked_as_matching(box: Any) -> None:
    log = next(
        e.log for e in build_encyclopedia(ROOT / "entries").pages["nccl-timeout"].entry.examples
    )
    results = ranked(box, log, pasted=True)
    assert results[0] == {"id": "nccl-timeout", "error": True}
    shown = box.input_value("[data-enc-search-input]")
    assert "\n" not in shown and shown.split()[:3] == log.split()[:3]


def test_slash_opens_the_box_and_escape_closes_it(chromium: Any, shipped_url: str) -> None:
    page = chromium.new_page()
    page.goto(shipped_url + "/memory/cuda-out-of-memory/")
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.matches('[data-enc-search-input]')")
    assert page.is_checked("#__search")
    page.keyboard.type("nccl timeout")
    page.wait_for_selector("li.md-search-result__item a")
    page.keyboard.press("ArrowDown")
    assert page.evaluate("document.activeElement.closest('.md-search-result__item') !== null")
    page.keyboard.press("Escape")
    assert not page.is_checked("#__search")
    page.close()


def test_filters_narrow_both_kinds_of_result(box: Any) -> None:
    box.wait_for_selector(".enc-search-filters:not([hidden])")
    box.select_option("[data-enc-filter=category]", "Distributed")
    try:
        ids = [r["id"] for r in ranked(box, "CUDA error: an illegal memory access was encountered")]
        distributed = {p.stem for p in (ROOT / "entries" / "distributed").glob("*.yaml")}
        assert ids and set(ids) <= distributed, ids
    finally:
        box.select_option("[data-enc-filter=category]", "")


def test_the_diagnose_page_has_no_search_box(chromium: Any, shipped_url: str) -> None:
    page = chromium.new_page()
    page.goto(shipped_url + "/diagnose/")
    assert page.locator("[data-enc-search-input]").count() == 0
    page.close()


def test_every_search_request_stays_on_the_site(chromium: Any, shipped_url: str) -> None:
    page = chromium.new_page()
    hosts: list[str] = []
    page.on("request", lambda r: hosts.append(r.url.split("/")[2]))
    page.goto(shipped_url + "/")
    ranked(page, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    assert set(hosts) == {shipped_url.split("/")[2]}
    page.close()


def test_the_matrix_is_not_empty() -> None:
    assert len(pasted_queries(build_encyclopedia(ROOT / "entries"))) >= 150
    assert len(typed_queries()) >= 30


def test_excerpts_carry_no_permalink_sign(box: Any) -> None:
    ranked(box, "GPU memory keeps growing")
    texts = box.eval_on_selector_all(
        "li.md-search-result__item", "els => els.map(e => e.innerText)"
    )
    assert texts and not [t for t in texts if "\u00b6" in t]


def test_the_focused_result_is_visibly_outlined(chromium: Any, shipped_url: str) -> None:
    page = chromium.new_page()
    page.goto(shipped_url + "/")
    page.keyboard.press("/")
    page.keyboard.type("nccl timeout")
    page.wait_for_selector("li.md-search-result__item a")
    page.keyboard.press("ArrowDown")
    outline = page.evaluate(
        "(() => { const s = getComputedStyle(document.activeElement);"
        " return [s.outlineStyle, parseFloat(s.outlineWidth)]; })()"
    )
    assert outline[0] != "none" and outline[1] > 0
    page.close()


def test_the_placeholder_shows_its_paste_cue_at_desktop_and_phone_width(
    chromium: Any, shipped_url: str
) -> None:
    for width in (1280, 390):
        page = chromium.new_page(viewport={"width": width, "height": 800})
        page.goto(shipped_url + "/")
        if width < 1000:
            page.click("label[for=__search]")
        fits = page.evaluate(
            """(() => {
              const input = document.querySelector('[data-enc-search-input]');
              const s = getComputedStyle(input);
              const ctx = document.createElement('canvas').getContext('2d');
              ctx.font = s.font;
              const room =
                input.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight);
              return [input.placeholder, ctx.measureText('Paste an error').width <= room];
            })()"""
        )
        assert fits[0].startswith("Paste an error") and fits[1], (width, fits)
        page.close()


def test_the_list_does_not_blank_while_the_next_query_loads(box: Any) -> None:
    """A typed query with no error match: the previous results stay until the full-text ones
    replace them."""
    ranked(box, "CUDA out of memory")
    box.evaluate(
        """() => {
          const list = document.querySelector('[data-enc-search-list]');
          window.__blanked = false;
          window.__observer = new MutationObserver(() => {
            if (!list.querySelector('li')) window.__blanked = true;
          });
          window.__observer.observe(list, {childList: true});
        }"""
    )
    ids = [r["id"] for r in ranked(box, "training gets slower over time")]
    blanked = box.evaluate("(() => { window.__observer.disconnect(); return window.__blanked; })()")
    assert ids and not blanked
