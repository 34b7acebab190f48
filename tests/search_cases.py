"""The queries the search box is judged on: what a reader pastes (the first error line of every
example log of every entry) and what a reader types (tests/search/typed.json)."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generator import diagnose
from generator.pages import exports
from generator.read.link import Encyclopedia, Page

TYPED = Path(__file__).parent / "search" / "typed.json"
DESCRIBED = Path(__file__).parent / "search" / "described.json"

# How a reader puts a query into the search box, as JavaScript for page.evaluate: typed (one
# input event) or pasted (a paste event, which the box flattens for display and searches whole).
PUT_QUERY = """(query, pasted) => {
  const input = document.querySelector('[data-enc-search-input]');
  input.focus();
  if (pasted) {
    const data = new DataTransfer();
    data.setData('text/plain', query);
    input.value = '';
    input.dispatchEvent(new ClipboardEvent('paste', {clipboardData: data, bubbles: true}));
  } else {
    input.value = query;
    input.dispatchEvent(new Event('input'));
  }
}"""


# Put the query in the box as a reader does, wait for the results of this query to be rendered,
# return the entry ids in order (and whether each is an error match).
RESULTS = (
    """async ([query, pasted]) => {
  const before = document.body.getAttribute('data-enc-search-done');
  ("""
    + PUT_QUERY
    + """)(query, pasted);
  const until = Date.now() + 10000;
  while (document.body.getAttribute('data-enc-search-done') === before && Date.now() < until) {
    await new Promise(r => setTimeout(r, 10));
  }
  return Array.from(document.querySelectorAll('li.md-search-result__item > a'))
    .map(a => ({id: new URL(a.href).pathname.split('/').filter(Boolean).pop(),
                error: a.parentElement.classList.contains('enc-search-error')}));
}"""
)


def ranked(box: Any, query: str, pasted: bool = False) -> list[dict[str, Any]]:
    """The results of `query` in the search box of the open page `box`, in order."""
    return list(box.evaluate(RESULTS, [query, pasted]))


def ranked_ids(box: Any, query: str) -> list[str]:
    return [r["id"] for r in ranked(box, query)]


@dataclass(frozen=True)
class Query:
    text: str
    expected: str
    source: str  # where the query comes from, for failure messages


def first_error_line(log: str, page: Page, index: diagnose.Index) -> str:
    """The line a reader would copy from this log: the first line one of the entry's own
    primary signatures matches, else the first line that says error."""
    result = diagnose.diagnose(index, io.BytesIO(log.encode())).to_json()
    lines = log.splitlines()
    primary = {s.text for s in page.entry.signatures if not s.context}
    for match in result["matches"]:
        if match["id"] == page.id:
            for hit in match["evidence"]:
                if hit["signature"] in primary:
                    return str(lines[hit["line"] - 1]).strip()
    for line in lines:
        if "error" in line.lower():
            return line.strip()
    return lines[0].strip()


def pasted_queries(enc: Encyclopedia) -> list[Query]:
    index = exports.matcher(enc)
    return [
        Query(first_error_line(example.log, page, index), page.id, f"{page.id}#{n}")
        for page in enc.pages.values()
        # An entry no printed text identifies is found by what the reader types (typed.json),
        # not by pasting a line of its logs.
        if page.entry.signatures
        for n, example in enumerate(page.entry.examples)
    ]


def typed_queries() -> list[Query]:
    cases: list[dict[str, Any]] = json.loads(TYPED.read_text())
    return [Query(c["query"], c["expected"], "typed") for c in cases]


@dataclass(frozen=True)
class Described:
    """A real description of a failure (an issue title or forum question, as posted) and the
    entry that fully covers its thread."""

    text: str
    expected: str
    lang: str
    source: str
    held_out: bool  # in the fifth held back before the ranking was tuned


def described_queries() -> list[Described]:
    cases: list[dict[str, Any]] = json.loads(DESCRIBED.read_text(encoding="utf-8"))
    return [
        Described(c["query"], c["expected"], c["lang"], c["source"], c["held_out"]) for c in cases
    ]


def figures(results: list[tuple[Described, list[str]]]) -> list[str]:
    """Top-1 and top-3 for every query, the held-out fifth and each language, as lines."""
    groups = {
        "all": results,
        "held-out": [r for r in results if r[0].held_out],
        "tuned on": [r for r in results if not r[0].held_out],
        "held-out, Chinese": [r for r in results if r[0].held_out and r[0].lang == "zh"],
        "all, Chinese": [r for r in results if r[0].lang == "zh"],
    }
    lines = []
    for name, group in groups.items():
        n = len(group) or 1
        top1 = sum(ids[:1] == [q.expected] for q, ids in group)
        top3 = sum(q.expected in ids[:3] for q, ids in group)
        lines.append(
            f"{name}: {len(group)} queries, top-1 {top1} ({100 * top1 / n:.0f}%), "
            f"top-3 {top3} ({100 * top3 / n:.0f}%)"
        )
    return lines


def with_typo(query: str) -> str | None:
    """`query` with one typo a reader makes: two neighbouring letters swapped in its longest
    word of five letters or more (None when it has none)."""
    words = query.split(" ")
    longest = max(
        (i for i, w in enumerate(words) if len(w) >= 5 and w.isalpha()),
        key=lambda i: len(words[i]),
        default=None,
    )
    if longest is None:
        return None
    w = words[longest]
    middle = len(w) // 2
    words[longest] = w[: middle - 1] + w[middle] + w[middle - 1] + w[middle + 1 :]
    return " ".join(words)
