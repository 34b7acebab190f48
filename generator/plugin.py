"""The MkDocs plugin: a thin adapter that runs the pipeline and hands MkDocs generated files."""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Literal

from jinja2 import Environment
from mkdocs.config import base
from mkdocs.config import config_options as c
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin, get_plugin_logger
from mkdocs.structure.files import File, Files
from mkdocs.structure.nav import Navigation, Section
from mkdocs.structure.pages import Page

from . import csp, fulltext, livereload
from .files import linked_files
from .finish import finish_page
from .lean import Spool, Stash
from .link import Encyclopedia
from .link import Page as EntryPage
from .pipeline import build_encyclopedia, build_site, export_files
from .preview import Preview, PreviewFile, Site, fingerprint, remove_output
from .problems import EntryError, Problem, counted
from .render import TEMPLATES, each_page

log = get_plugin_logger(__name__)
EMPTY = Encyclopedia((), {}, {})


def _not_dirty_notice(record: logging.LogRecord) -> bool:
    return not record.getMessage().startswith("A 'dirty' build is being performed")


class EncyclopediaConfig(base.Config):  # type: ignore[no-untyped-call]
    entries_dir = c.Type(str, default="entries")
    """The folder that holds the category folders, relative to mkdocs.yml."""
    overrides_dir = c.Type(str, default="overrides/encyclopedia")
    """Templates here replace the generator's own of the same name."""
    edit_url = c.Optional(c.Type(str))
    """Where "Edit this entry" points; `{path}` is the entry's file, e.g. entries/memory/x.yaml."""
    full_text = c.Type(bool, default=True)
    """Index the built site with Pagefind for the search box (off: the box matches error
    signatures only)."""


# How often a dirty preview looks for edits to entries. MkDocs polls what it watches every 0.5 s,
# which would be most of what an edit waits for once its pages rebuild in a fraction of that.
ENTRIES_POLL_SECONDS = 0.1


def _watch_often(server: Any, path: str) -> None:
    """Watch `path` polled every ENTRIES_POLL_SECONDS. watchdog gives a folder's poller the
    observer's timeout when the folder is first watched, and MkDocs has no setting for it, so
    the timeout is set around that one call (where it is not found, MkDocs' own applies)."""
    observer = getattr(server, "observer", None)
    before = getattr(observer, "_timeout", None)
    if not isinstance(before, (int, float)):
        server.watch(path)
        return
    observer._timeout = ENTRIES_POLL_SECONDS  # type: ignore[union-attr]
    try:
        server.watch(path)
    finally:
        observer._timeout = before  # type: ignore[union-attr]


def _want_rebuild(server: Any) -> None:
    """Ask MkDocs' server for a rebuild, as its own watch callback does (where it can)."""
    cond = getattr(server, "_rebuild_cond", None)
    if cond is None:
        return
    with cond:
        server._want_rebuild = True
        cond.notify_all()


def _keep_watching(server: Any, path: str, every: float = 1.0) -> threading.Thread:
    """A watched folder that goes away (a branch switch, a `git stash`, a move) takes its
    watch with it: say so, and watch it again when it is back (the next edit rebuilds)."""

    def run() -> None:
        there = os.path.isdir(path)
        while True:
            time.sleep(every)
            now = os.path.isdir(path)
            if there and not now:
                log.warning(f"{path} is gone; the preview watches for it to come back")
            elif now and not there:
                with contextlib.suppress(Exception):  # the old watch, whose poller has died
                    server.unwatch(path)
                _watch_often(server, path)
                log.info(f"{path} is back; edits to it rebuild the site again")
                _want_rebuild(server)  # what came back may differ from what went
            there = now

    thread = threading.Thread(target=run, name="entries-folder", daemon=True)
    thread.start()
    return thread


class EncyclopediaPlugin(BasePlugin[EncyclopediaConfig]):  # type: ignore[no-untyped-call]
    supports_multiple_instances = False

    def __init__(self) -> None:
        self.encyclopedia: Encyclopedia | None = None
        self.last_good: Encyclopedia | None = None
        self.problems: tuple[Problem, ...] = ()
        self.serving = False
        self.dirty = False
        self.entry_pages: dict[str, EntryPage] = {}  # MkDocs src_uri -> the entry it shows
        # A preview keeps what it can across rebuilds: entries loaded from unchanged files, and
        # what each generated file held, so that a dirty rebuild writes only what changed.
        self.preview = Preview()
        # A one-off build's generated files on disk, and its pages' HTML until written (lean.py).
        self.spool: Spool | None = None
        self.stash = Stash()
        self.indexer: subprocess.Popen[bytes] | None = None
        self.nav: Navigation | None = None
        self.server: Any = None  # the preview's server, once serving

    def _path(self, config: MkDocsConfig, value: str) -> Path:
        root = Path(config.config_file_path or ".").resolve().parent
        return (root / value).resolve()

    def on_startup(self, *, command: Literal["build", "gh-deploy", "serve"], dirty: bool) -> None:
        self.serving = command == "serve"
        self.dirty = self.serving and dirty
        if self.dirty:
            # The preview knows it rebuilds only what changed; MkDocs' notice about it would
            # count as a warning and abort every rebuild in strict mode.
            logging.getLogger("mkdocs.commands.build").addFilter(_not_dirty_notice)

    def _inputs(self, config: MkDocsConfig) -> list[Path]:
        """What a build reads besides the entries: a change to any of these takes a full build."""
        paths = [Path(config.config_file_path or "mkdocs.yml"), Path(config.docs_dir), TEMPLATES]
        paths.append(self._path(config, self.config.overrides_dir))
        if config.theme.custom_dir:
            paths.append(Path(config.theme.custom_dir))
        return [p for p in paths if p.exists()]

    def on_pre_build(self, *, config: MkDocsConfig) -> None:
        if self.dirty:
            self.preview.started(fingerprint(self._inputs(config)))
        # Validate before MkDocs cleans or writes the site folder: a bad entry writes nothing.
        try:
            self.encyclopedia = build_encyclopedia(
                self._path(config, self.config.entries_dir),
                self.preview.cache if self.serving else None,
            )
            self.last_good, self.problems = self.encyclopedia, ()
            return
        except EntryError as err:
            problems = tuple(err.problems)
        if not self.serving:
            for problem in problems:
                log.error(str(problem))
            raise PluginError(f"{counted(problems)}; nothing was built") from None
        # A preview keeps answering: the last good site, each served page naming the problems.
        self.encyclopedia = self.last_good or EMPTY
        self.broken(problems)

    def broken(self, problems: tuple[Problem, ...]) -> None:
        """Name the problems in the terminal and, from the next page served, on every page. They
        go to the terminal as plain lines, since MkDocs would count logged errors and abort the
        rebuild in strict mode, leaving every request hanging."""
        for problem in problems:
            print(problem, file=sys.stderr)
        print(
            f"{counted(problems)}; the preview shows the last version that built", file=sys.stderr
        )
        self.problems = problems

    def on_files(self, files: Files, *, config: MkDocsConfig) -> Files:
        assert self.encyclopedia is not None, "on_pre_build runs first"
        linked = linked_files([f.abs_src_path for f in files if f.abs_src_path], config.docs_dir)
        if linked:  # MkDocs would publish what they point to
            raise PluginError(
                f"{linked[0]} is a link: the site would publish what it points to; copy the "
                f"file in instead ({len(linked)} link(s) in {config.docs_dir}); nothing was built"
            )
        enc = self.encyclopedia
        self.entry_pages = {p.src_uri: p for p in enc.pages.values()}
        if not self.serving:
            return self._spooled(files, config, enc)
        site = build_site(
            enc,
            config.site_url or "/",
            self.config.edit_url,
            self._path(config, self.config.overrides_dir),
            self.preview.reuse,
        )
        pages = {page.src_uri: page.markdown for page in site.pages}
        generated = pages | site.files
        if not self.dirty:
            for name, content in generated.items():
                files.append(File.generated(config, name, content=content))
            return files
        self.preview.generated(enc, pages)
        # A dirty build writes what changed and deletes nothing: a page no longer generated (a
        # renamed or removed entry) would be served until a restart.
        for name in set(self.preview.built) - set(generated):
            remove_output(Path(File.generated(config, name, content="").abs_dest_path))
            del self.preview.built[name]
        # A dirty preview rebuilds a generated file only when its content changed.
        for name, content in generated.items():
            file = PreviewFile.generated(config, name, content=content)
            assert isinstance(file, PreviewFile)
            file.modified = self.preview.built.get(name) != content
            self.preview.built[name] = content
            files.append(file)
        return files

    def _spooled(self, files: Files, config: MkDocsConfig, enc: Encyclopedia) -> Files:
        """A one-off build's generated pages and files, each spooled to disk as it is made."""
        self.spool = Spool(files, config)
        overrides = self._path(config, self.config.overrides_dir)
        for page in each_page(enc, self.config.edit_url, overrides):
            self.spool.add(page.src_uri, page.markdown)
        for name, content in export_files(enc, config.site_url or "/").items():
            self.spool.add(name, content)
        return files

    def on_nav(self, nav: Navigation, *, config: MkDocsConfig, files: Files) -> Navigation:
        self.nav = self._categories_section(nav, files)
        return self.nav

    def _categories_section(self, nav: Navigation, files: Files) -> Navigation:
        # Every category is one click away in the sidebar and the mobile drawer: "Categories"
        # becomes a section holding the overview and each category's page.
        assert self.encyclopedia is not None, "on_pre_build runs first"
        overview = next(
            (i for i in nav.items if isinstance(i, Page) and i.file.src_uri == "categories.md"),
            None,
        )
        if overview is None:
            return nav
        children: list[Page] = [overview]
        for category in self.encyclopedia.categories:
            file = files.get_file_from_path(f"{category.slug}/index.md")
            if file is not None and isinstance(file.page, Page):
                children.append(file.page)
        section = Section("Categories", list(children))
        for child in children:
            child.parent = section
        nav.items[nav.items.index(overview)] = section
        return nav

    def on_env(self, env: Environment, *, config: MkDocsConfig, files: Files) -> Environment:
        if self.dirty and self.nav is not None:
            self.preview.finished(config, files, self.nav, env)
        return env

    def on_build_error(self, *, error: Exception) -> None:
        self.preview.failed()
        self._drop_spool()

    def _drop_spool(self) -> None:
        if self.spool is not None:
            self.spool.close()
            self.spool = None

    def _quick_rebuild(self) -> bool:
        """The preview's quick rebuild (preview.Preview.quick), with this plugin as its host."""
        last = self.preview.last
        if last is None:
            return False
        config = last.config
        site = Site(
            self._path(config, self.config.entries_dir),
            self._path(config, self.config.overrides_dir),
            self.config.edit_url,
            config.site_url or "/",
        )
        return self.preview.quick(site, fingerprint(self._inputs(config)), self)

    # The quick rebuild's host (preview.Host): `broken` is above.
    def showing(self, enc: Encyclopedia) -> None:
        self.encyclopedia = self.last_good = enc
        self.entry_pages = {p.src_uri: p for p in enc.pages.values()}
        self.problems = ()

    def indexed(self, config: MkDocsConfig) -> None:
        self.on_post_build(config=config)

    def reload(self) -> None:
        livereload.reload_browsers(self.server)

    def on_post_build(self, *, config: MkDocsConfig) -> None:
        self._drop_spool()
        if self.serving:
            livereload.write_script(Path(config.site_dir))  # the reload poller the pages load
        if not self.config.full_text:
            return
        if self.dirty:
            # A preview shows an edit as soon as its page is written; the full-text index
            # follows a few seconds later, in the background (the previous run is stopped).
            if self.indexer is not None and self.indexer.poll() is None:
                self.indexer.kill()
                self.indexer.wait()
            self.indexer = fulltext.start_indexing(Path(config.site_dir))
            return
        try:
            log.info(fulltext.index_site(Path(config.site_dir)))
        except fulltext.FullTextError as err:
            raise PluginError(str(err)) from None

    def _finish(
        self, output: str, where: str, takes_log: bool, entry: EntryPage | None = None
    ) -> str:
        for script in csp.unallowed_scripts(output):
            log.warning(f"{where}: an inline script the page policy blocks: {script[:80]!r}")
        return finish_page(output, entry, takes_log)

    def on_page_content(
        self, html: str, *, page: Page, config: MkDocsConfig, files: Files
    ) -> str | None:
        return html if self.serving else self.stash.keep(page, html)

    def on_page_context(
        self, context: Any, *, page: Page, config: MkDocsConfig, nav: Navigation
    ) -> Any:
        self.stash.restore(page)
        return context

    def on_post_page(self, output: str, *, page: Page, config: MkDocsConfig) -> str:
        entry = self.entry_pages.get(page.file.src_uri)
        if not self.serving:
            self.stash.written(page)
        return self._finish(output, page.file.src_uri, bool(page.meta.get("diagnose")), entry)

    def on_post_template(
        self, output_content: str, *, template_name: str, config: MkDocsConfig
    ) -> str:
        if not template_name.endswith(".html"):
            return output_content  # sitemap.xml and the like
        return self._finish(output_content, template_name, False)

    def on_serve(self, server: Any, *, config: MkDocsConfig, builder: Any) -> Any:
        # A poller the page policy lets run, not an inline script; the problems banner.
        livereload.install(server, lambda: self.problems)
        self.server = server
        if self.dirty:
            server.builder = self.preview.builds.builder(server.builder, self._quick_rebuild)
        entries = str(self._path(config, self.config.entries_dir))
        _watch_often(server, entries)
        _keep_watching(server, entries)
        server.watch(str(TEMPLATES))
        overrides = self._path(config, self.config.overrides_dir)
        if overrides.is_dir():
            server.watch(str(overrides))
        return server
