"""Machine-readable exports: the same files for the site (site/api/) and `encyclopedia export`."""

from __future__ import annotations

import json
from typing import Any

from .link import Encyclopedia, Page
from .schema import schema_text

API_DIR = "api"


def _url(base: str, page_url: str) -> str:
    return base.rstrip("/") + "/" + page_url


def entry_record(page: Page, base: str) -> dict[str, Any]:
    data = page.entry.model_dump(mode="json", exclude_none=True)
    data.pop("id", None)
    data.update(
        id=page.id,
        category=page.category,
        url=_url(base, page.url),
        source=page.path,
        related=[{"id": l.page.id, "relation": l.relation, "why": l.why,
                  "url": _url(base, l.page.url)} for l in page.related],
        referenced_by=[{"id": l.page.id, "relation": l.relation, "why": l.why,
                        "url": _url(base, l.page.url)} for l in page.referenced_by],
    )
    data["signatures"] = [{"text": s.text, "weight": s.score, "context": s.context}
                          for s in page.entry.signatures]
    return data


def _dump(value: Any) -> str:
    return json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def export_files(enc: Encyclopedia, base: str) -> dict[str, str]:
    """File name -> content of every export, deterministic for the same entries."""
    pages = list(enc.pages.values())
    return {
        "entries.json": _dump([entry_record(p, base) for p in pages]),
        "signatures.json": _dump([
            {"id": p.id, "title": p.entry.title, "url": _url(base, p.url),
             "severity": p.entry.severity,
             "signatures": [{"text": s.text, "weight": s.score, "context": s.context}
                            for s in p.entry.signatures]}
            for p in pages if p.entry.status == "active"]),
        "schema.json": schema_text(),
        "categories.json": _dump([
            {"slug": c.slug, "title": c.category.title, "description": c.category.description,
             "order": c.category.order, "url": _url(base, c.url),
             "entries": [p.id for p in c.pages]} for c in enc.categories]),
        "tags.json": _dump({tag: [p.id for p in tagged] for tag, tagged in enc.tags.items()}),
    }


def site_exports(enc: Encyclopedia, base: str) -> dict[str, str]:
    """The exports as site files: under api/, plus the schema where entry templates point."""
    files = {f"{API_DIR}/{name}": text for name, text in export_files(enc, base).items()}
    files["schema/entry.schema.json"] = schema_text()
    return files
