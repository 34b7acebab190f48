"""The MkDocs plugin: it picks how it runs once, at start-up (modes.py: a one-off build, a
serve, a dirty preview), and hands every hook to that mode. It holds no state of its own."""

from __future__ import annotations

from typing import Any, Literal

from jinja2 import Environment
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import BasePlugin
from mkdocs.structure.files import Files
from mkdocs.structure.nav import Navigation
from mkdocs.structure.pages import Page

from .serve import modes
from .serve.options import EncyclopediaConfig

__all__ = ["EncyclopediaConfig", "EncyclopediaPlugin"]


class EncyclopediaPlugin(BasePlugin[EncyclopediaConfig]):  # type: ignore[no-untyped-call]
    supports_multiple_instances = False
    chosen: modes.Mode | None = None

    @property
    def mode(self) -> modes.Mode:
        # MkDocs' build() called on its own (tests, other builders) never calls on_startup.
        if self.chosen is None:
            self.chosen = modes.OneOffBuild(lambda: self.config)
        return self.chosen

    def on_startup(self, *, command: Literal["build", "gh-deploy", "serve"], dirty: bool) -> None:
        self.chosen = modes.choose(command, dirty, lambda: self.config)

    def on_pre_build(self, *, config: MkDocsConfig) -> None:
        self.mode.pre_build(config)

    def on_files(self, files: Files, *, config: MkDocsConfig) -> Files:
        return self.mode.files(files, config)

    def on_nav(self, nav: Navigation, *, config: MkDocsConfig, files: Files) -> Navigation:
        return self.mode.navigation(nav, files)

    def on_env(self, env: Environment, *, config: MkDocsConfig, files: Files) -> Environment:
        return self.mode.env(env, config, files)

    def on_build_error(self, *, error: Exception) -> None:
        self.mode.build_error()

    def on_post_build(self, *, config: MkDocsConfig) -> None:
        self.mode.post_build(config)

    def on_page_content(
        self, html: str, *, page: Page, config: MkDocsConfig, files: Files
    ) -> str | None:
        return self.mode.page_content(html, page)

    def on_page_context(
        self, context: Any, *, page: Page, config: MkDocsConfig, nav: Navigation
    ) -> Any:
        return self.mode.page_context(context, page)

    def on_post_page(self, output: str, *, page: Page, config: MkDocsConfig) -> str:
        return self.mode.post_page(output, page)

    def on_post_template(
        self, output_content: str, *, template_name: str, config: MkDocsConfig
    ) -> str:
        return self.mode.post_template(output_content, template_name)

    def on_serve(self, server: Any, *, config: MkDocsConfig, builder: Any) -> Any:
        return self.mode.serve(server, config)
