"""How MkDocs runs the plugin, chosen once when it starts (`choose`), each mode owning its state;
the plugin hands every hook to the mode. The pipeline (pipeline.py) orders the stages; a mode
only decides where their output goes.

- OneOffBuild (`mkdocs build`): the generated pages and files are spooled to disk as they are
  made and each page's HTML is kept compressed until written (lean.py); broken entries fail the
  build before anything is written.
- Serve (`mkdocs serve`): the generated files in memory; broken entries keep the last good site,
  and the server adds the problems banner to every page it serves (livereload.py).
- DirtyPreview (`mkdocs serve --dirty`, what `make serve` runs): a Serve that writes only what
  changed, takes the quick path for an edit to entries (preview.py, with this mode as its host)
  and indexes the full text in the background.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jinja2 import Environment
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import get_plugin_logger
from mkdocs.structure.files import File, Files
from mkdocs.structure.nav import Navigation, Section
from mkdocs.structure.pages import Page

from ..pages import csp
from ..pages.finish import finish_page
from ..pages.lean import Spool, Stash
from ..pages.render import TEMPLATES
from ..pipeline import build_encyclopedia, build_site, each_site_file
from ..read.files import linked_files
from ..read.link import Encyclopedia
from ..read.link import Page as EntryPage
from ..read.problems import EntryError, Problem, counted
from ..search import fulltext
from . import livereload, servewatch
from .options import EncyclopediaConfig
from .preview import (
    Fingerprint,
    Preview,
    PreviewFile,
    PreviewSources,
    fingerprint,
    remove_output,
)

log = get_plugin_logger("generator.plugin")
EMPTY = Encyclopedia((), {}, {})


@dataclass(frozen=True)
class Paths:
    """The folders the options name, resolved against mkdocs.yml's folder."""

    entries: Path
    overrides: Path


def paths(config: MkDocsConfig, options: EncyclopediaConfig) -> Paths:
    root = Path(config.config_file_path or ".").resolve().parent
    return Paths((root / options.entries_dir).resolve(), (root / options.overrides_dir).resolve())


# The plugin's options as they are now: MkDocs keeps the plugin across a preview's rebuilds and
# gives it a new config object each time mkdocs.yml is read again.
Options = Callable[[], EncyclopediaConfig]


def choose(command: str, dirty: bool, options: Options) -> Mode:
    if command != "serve":
        return OneOffBuild(options)
    return DirtyPreview(options) if dirty else Serve(options)


class Mode:
    """What every mode does: read and check the entries before anything is written, fold the
    categories into the nav, finish each page."""

    def __init__(self, options: Options) -> None:
        self._options = options
        self.encyclopedia: Encyclopedia | None = None
        self.entry_pages: dict[str, EntryPage] = {}  # MkDocs src_uri -> the entry it shows
        self.nav: Navigation | None = None

    @property
    def options(self) -> EncyclopediaConfig:
        return self._options()

    def pre_build(self, config: MkDocsConfig) -> None:
        raise NotImplementedError

    def files(self, files: Files, config: MkDocsConfig) -> Files:
        assert self.encyclopedia is not None, "on_pre_build runs first"
        linked = linked_files([f.abs_src_path for f in files if f.abs_src_path], config.docs_dir)
        if linked:  # MkDocs would publish what they point to
            raise PluginError(
                f"{linked[0]} is a link: the site would publish what it points to; copy the "
                f"file in instead ({len(linked)} link(s) in {config.docs_dir}); nothing was built"
            )
        self.entry_pages = {p.src_uri: p for p in self.encyclopedia.pages.values()}
        # The generator's template overrides sit inside the theme's folder by default, and MkDocs
        # copies every file there that is not a theme template into the site: not these.
        overrides = paths(config, self.options).overrides
        for file in [f for f in files if f.abs_src_path]:
            if Path(file.abs_src_path or "").resolve().is_relative_to(overrides):
                files.remove(file)
        return self.generated(files, config, self.encyclopedia)

    def generated(self, files: Files, config: MkDocsConfig, enc: Encyclopedia) -> Files:
        raise NotImplementedError

    def navigation(self, nav: Navigation, files: Files) -> Navigation:
        # Every category is one click away in the sidebar and the mobile drawer: "Categories"
        # becomes a section holding the overview and each category's page.
        assert self.encyclopedia is not None, "on_pre_build runs first"
        self.nav = nav
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

    def env(self, env: Environment, config: MkDocsConfig, files: Files) -> Environment:
        return env

    def build_error(self) -> None:
        pass

    def post_build(self, config: MkDocsConfig) -> None:
        if self.options.full_text:
            try:
                log.info(fulltext.index_site(Path(config.site_dir)))
            except fulltext.FullTextError as err:
                raise PluginError(str(err)) from None

    def page_content(self, html: str, page: Page) -> str | None:
        return html

    def page_context(self, context: Any, page: Page) -> Any:
        return context

    def post_page(self, output: str, page: Page) -> str:
        entry = self.entry_pages.get(page.file.src_uri)
        return self.finish(output, page.file.src_uri, bool(page.meta.get("diagnose")), entry)

    def post_template(self, output: str, template_name: str) -> str:
        if not template_name.endswith(".html"):
            return output  # sitemap.xml and the like
        return self.finish(output, template_name, False)

    def finish(
        self, output: str, where: str, takes_log: bool, entry: EntryPage | None = None
    ) -> str:
        for script in csp.unallowed_scripts(output):
            log.warning(f"{where}: an inline script the page policy blocks: {script[:80]!r}")
        return finish_page(output, entry, takes_log)

    def serve(self, server: Any, config: MkDocsConfig) -> Any:
        return server


class OneOffBuild(Mode):
    """`mkdocs build`: a bad entry writes nothing; pages go to disk as they are made."""

    def __init__(self, options: Options) -> None:
        super().__init__(options)
        self.spool: Spool | None = None  # the generated files on disk
        self.stash = Stash()  # the pages' HTML until written

    def pre_build(self, config: MkDocsConfig) -> None:
        # Validate before MkDocs cleans or writes the site folder: a bad entry writes nothing.
        try:
            self.encyclopedia = build_encyclopedia(paths(config, self.options).entries, None)
        except EntryError as err:
            for problem in err.problems:
                log.error(str(problem))
            raise PluginError(f"{counted(tuple(err.problems))}; nothing was built") from None

    def generated(self, files: Files, config: MkDocsConfig, enc: Encyclopedia) -> Files:
        """The generated pages and files, each spooled to disk as it is made."""
        self.spool = Spool(files, config)
        overrides = paths(config, self.options).overrides
        site_url = config.site_url or "/"
        for name, content in each_site_file(enc, site_url, self.options.edit_url, overrides):
            self.spool.add(name, content)
        return files

    def build_error(self) -> None:
        self._drop_spool()

    def post_build(self, config: MkDocsConfig) -> None:
        self._drop_spool()
        super().post_build(config)

    def _drop_spool(self) -> None:
        if self.spool is not None:
            self.spool.close()
            self.spool = None

    def page_content(self, html: str, page: Page) -> str | None:
        return self.stash.keep(page, html)

    def page_context(self, context: Any, page: Page) -> Any:
        self.stash.restore(page)
        return context

    def post_page(self, output: str, page: Page) -> str:
        self.stash.written(page)
        return super().post_page(output, page)


class Serve(Mode):
    """`mkdocs serve`: the preview keeps answering with the last good site when an entry
    breaks, each served page naming the problems."""

    def __init__(self, options: Options) -> None:
        super().__init__(options)
        self.last_good: Encyclopedia | None = None
        self.problems: tuple[Problem, ...] = ()
        # What it can keep across rebuilds: entries loaded from unchanged files, and what each
        # generated file held.
        self.preview = Preview()
        self.server: Any = None

    def pre_build(self, config: MkDocsConfig) -> None:
        try:
            entries = paths(config, self.options).entries
            self.encyclopedia = build_encyclopedia(entries, self.preview.reuse.loaded)
            self.last_good, self.problems = self.encyclopedia, ()
            return
        except EntryError as err:
            problems = tuple(err.problems)
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

    def _site(
        self, config: MkDocsConfig, enc: Encyclopedia
    ) -> tuple[dict[str, str], dict[str, str]]:
        """The generated pages' Markdown by source path, and every generated file by path."""
        where = paths(config, self.options)
        site = build_site(
            enc, config.site_url or "/", self.options.edit_url, where.overrides, self.preview.reuse
        )
        pages = {page.src_uri: page.markdown for page in site.pages}
        return pages, pages | site.files

    def generated(self, files: Files, config: MkDocsConfig, enc: Encyclopedia) -> Files:
        for name, content in self._site(config, enc)[1].items():
            files.append(File.generated(config, name, content=content))
        return files

    def build_error(self) -> None:
        self.preview.failed()

    def post_build(self, config: MkDocsConfig) -> None:
        livereload.write_script(Path(config.site_dir))  # the reload poller the pages load
        super().post_build(config)

    def serve(self, server: Any, config: MkDocsConfig) -> Any:
        # A poller the page policy lets run, not an inline script; the problems banner.
        livereload.install(server, lambda: self.problems)
        self.server = server
        self.wrap_builder(server)
        where = paths(config, self.options)
        servewatch.watch_often(server, str(where.entries))
        servewatch.keep_watching(server, str(where.entries))
        server.watch(str(TEMPLATES))
        # The theme's folder (and the generator's overrides, inside it by default) is a build
        # input (_inputs), which MkDocs watches only with --watch-theme.
        if config.theme.custom_dir:
            server.watch(config.theme.custom_dir)
        if where.overrides.is_dir():
            server.watch(str(where.overrides))
        return server

    def wrap_builder(self, server: Any) -> None:
        pass


class DirtyPreview(Serve):
    """`mkdocs serve --dirty`: a rebuild writes only what changed, an edit to entries takes the
    quick path (this mode is preview.Preview's host), the full-text index follows in the
    background."""

    def __init__(self, options: Options) -> None:
        super().__init__(options)
        self.indexer: subprocess.Popen[bytes] | None = None
        # The preview knows it rebuilds only what changed; MkDocs' notice about it would count
        # as a warning and abort every rebuild in strict mode.
        logging.getLogger("mkdocs.commands.build").addFilter(servewatch.not_dirty_notice)
        # The fingerprint of the theme and the config when the site was last built.
        self.theme_seen: Fingerprint | None = None

    def _inputs(self, config: MkDocsConfig) -> list[Path]:
        """What a build reads besides the entries: a change to any of these takes a full build."""
        where = paths(config, self.options)
        found = [Path(config.config_file_path or "mkdocs.yml"), Path(config.docs_dir), TEMPLATES]
        found.append(where.overrides)
        if config.theme.custom_dir:
            found.append(Path(config.theme.custom_dir))
        return [p for p in found if p.exists()]

    @staticmethod
    def _theme_inputs(config: MkDocsConfig) -> list[Path]:
        found = [Path(config.config_file_path or "mkdocs.yml")]
        if config.theme.custom_dir:
            found.append(Path(config.theme.custom_dir))
        return [p for p in found if p.exists()]

    def pre_build(self, config: MkDocsConfig) -> None:
        self.preview.started(fingerprint(self._inputs(config)))
        super().pre_build(config)

    def generated(self, files: Files, config: MkDocsConfig, enc: Encyclopedia) -> Files:
        pages, generated = self._site(config, enc)
        self.preview.generated(enc, pages)
        # Every page is drawn by the theme and the config: after an edit to either, MkDocs'
        # dirty build would rebuild only the pages whose source changed. Without their old
        # output it rebuilds the others too.
        theme = fingerprint(self._theme_inputs(config))
        restyled = self.theme_seen is not None and theme != self.theme_seen
        self.theme_seen = theme
        if restyled:
            for file in files:
                remove_output(Path(file.abs_dest_path))
        # A dirty build writes what changed and deletes nothing: a page no longer generated (a
        # renamed or removed entry) would be served until a restart.
        for name in set(self.preview.built) - set(generated):
            remove_output(Path(File.generated(config, name, content="").abs_dest_path))
            del self.preview.built[name]
        # A dirty preview rebuilds a generated file only when its content changed.
        nav_pages = {f"{c.slug}/index.md" for c in enc.categories}
        for name, content in generated.items():
            file = PreviewFile.generated(config, name, content=content)
            assert isinstance(file, PreviewFile)
            # A category's page is in every page's sidebar, by the title MkDocs reads from it: a
            # dirty build that did not read it would name it "None" on every page it rebuilds.
            in_nav = name in nav_pages
            file.modified = restyled or in_nav or self.preview.built.get(name) != content
            self.preview.built[name] = content
            files.append(file)
        return files

    def env(self, env: Environment, config: MkDocsConfig, files: Files) -> Environment:
        if self.nav is not None:
            self.preview.finished(config, files, self.nav, env)
        return env

    def post_build(self, config: MkDocsConfig) -> None:
        livereload.write_script(Path(config.site_dir))
        if not self.options.full_text:
            return
        # A preview shows an edit as soon as its page is written; the full-text index follows
        # a few seconds later, in the background (the previous run is stopped).
        if self.indexer is not None and self.indexer.poll() is None:
            self.indexer.kill()
            self.indexer.wait()
        self.indexer = fulltext.start_indexing(Path(config.site_dir))

    def wrap_builder(self, server: Any) -> None:
        server.builder = self.preview.builds.builder(server.builder, self._quick_rebuild)

    def _quick_rebuild(self) -> bool:
        """The preview's quick rebuild (preview.Preview.quick), with this mode as its host."""
        last = self.preview.last
        if last is None:
            return False
        config = last.config
        where = paths(config, self.options)
        site = PreviewSources(
            where.entries, where.overrides, self.options.edit_url, config.site_url or "/"
        )
        return self.preview.quick(site, fingerprint(self._inputs(config)), self)

    # The quick rebuild's host (preview.Host): `broken` is Serve's.
    def showing(self, enc: Encyclopedia) -> None:
        self.encyclopedia = self.last_good = enc
        self.entry_pages = {p.src_uri: p for p in enc.pages.values()}
        self.problems = ()

    def indexed(self, config: MkDocsConfig) -> None:
        self.post_build(config)

    def reload(self) -> None:
        livereload.reload_browsers(self.server)
