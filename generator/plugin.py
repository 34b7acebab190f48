"""The MkDocs plugin: a thin adapter that runs the pipeline and hands MkDocs generated files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.config import base
from mkdocs.config import config_options as c
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin, get_plugin_logger
from mkdocs.structure.files import File, Files

from . import exports
from .link import Encyclopedia, build_encyclopedia
from .problems import EntryError
from .render import TEMPLATES, render_site

log = get_plugin_logger(__name__)


class EncyclopediaConfig(base.Config):  # type: ignore[no-untyped-call]
    entries_dir = c.Type(str, default="entries")
    overrides_dir = c.Type(str, default="overrides/encyclopedia")
    # Where "Edit this entry" points; `{path}` is the entry's file, e.g. entries/memory/x.yaml.
    edit_url = c.Optional(c.Type(str))


class EncyclopediaPlugin(BasePlugin[EncyclopediaConfig]):  # type: ignore[no-untyped-call]
    supports_multiple_instances = False

    def __init__(self) -> None:
        self.encyclopedia: Encyclopedia | None = None

    def _path(self, config: MkDocsConfig, value: str) -> Path:
        root = Path(config.config_file_path or ".").resolve().parent
        return (root / value).resolve()

    def on_pre_build(self, *, config: MkDocsConfig) -> None:
        # Validate before MkDocs cleans or writes the site folder: a bad entry writes nothing.
        try:
            self.encyclopedia = build_encyclopedia(self._path(config, self.config.entries_dir))
        except EntryError as err:
            self.encyclopedia = None
            for problem in err.problems:
                log.error(str(problem))
            count = len(err.problems)
            raise PluginError(
                f"{count} problem{'s' if count != 1 else ''} in entries; nothing was built"
            ) from None

    def on_files(self, files: Files, *, config: MkDocsConfig) -> Files:
        assert self.encyclopedia is not None, "on_pre_build runs first"
        enc = self.encyclopedia
        pages = render_site(
            enc, self.config.edit_url, self._path(config, self.config.overrides_dir)
        )
        for page in pages:
            files.append(File.generated(config, page.src_uri, content=page.markdown))
        for name, content in exports.site_exports(enc, config.site_url or "/").items():
            files.append(File.generated(config, name, content=content))
        return files

    def on_serve(self, server: Any, *, config: MkDocsConfig, builder: Any) -> Any:
        server.watch(str(self._path(config, self.config.entries_dir)))
        server.watch(str(TEMPLATES))
        overrides = self._path(config, self.config.overrides_dir)
        if overrides.is_dir():
            server.watch(str(overrides))
        return server
