"""Finish stage: what each built HTML page gets after the builder wrote it. The MkDocs plugin
applies it page by page as MkDocs builds; `encyclopedia finish` applies it to a site another
builder made from `encyclopedia render` (Zensical, which runs no MkDocs plugins)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..read.link import Encyclopedia
from ..read.link import Page as EntryPage
from ..read.problems import Problem
from ..search import fulltext
from . import csp, onpage, seo
from .tree import write_replacing


def finish_page(html: str, entry: EntryPage | None, takes_log: bool) -> str:
    """The entry's FAQ data in the head, and the page's Content-Security-Policy: a page that
    takes a pasted log may connect nowhere."""
    html = onpage.with_onpage(seo.with_faq_data(html, entry))
    return csp.add_policy(html, "'none'" if takes_log else "'self'")


# The element only the diagnose page holds (diagnose_box.md.j2): the page that takes a log.
DIAGNOSE_BOX = '<div class="enc-diagnose"'


# A built page is a few hundred KiB; past this a file is not one (a link to /dev/zero, a dump).
MAX_PAGE_BYTES = 32 * 1024 * 1024


def _pages(site_dir: Path) -> tuple[list[Path], list[Problem]]:
    """The HTML pages under `site_dir`, walked without following a link: a link or a special
    file named like a page is a problem, never opened."""
    pages: list[Path] = []
    problems: list[Problem] = []
    for folder, dirs, files in os.walk(site_dir, followlinks=False):
        for name in sorted(files + [d for d in dirs if d.endswith(".html")]):
            if not name.endswith(".html"):
                continue
            path = Path(folder, name)
            mode = os.lstat(path).st_mode
            if stat.S_ISREG(mode):
                pages.append(path)
                continue
            kind = (
                "a link"
                if stat.S_ISLNK(mode)
                else "a folder"
                if stat.S_ISDIR(mode)
                else "a special file"
            )
            problems.append(
                Problem(
                    str(path),
                    1,
                    1,
                    f"is {kind}, not a page the builder wrote",
                    "remove it and rebuild: the site holds only the builder's own files",
                )
            )
    return sorted(pages), problems


def _read_page(path: Path) -> tuple[str | None, Problem | None]:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as page:
        if not stat.S_ISREG(os.fstat(page.fileno()).st_mode):
            return None, Problem(str(path), 1, 1, "is not a regular file", "remove it and rebuild")
        raw = page.read(MAX_PAGE_BYTES + 1)
    if len(raw) > MAX_PAGE_BYTES:
        return None, Problem(
            str(path),
            1,
            1,
            f"is over {MAX_PAGE_BYTES:,} bytes: not a page",
            "remove it and rebuild",
        )
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as err:
        return None, Problem(
            str(path), 1, err.start + 1, "is not UTF-8 text", "rebuild it: builders write UTF-8"
        )


def finish_site(
    site_dir: Path, enc: Encyclopedia, full_text: bool
) -> tuple[int, str | None, list[Problem]]:
    """Finish every HTML page under `site_dir` (built with directory URLs) and index it with
    Pagefind; returns the number of pages, Pagefind's summary and the files that are not pages
    (reported, left alone; nothing is indexed then). A page already finished (it has a policy)
    is left alone, so running it twice changes nothing. A page is replaced, never written
    through: a link planted where a page was cannot send the write outside the site."""
    entries = {p.url + "index.html": p for p in enc.pages.values()}  # directory URLs
    pages, problems = _pages(site_dir)
    read: list[tuple[Path, str]] = []
    for path in pages:
        html, problem = _read_page(path)
        if problem is not None:
            problems.append(problem)
        elif html is not None and '<meta http-equiv="Content-Security-Policy"' not in html:
            read.append((path, html))
    if problems:
        return 0, None, problems
    for path, html in read:
        rel = path.relative_to(site_dir).as_posix()
        takes_log = DIAGNOSE_BOX in html  # contributor text never holds it unescaped
        html = finish_page(html, entries.get(rel), takes_log)
        write_replacing(path, html.encode("utf-8"))
    summary = fulltext.index_site(site_dir) if full_text else None
    return len(read), summary, []
