"""The queries the search box is judged on: what a reader pastes (the first error line of every
example log of every entry) and what a reader types (tests/search/typed.json)."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generator import diagnose, exports
from generator.link import Encyclopedia, Page

TYPED = Path(__file__).parent / "search" / "typed.json"

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
                    return lines[hit["line"] - 1].strip()
    for line in lines:
        if "error" in line.lower():
            return line.strip()
    return lines[0].strip()


def pasted_queries(enc: Encyclopedia) -> list[Query]:
    index = diagnose.Index.from_export(exports.signature_index(enc, "/"))
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
