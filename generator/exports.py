"""Machine-readable exports: the same files for the site (site/api/) and `encyclopedia export`."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .link import INVERSE, Encyclopedia, Link, Page
from .model import Signature, Symptom
from .pattern import parse_condition
from .schema import schema_text

API_DIR = "api"


def _url(base: str, page_url: str) -> str:
    return base.rstrip("/") + "/" + page_url


def _link(link: Link, base: str) -> dict[str, str]:
    return {
        "id": link.page.id,
        "relation": link.relation,
        "why": link.why,
        "url": _url(base, link.page.url),
    }


def entry_record(page: Page, base: str) -> dict[str, Any]:
    data = page.entry.model_dump(mode="json", exclude_none=True)
    data.pop("id", None)
    data.update(
        id=page.id,
        category=page.category,
        url=_url(base, page.url),
        source=page.path,
        related=[_link(link, base) for link in page.related],
        referenced_by=[_link(link, base) for link in page.referenced_by],
    )
    data["signatures"] = signatures(page)
    return data


def _signature(sig: Signature, symptom: Symptom | None = None) -> dict[str, Any]:
    record: dict[str, Any] = {"text": sig.text, "weight": sig.score, "context": sig.context}
    condition = parse_condition(sig.when) if sig.when else None
    if condition is not None:
        record["when"] = condition.export()
    if symptom is not None:
        record["symptom"] = {"symptom": symptom.symptom, "cause": symptom.cause}
    return record


def signatures(page: Page) -> list[dict[str, Any]]:
    """The entry's signatures, then those of its symptoms (a match of one names the symptom)."""
    return [_signature(s) for s in page.entry.signatures] + [
        _signature(s, symptom) for symptom in page.entry.symptoms for s in symptom.signatures
    ]


def causes(page: Page) -> list[str]:
    """The entries this one causes: a match of one of those next to this one is collateral."""
    found = {link.page.id for link in page.related if link.relation == "leads-to"}
    found |= {
        link.page.id for link in page.referenced_by if link.relation == INVERSE["often-caused-by"]
    }
    return sorted(found)


def signature_record(page: Page, base: str) -> dict[str, Any]:
    """One entry of the diagnose index: its signatures and the entries it causes."""
    return {
        "id": page.id,
        "title": page.entry.title,
        "url": _url(base, page.url),
        "severity": page.entry.severity,
        # What a result says to do (the diagnose page and the CLI show it under the title).
        "summary": page.entry.summary,
        "first_step": page.entry.fix.steps[0],
        "causes": causes(page),
        "signatures": signatures(page),
    }


def signature_index(enc: Encyclopedia, base: str) -> list[dict[str, Any]]:
    """The diagnose index (api/signatures.json): every active entry's signature record."""
    return [signature_record(p, base) for p in enc.pages.values() if p.entry.status == "active"]


def _dump(value: Any) -> str:
    return json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


RecordMemo = dict[tuple[str, str, str], tuple[Any, tuple[Any, ...], str]]


def _record_texts(
    kind: str,
    pages: list[Page],
    base: str,
    make: Callable[[Page, str], dict[str, Any]],
    memo: RecordMemo | None,
    compact: bool = False,
) -> str:
    """`_dump` of `[make(page, base) for page in pages]`, byte for byte, from per-page texts;
    `compact`: the same JSON with no indentation or spaces (what a page loads as a script).
    `memo` (a preview's) holds each page's last text with what it was made from: the entry
    record by identity (held there so that its id cannot be reused) and its links by value."""
    if not pages:
        return "[]" if compact else "[]\n"
    texts = []
    for page in pages:
        key = (page.category, page.path, page.links_key)
        slot = (kind + (" compact" if compact else ""), page.id, base)
        last = memo.get(slot) if memo is not None else None
        if last is None or last[0] is not page.entry or last[1] != key:
            record = make(page, base)
            if compact:
                text = json.dumps(record, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
            else:
                text = json.dumps(record, indent=1, sort_keys=True, ensure_ascii=False)
                text = " " + text.replace("\n", "\n ")
            last = (page.entry, key, text)
            if memo is not None:
                memo[slot] = last
        texts.append(last[2])
    if compact:
        return "[" + ",".join(texts) + "]"
    return "[\n" + ",\n".join(texts) + "\n]\n"


def export_files(enc: Encyclopedia, base: str, memo: RecordMemo | None = None) -> dict[str, str]:
    """File name -> content of every export, deterministic for the same entries."""
    pages = list(enc.pages.values())
    active = [p for p in pages if p.entry.status == "active"]
    return {
        "entries.json": _record_texts("entry", pages, base, entry_record, memo),
        "signatures.json": _record_texts("signatures", active, base, signature_record, memo),
        "schema.json": schema_text(),
        "categories.json": _dump(
            [
                {
                    "slug": c.slug,
                    "title": c.category.title,
                    "description": c.category.description,
                    "order": c.category.order,
                    "url": _url(base, c.url),
                    "entries": [p.id for p in c.pages],
                }
                for c in enc.categories
            ]
        ),
        "tags.json": _dump(
            {
                tag: {"about": enc.tag_about.get(tag), "entries": [p.id for p in tagged]}
                for tag, tagged in enc.tags.items()
            }
        ),
    }


def site_exports(enc: Encyclopedia, base: str, memo: RecordMemo | None = None) -> dict[str, str]:
    """The exports as site files: under api/, plus the schema where entry templates point."""
    files = {f"{API_DIR}/{name}": text for name, text in export_files(enc, base, memo).items()}
    files["schema/entry.schema.json"] = schema_text()
    # The diagnose page loads the index as a script (it may not make any network connection),
    # as compact JSON: about half the bytes of the indented export.
    active = [p for p in enc.pages.values() if p.entry.status == "active"]
    compact = _record_texts("signatures", active, base, signature_record, memo, compact=True)
    files[f"{API_DIR}/signatures.js"] = "self.DIAGNOSE_INDEX = " + compact + ";\n"
    return files
