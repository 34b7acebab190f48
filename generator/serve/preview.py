"""The preview's quick rebuild: after an edit to entry files alone, rebuild only the pages and
files whose content changed, through MkDocs' own page build, instead of a whole dirty build.

A dirty build of MkDocs still reads the config again, lists and sorts every file, builds the
navigation and reads every page's state: about 2 s at 1,000 entries before any page is written.
When only entries changed and the navigation keeps its categories, nothing but the generated
files can differ, and each of those is rebuilt exactly as the full build builds it: a new entry
gets its page (a file and page of the last build's kind), a removed one loses its page and its
output. An edit that breaks an entry rebuilds nothing: the site stays as it last built and the
server names the problems on every page it serves (livereload.py). Anything else (a category
added, removed or renamed, an edit to mkdocs.yml, a hand-written page, a template or the
theme's overrides) takes the full build.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import get_plugin_logger
from mkdocs.structure.files import File, Files, set_exclusions
from mkdocs.structure.nav import Navigation
from mkdocs.structure.pages import Page

from ..pipeline import Reuse, build_encyclopedia, export_files, render_pages
from ..read.link import Encyclopedia
from ..read.model import Entry
from ..read.problems import EntryError, Problem

if TYPE_CHECKING:
    from ..pages.render import RenderedPage

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


class PreviewFile(File):
    """A page or file of a preview (`mkdocs serve --dirty`) that says itself whether it must
    be rebuilt: MkDocs would rebuild every generated file on every edit."""

    modified = True

    def is_modified(self) -> bool:
        return self.modified


Categories = tuple[tuple[str, str], ...]

# The generated pages that list every entry: the last to be rebuilt after an edit.
WHOLE_SITE = frozenset({"index.md", "categories.md", "severity.md", "tags/index.md"})


def is_list(name: str) -> bool:
    """A category's or a tag's list page (`memory/index.md`, `memory/page/2.md`, `tags/oom.md`):
    no entry page has such a path (render.paginate)."""
    if name in WHOLE_SITE:
        return False
    return name.startswith("tags/") or name.endswith("/index.md") or "/page/" in name


@dataclass(frozen=True)
class LastBuild:
    """What the last full build of a preview left, for the quick rebuilds that follow it. The
    record is never replaced by a quick rebuild; `files` is MkDocs' own collection, which a
    quick rebuild keeps in step with the pages it adds and removes."""

    config: MkDocsConfig
    files: Files
    nav: Navigation
    env: Any  # the theme's jinja2.Environment after every plugin's `on_env`
    inputs: Fingerprint  # the files besides the entries the build read
    categories: Categories  # what a quick rebuild cannot change: see `categories`


def categories(enc: Encyclopedia) -> Categories:
    """The categories the navigation shows: a change to them takes the full build."""
    return tuple((c.slug, c.category.title) for c in enc.categories)


class Host(Protocol):
    """What the quick rebuild tells the plugin that serves the preview."""

    def showing(self, enc: Encyclopedia) -> None:
        """The encyclopedia the site now shows (every entry valid)."""

    def broken(self, problems: tuple[Problem, ...]) -> None:
        """An edit broke entries: the site stays as it was; name the problems."""

    def indexed(self, config: MkDocsConfig) -> None:
        """Every page and file is written: index the site for search."""

    def reload(self) -> None:
        """Have the open pages reload (after the server's own reload, pages written since)."""


@dataclass(frozen=True)
class PreviewSources:
    """Where the preview's entries, templates and site are, as the plugin is configured."""

    entries: Path
    overrides: Path
    edit_url: str | None
    base_url: str


def _full_because(reason: str) -> bool:
    log.debug(f"full rebuild: {reason}")
    return False


def remove_output(path: Path) -> None:
    """Delete a generated file's output, and its folder when nothing else is in it (a dirty
    build deletes nothing, so a page no longer generated would be served until a restart)."""
    if path.is_file() and not path.is_symlink():
        path.unlink()
        with contextlib.suppress(OSError):
            path.parent.rmdir()


def add_pages(last: LastBuild, pages: dict[str, str]) -> None:
    """New generated pages (a new entry, a new tag), added to the last build's files as the
    full build adds them, each with the page MkDocs gives a file that is not in the nav."""
    config = last.config
    made = [PreviewFile.generated(config, name, content=text) for name, text in pages.items()]
    set_exclusions(made, config)
    for file in made:
        last.files.append(file)
        Page(None, file, config)


def remove_pages(last: LastBuild, names: Iterable[str]) -> None:
    """Generated pages no longer made (a removed or renamed entry): out of the files, and
    their output deleted."""
    for name in names:
        file = last.files.get_file_from_path(name)
        if file is not None:
            last.files.remove(file)
            remove_output(Path(file.abs_dest_path))


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
        self.reuse = Reuse()  # every memo of the preview
        self.builds = Builds()
        self.built: dict[str, str] = {}
        self.last: LastBuild | None = None
        self.shown: dict[str, Entry] = {}  # the record each entry page was last built from
        self.pages: frozenset[str] = frozenset()  # the generated pages the site has
        self._inputs: Fingerprint | None = None
        self._categories: Categories | None = None

    def started(self, inputs: Fingerprint) -> None:
        self.last, self._inputs, self._categories = None, inputs, None

    def generated(self, enc: Encyclopedia, pages: dict[str, str]) -> None:
        self._categories = categories(enc)
        self.shown = {p.id: p.entry for p in enc.pages.values()}
        self.pages = frozenset(pages)

    def finished(self, config: MkDocsConfig, files: Files, nav: Navigation, env: Any) -> None:
        if self._inputs is not None and self._categories is not None:
            self.last = LastBuild(config, files, nav, env, self._inputs, self._categories)

    def failed(self) -> None:
        self.last = None

    def quick(self, site: PreviewSources, inputs: Fingerprint, host: Host) -> bool:
        """Rebuild after an edit to entries alone, in two halves: first the pages of the entries
        whose records changed or that are new (then the browser reloads and shows the edit),
        then, in the background, every other page and file that changed with them, then the
        search index and a second reload. An edit that breaks entries writes nothing and has
        the host name the problems. False when the change needs the full build."""
        start = time.perf_counter()
        last = self.last
        if last is None:
            return _full_because("the last build did not go through")
        if inputs != last.inputs:
            return _full_because("a file besides the entries changed")
        try:
            enc = build_encyclopedia(site.entries, self.reuse.loaded)
        except EntryError as err:
            host.broken(tuple(err.problems))
            log.info(f"Problems named in {time.perf_counter() - start:.2f} s; nothing rebuilt")
            return True
        if categories(enc) != last.categories:
            return _full_because("a category was added, removed or renamed")
        edited = {p.src_uri for p in enc.pages.values() if self.shown.get(p.id) is not p.entry}
        # The edited entries' pages are rendered now; every other page only gives its path here
        # and is rendered in the second half.
        rendered = render_pages(enc, site.edit_url, site.overrides, self.reuse, edited.__contains__)
        pages = {p.src_uri: p.markdown for p in rendered}
        host.showing(enc)
        self.shown = {p.id: p.entry for p in enc.pages.values()}
        try:
            self._add_and_remove(last, pages)
        except Exception as err:  # the full build starts again from the files as they are
            self.last = None
            return _full_because(f"pages could not be added or removed: {err}")
        first = {n: pages[n] for n in edited if self.built.get(n) != pages[n]}
        try:
            write_pages(last, first)
        except Exception as err:  # the full build reports it as it reports any failed page
            self.last = None
            return _full_because(f"a page failed to build: {err}")
        self.built.update(first)
        shown = time.perf_counter()
        log.info(f"Edited pages rebuilt: {len(first)} in {shown - start:.2f} s")
        self.builds.later(functools.partial(self._second_half, enc, site, last, shown, host))
        return True

    def _add_and_remove(self, last: LastBuild, pages: dict[str, str]) -> None:
        """Tell MkDocs' last build of the pages that are new and the ones that went."""
        gone = self.pages - pages.keys()
        remove_pages(last, gone)
        add_pages(last, {n: text for n, text in pages.items() if n not in self.pages})
        for name in gone:
            self.built.pop(name, None)
        self.pages = frozenset(pages)

    def _second_half(
        self, enc: Encyclopedia, site: PreviewSources, last: LastBuild, shown: float, host: Host
    ) -> None:
        """The category and tag lists that show the edit first (small pages, where a new or
        removed entry is looked for), then a reload; then the pages linking to it, the pages of
        the whole site and the exports, then another reload and the search index."""
        render = functools.partial(render_pages, enc, site.edit_url, site.overrides, self.reuse)
        lists = {n: t for n, t in self._changed(render(is_list)).items() if is_list(n)}
        if not self._write(last, lists, {}, "Lists that show them", shown, host):
            return
        others = self._changed(render())
        files = export_files(enc, site.base_url, self.reuse)
        files_left = {n: t for n, t in files.items() if self.built.get(n) != t}
        if self._write(last, others, files_left, "Other pages and files", shown, host):
            host.indexed(last.config)

    def _changed(self, rendered: Iterable[RenderedPage]) -> dict[str, str]:
        """The pages whose text differs from what was last written."""
        return {p.src_uri: p.markdown for p in rendered if self.built.get(p.src_uri) != p.markdown}

    def _write(
        self,
        last: LastBuild,
        pages: dict[str, str],
        files: dict[str, str],
        what: str,
        since: float,
        host: Host,
    ) -> bool:
        """Write part of the second half, then have the open pages reload if anything changed.
        False when it failed: what is left stays as it was (the next build compares and redoes
        it) and the next edit takes the full build."""
        try:
            write_pages(last, pages)
            write_files(Path(last.config.site_dir), files)
        except Exception as err:
            log.warning(f"the pages that show the edit were not all rebuilt: {err}")
            self.last = None
            return False
        self.built.update(pages | files)
        count = len(pages) + len(files)
        log.info(f"{what} rebuilt: {count} in {time.perf_counter() - since:.2f} s")
        if count:  # the open pages may show what changed: reload them again
            host.reload()
        return True


__all__ = [
    "Builds",
    "Fingerprint",
    "Host",
    "LastBuild",
    "Preview",
    "PreviewFile",
    "PreviewSources",
    "add_pages",
    "categories",
    "fingerprint",
    "is_list",
    "remove_output",
    "remove_pages",
    "write_files",
    "write_pages",
]
