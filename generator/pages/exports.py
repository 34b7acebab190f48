"""Machine-readable exports: the same files for the site (site/api/) and `encyclopedia export`."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from typing import Any

from .. import diagnose
from ..diagnose.from_entries import signature_index as signature_index
from ..diagnose.from_entries import signature_record, signatures
from ..read.link import Encyclopedia, Link, Page, under
from ..read.schema import schema_text
from ..search import describe

API_DIR = "api"


def _link(link: Link, base: str) -> dict[str, str]:
    return {
        "id": link.id,
        "relation": link.relation.value,
        "why": link.why,
        "url": under(base, link.url),
    }


def entry_record(page: Page, base: str) -> dict[str, Any]:
    data = page.entry.model_dump(mode="json", exclude_none=True)
    data.pop("id", None)
    data.update(
        id=page.id,
        category=page.category,
        url=under(base, page.url),
        source=page.path,
        related=[_link(link, base) for link in page.related],
        referenced_by=[_link(link, base) for link in page.referenced_by],
    )
    data["signatures"] = signatures(page)
    return data


def matcher(enc: Encyclopedia, base: str = "/") -> diagnose.Index:
    """The matcher built from the encyclopedia's signature records, as the CLI builds it from
    the exported index."""
    return diagnose.Index.from_export(signature_index(enc, base))


def _dump(value: Any) -> str:
    return json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


RecordMemo = dict[tuple[str, str, str], tuple[Any, tuple[Any, ...], str]]


def _memoised(
    slot: tuple[str, str, str], page: Page, memo: RecordMemo | None, text: Callable[[], str]
) -> str:
    """`text()`, or its last value in `memo` (a preview's) when made from the same entry record
    (by identity: held there so that its id cannot be reused) and the same links (by value)."""
    key = (page.category, page.path, page.links_key)
    last = memo.get(slot) if memo is not None else None
    if last is None or last[0] is not page.entry or last[1] != key:
        last = (page.entry, key, text())
        if memo is not None:
            memo[slot] = last
    return str(last[2])


def _record_texts(
    kind: str,
    pages: list[Page],
    base: str,
    make: Callable[[Page, str], Mapping[str, Any]],
    memo: RecordMemo | None,
    compact: bool = False,
) -> str:
    """`_dump` of `[make(page, base) for page in pages]`, byte for byte, from per-page texts;
    `compact`: the same JSON with no indentation or spaces (what a page loads as a script)."""
    if not pages:
        return "[]" if compact else "[]\n"

    def text(page: Page) -> str:
        record = make(page, base)
        if compact:
            return json.dumps(record, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
        return " " + json.dumps(record, indent=1, sort_keys=True, ensure_ascii=False).replace(
            "\n", "\n "
        )

    slot = kind + (" compact" if compact else "")
    texts = [_memoised((slot, p.id, base), p, memo, functools.partial(text, p)) for p in pages]
    if compact:
        return "[" + ",".join(texts) + "]"
    return "[\n" + ",\n".join(texts) + "\n]\n"


def _entry_file(page: Page, base: str) -> str:
    return _dump(entry_record(page, base))


def summary_record(page: Page, base: str) -> dict[str, Any]:
    """An entry in the site's list of entries: what names it, and where its record is."""
    return {
        "id": page.id,
        "title": page.entry.title,
        "category": page.category,
        "severity": page.entry.severity,
        "status": page.entry.status,
        "url": under(base, page.url),
        "record": under(base, record_path(page)),
    }


def record_path(page: Page) -> str:
    """Where the site serves an entry's whole record."""
    return f"{API_DIR}/entries/{page.id}.json"


def export_files(
    enc: Encyclopedia, base: str, memo: RecordMemo | None = None, whole: bool = True
) -> dict[str, str]:
    """File name -> content of every export, deterministic for the same entries. `whole`: the
    entries' records in one entries.json (what `encyclopedia export` writes); otherwise
    entries.json lists the entries and each record is a file of its own (the site's)."""
    pages = list(enc.pages.values())
    active = [p for p in pages if p.entry.status == "active"]
    if whole:
        entries = {"entries.json": _record_texts("entry", pages, base, entry_record, memo)}
    else:
        entries = {"entries.json": _record_texts("summary", pages, base, summary_record, memo)}
        for page in pages:
            made = functools.partial(_entry_file, page, base)
            text = _memoised(("entry file", page.id, base), page, memo, made)
            entries[record_path(page).removeprefix(API_DIR + "/")] = text
    return {
        **entries,
        "signatures.json": _record_texts("signatures", active, base, signature_record, memo),
        "schema.json": schema_text(),
        "categories.json": _dump(
            [
                {
                    "slug": c.slug,
                    "title": c.category.title,
                    "description": c.category.description,
                    "order": c.category.order,
                    "url": under(base, c.url),
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
    # The site lists the entries in entries.json and serves each record on its own: one file
    # of every record would be over 100 MB at 5,000 entries.
    exported = export_files(enc, base, memo, whole=False)
    files = {f"{API_DIR}/{name}": text for name, text in exported.items()}
    files["schema/entry.schema.json"] = schema_text()
    # The diagnose page loads the index as a script (it may not make any network connection),
    # as compact JSON: about half the bytes of the indented export.
    active = [p for p in enc.pages.values() if p.entry.status == "active"]
    compact = _record_texts("signatures", active, base, signature_record, memo, compact=True)
    files[f"{API_DIR}/signatures.js"] = "self.DIAGNOSE_INDEX = " + compact + ";\n"
    # The described-query index: the search box fetches it, the diagnose page (no network
    # connection) loads it as a script when no signature matched, for the closest pages.
    # Its links are relative to the site's root, like the error index's cards, and it names a
    # category by its title, as the search box's filter does.
    titles = {c.slug: c.category.title for c in enc.categories}
    described = _compact(
        describe.build_index(
            dict(entry_record(p, base), url=p.url, category=titles[p.category])
            for p in enc.pages.values()
        )
    )
    files[DESCRIBED_JSON] = described + "\n"
    files[f"{API_DIR}/described.js"] = "self.DESCRIBED_INDEX = " + described + ";\n"
    return files


DESCRIBED_JSON = "search/described.json"


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
