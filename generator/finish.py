"""Finish stage: what each built HTML page gets after the builder wrote it. The MkDocs plugin
applies it page by page as MkDocs builds; `encyclopedia finish` applies it to a site another
builder made from `encyclopedia render` (Zensical, which runs no MkDocs plugins)."""

from __future__ import annotations

from pathlib import Path

from . import csp, fulltext, seo
from .link import Encyclopedia
from .link import Page as EntryPage


def finish_page(html: str, entry: EntryPage | None, takes_log: bool) -> str:
    """The entry's FAQ data in the head, and the page's Content-Security-Policy: a page that
    takes a pasted log may connect nowhere."""
    html = seo.with_faq_data(html, entry)
    return csp.add_policy(html, "'none'" if takes_log else "'self'")


# The element only the diagnose page holds (diagnose_box.md.j2): the page that takes a log.
DIAGNOSE_BOX = '<div class="enc-diagnose"'


def finish_site(site_dir: Path, enc: Encyclopedia, full_text: bool) -> tuple[int, str | None]:
    """Finish every HTML page under `site_dir` (built with directory URLs) and index it with
    Pagefind; returns the number of pages and Pagefind's summary. A page already finished (it
    has a policy) is left alone, so running it twice changes nothing."""
    entries = {p.url + "index.html": p for p in enc.pages.values()}  # directory URLs
    count = 0
    for path in sorted(site_dir.rglob("*.html")):
        rel = path.relative_to(site_dir).as_posix()
        html = path.read_text(encoding="utf-8")
        if '<meta http-equiv="Content-Security-Policy"' in html:
            continue
        takes_log = DIAGNOSE_BOX in html  # contributor text never holds it unescaped
        path.write_text(finish_page(html, entries.get(rel), takes_log), encoding="utf-8")
        count += 1
    summary = fulltext.index_site(site_dir) if full_text else None
    return count, summary
