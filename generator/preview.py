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
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import Files
from mkdocs.structure.nav import Navigation
from mkdocs.structure.pages import Page

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
    shape: tuple[Any, ...]  # what must stay the same: see `Preview.shape`


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


__all__ = ["Builds", "Fingerprint", "LastBuild", "fingerprint", "write_files", "write_pages"]
