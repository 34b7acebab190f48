"""The pipeline: an entries folder in, the checked encyclopedia and every generated file of the
site out. The MkDocs plugin, `encyclopedia render` and the other commands all run it; each
stage is a module of its own and this is the one place that calls them in order."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .pages import exports
from .pages.exports import RecordMemo
from .read.common import read_common
from .read.link import Encyclopedia, check_drafts, link
from .read.load import LoadCache, load_all
from .read.problems import EntryError, Problem
from .read.reproduced import RESULTS_FILE, read_results

if TYPE_CHECKING:
    from .pages.render import PageMemo, RenderedPage


@dataclass
class Reuse:
    """Everything a preview keeps from one rebuild to the next, each keyed by what it was made
    from, so that unchanged entries are not read, checked, rendered or serialised again: the
    loaded entry files and their rule results (load.LoadCache), the last text of each generated
    page (render.render_site) and each export record (link.Page.links_key). A one-off build
    passes none and holds nothing after it."""

    loaded: LoadCache = field(default_factory=LoadCache)
    pages: PageMemo = field(default_factory=dict)
    records: RecordMemo = field(default_factory=dict)


@dataclass(frozen=True)
class Site:
    """What the generator adds to a site: Markdown pages, and files served as they are (JSON
    exports, the sharded signature index), each by its path in the docs tree."""

    encyclopedia: Encyclopedia
    pages: tuple[RenderedPage, ...]
    files: dict[str, str]


def build_encyclopedia(entries_dir: Path, cache: LoadCache | None = None) -> Encyclopedia:
    """Load, validate and link everything under `entries_dir`; raise EntryError with every
    problem of every file, or return the encyclopedia. A `cache` reuses unchanged files."""
    if not entries_dir.is_dir():
        raise EntryError(
            [
                Problem(
                    str(entries_dir),
                    1,
                    1,
                    "entries folder not found",
                    "create it, or set `entries_dir` in the plugin's config",
                )
            ]
        )
    # Load: read and validate each file on its own; the files that failed are named, not guessed.
    loaded = load_all(entries_dir, cache)
    # The common failures, if the folder lists them: the home page and the order of every list.
    loaded_ids = {e.id for e in loaded.entries}
    common, common_problems = read_common(entries_dir, loaded_ids, loaded.failed)
    # Link: the checks that span entries (ids, related links, tags, signatures), and the graph.
    memo = cache.rule_problems if cache else None
    encyclopedia, problems = link(
        loaded.categories, loaded.entries, loaded.failed, loaded.tags, memo, common
    )
    # A file that failed validation still names tags and related entries: check those too.
    problems += check_drafts(loaded.drafts, loaded_ids | loaded.failed, loaded.tags)
    # The last reproducer run, if the folder has one, for the pages to report.
    reproduced, results_problems = read_results(entries_dir / RESULTS_FILE)
    everything = [*loaded.problems, *problems, *common_problems, *results_problems]
    if everything:
        raise EntryError(everything)
    return dataclasses.replace(encyclopedia, reproduced=reproduced)


def build_site(
    encyclopedia: Encyclopedia,
    base_url: str,
    edit_url: str | None,
    overrides: Path,
    reuse: Reuse | None = None,
) -> Site:
    """Every page and file the encyclopedia adds to the site."""
    # Render: one Markdown page per entry, category and tag, and the pages that list them.
    pages = render_pages(encyclopedia, edit_url, overrides, reuse)
    # Export: JSON for tools, and the signature index the search box and diagnose page read.
    files = export_files(encyclopedia, base_url, reuse)
    return Site(encyclopedia, pages, files)


def each_site_file(
    encyclopedia: Encyclopedia, base_url: str, edit_url: str | None, overrides: Path
) -> Iterator[tuple[str, str]]:
    """build_site's pages and files one at a time, by their path in the docs tree: a one-off
    build writes each to disk as it comes and holds none of them."""
    from .pages.render import each_page

    # Render, as build_site does, a page at a time.
    for page in each_page(encyclopedia, edit_url, overrides):
        yield page.src_uri, page.markdown
    # Export.
    yield from export_files(encyclopedia, base_url).items()


def render_pages(
    encyclopedia: Encyclopedia,
    edit_url: str | None,
    overrides: Path,
    reuse: Reuse | None = None,
    only: Callable[[str], bool] | None = None,
) -> tuple[RenderedPage, ...]:
    """The generated Markdown pages (build_site's first stage); with `only`, the others are
    not rendered (render.each_page)."""
    # Imported here: the wheel's build step checks and ships the entries with only the loading
    # stages installed (setup.py), without Jinja2 and Pygments.
    from .pages.render import render_site

    memo = reuse.pages if reuse else None
    return tuple(render_site(encyclopedia, edit_url, overrides, memo, only))


def export_files(
    encyclopedia: Encyclopedia, base_url: str, reuse: Reuse | None = None
) -> dict[str, str]:
    """The files served as they are (build_site's second stage), by their path in the site."""
    from .search import errorindex

    records = reuse.records if reuse else None
    return {
        **exports.site_exports(encyclopedia, base_url, records),
        **errorindex.error_index(encyclopedia),
    }


__all__ = [
    "Reuse",
    "Site",
    "build_encyclopedia",
    "build_site",
    "each_site_file",
    "export_files",
    "render_pages",
]
