"""The preview's quick rebuild: after an edit to entry files alone, rebuild only the pages and
files whose content changed, through MkDocs' own page build, instead of a whole dirty build.

A dirty build of MkDocs still reads the config again, lists and sorts every file, builds the
navigation and reads every page's state: about 2 s at 1,000 entries before any page is written.
When only entries changed and the site keeps its shape (the same generated files, the same
categories in the navigation), nothing but the generated files can differ, and each of those is
rebuilt exactly as the full build builds it. Anything else (a broken entry, a new or removed
entry, a renamed category, an edit to mkdocs.yml, a hand-written page, a template or the
theme's overrides) takes the full build.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import get_plugin_logger
from mkdocs.structure.files import Files
from mkdocs.structure.nav import Navigation
from mkdocs.structure.pages import Page

from .link import Encyclopedia
from .load import LoadCache
from .model import Entry
from .pipeline import Reuse, build_encyclopedia, export_files, render_pages
from .problems import EntryError

log = get_plugin_logger("generator.plugin")

Fingerprint = tuple[tuple[str, int, int], ...]


def fingerprint(paths: Iterable[Path]) -> Fingerprint:
    """Every file under `paths` (files or folders) with its modification time and size."""
    found: list[tuple[str, int, int]] = []
    for path in paths:
        if path.is_file():
            stat = path.stat()
            found.append((str(path), stat.st_mtime_ns, stat.st_size))
            continue
        for folder, dirs, names in os.walk(path):
            dirs.sort()
            for name in sorted(names):
                full = os.path.join(folder, name)
                try:
                    stat = os.stat(full)
                except OSError:
                    continue  # removed while we looked: the next look sees it gone
                found.append((full, stat.st_mtime_ns, stat.st_size))
    return tuple(found)


@dataclass(frozen=True)
class LastBuild:
    """What the last full build of a preview left, for the quick rebuilds that follow it."""

    config: MkDocsConfig
    files: Files
    nav: Navigation
    env: Any  # the theme's jinja2.Environment after every plugin's `on_env`
    inputs: Fingerprint  # the files besides the entries the build read
    shape: tuple[Any, ...]  # what a quick rebuild cannot change: see `shape`


def shape(enc: Encyclopedia, pages: dict[str, str]) -> tuple[Any, ...]:
    """What a quick rebuild cannot change: the generated pages there are, and the categories
    the navigation shows."""
    return (frozenset(pages), tuple((c.slug, c.category.title) for c in enc.categories))


@dataclass(frozen=True)
class Site:
    """Where the preview's entries, templates and site are, as the plugin is configured."""

    entries: Path
    overrides: Path
    edit_url: str | None
    base_url: str


def _full_because(reason: str) -> bool:
    log.debug(f"full rebuild: {reason}")
    return False


def write_pages(last: LastBuild, changed: dict[str, str]) -> None:
    """Give each changed generated page its new Markdown and build it as the full build does:
    through every plugin's page events and the theme, into the site folder."""
    # MkDocs' own steps for one page; private, and stable: MkDocs 1.6 is the last 1.x.
    from mkdocs.commands.build import _build_page, _populate_page
    from mkdocs.structure.files import InclusionLevel

    pages: list[Page] = []
    for name, content in changed.items():
        file = last.files.get_file_from_path(name)
        if file is None or not isinstance(file.page, Page):
            raise LookupError(f"{name} is not a page of the last build")
        file.content_string = content
        pages.append(file.page)
    doc_files = last.files.documentation_pages(inclusion=InclusionLevel.is_in_serve)
    # Read every changed page before writing any, as a full build does.
    for page in pages:
        _populate_page(page, last.config, last.files)
    for page in pages:
        _build_page(page, last.config, doc_files, last.nav, last.env)


def write_files(site_dir: Path, changed: dict[str, str]) -> None:
    """Files served as they are (exports, index shards): written where the full build puts them
    (a shard that a full build would no longer make stays until the next full build; the index
    names the shards it has, so none is read)."""
    for name, content in changed.items():
        target = site_dir / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")


class Builds:
    """One build at a time, in order: the preview server's build loop and the quick rebuild's
    second half (in a thread of its own) take turns, and a newer build supersedes the second
    half of an older one (which then does nothing: the newer build compares against what was
    written, so it redoes what the older left)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.generation = 0

    def builder(self, full: Callable[[], None], quick: Callable[[], bool]) -> Callable[[], None]:
        """The server's builder: the quick rebuild when it can take the change, else the full."""

        def rebuild() -> None:
            with self.lock:
                self.generation += 1
                if not quick():
                    full()

        return rebuild

    def later(self, work: Callable[[], None]) -> None:
        """Run `work` after the current build, unless another build starts first."""
        generation = self.generation

        def run() -> None:
            with self.lock:
                if generation == self.generation:
                    work()

        threading.Thread(target=run, name="preview-rest", daemon=True).start()


class Preview:
    """What a dirty preview keeps from one build to the next, and its quick rebuild. A full
    build calls `started`, `generated` and `finished` as it goes; `quick` then takes every edit
    it can. `built` holds what each generated file held when last written."""

    def __init__(self) -> None:
        self.cache = LoadCache()
        self.reuse = Reuse()
        self.builds = Builds()
        self.built: dict[str, str] = {}
        self.last: LastBuild | None = None
        self.shown: dict[str, Entry] = {}  # the record each entry page was last built from
        self._inputs: Fingerprint | None = None
        self._shape: tuple[Any, ...] | None = None

    def started(self, inputs: Fingerprint) -> None:
        self.last, self._inputs, self._shape = None, inputs, None

    def generated(self, enc: Encyclopedia, pages: dict[str, str]) -> None:
        self._shape = shape(enc, pages)
        self.shown = {p.id: p.entry for p in enc.pages.values()}

    def finished(self, config: MkDocsConfig, files: Files, nav: Navigation, env: Any) -> None:
        if self._inputs is not None and self._shape is not None:
            self.last = LastBuild(config, files, nav, env, self._inputs, self._shape)

    def failed(self) -> None:
        self.last = None

    def quick(
        self,
        site: Site,
        inputs: Fingerprint,
        showing: Callable[[Encyclopedia], None],
        indexed: Callable[[MkDocsConfig], None],
    ) -> bool:
        """Rebuild after an edit to entries alone, in two halves: first the pages of the entries
        whose records changed (then the browser reloads and shows the edit), then, in the
        background, every other page and file that changed with them, then `indexed`. False
        when the change needs the full build. `showing` learns the encyclopedia now shown."""
        start = time.perf_counter()
        last = self.last
        if last is None:
            return _full_because("the last build did not go through")
        if inputs != last.inputs:
            return _full_because("a file besides the entries changed")
        try:
            enc = build_encyclopedia(site.entries, self.cache)
        except EntryError:
            return _full_because("an entry is broken: every page shows the problems")
        rendered = render_pages(enc, site.edit_url, site.overrides, self.reuse)
        pages = {p.src_uri: p.markdown for p in rendered}
        if shape(enc, pages) != last.shape:
            return _full_because("pages were added or removed, or a category renamed")
        showing(enc)
        edited = {p.src_uri for p in enc.pages.values() if self.shown.get(p.id) is not p.entry}
        self.shown = {p.id: p.entry for p in enc.pages.values()}
        changed = {n: text for n, text in pages.items() if self.built.get(n) != text}
        first = {n: text for n, text in changed.items() if n in edited}
        try:
            write_pages(last, first)
        except Exception as err:  # the full build reports it as it reports any failed page
            self.last = None
            return _full_because(f"a page failed to build: {err}")
        self.built.update(first)
        shown = time.perf_counter()
        log.info(f"Edited pages rebuilt: {len(first)} in {shown - start:.2f} s")

        def rest() -> None:
            files = export_files(enc, site.base_url, self.reuse)
            pages_left = {n: t for n, t in changed.items() if n not in first}
            files_left = {n: t for n, t in files.items() if self.built.get(n) != t}
            try:
                write_pages(last, pages_left)
                write_files(Path(last.config.site_dir), files_left)
            except Exception as err:  # left as they were: the next build compares and redoes them
                log.warning(f"the pages that show the edit were not all rebuilt: {err}")
                self.last = None  # so that the next edit takes the full build
                return
            self.built.update(pages_left | files_left)
            count, took = len(pages_left) + len(files_left), time.perf_counter() - shown
            log.info(f"Pages and files that show them rebuilt: {count} in {took:.2f} s")
            indexed(last.config)

        self.builds.later(rest)
        return True


__all__ = [
    "Builds",
    "Fingerprint",
    "LastBuild",
    "Preview",
    "Site",
    "fingerprint",
    "shape",
    "write_files",
    "write_pages",
]
