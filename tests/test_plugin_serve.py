"""Under `mkdocs serve` a broken entry never stops the preview: the plugin keeps the last good
site (or an empty one) and every page the server serves names the problems, escaped, in a
banner. A build still fails and writes nothing."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from mkdocs.exceptions import PluginError

from generator.plugin import EncyclopediaPlugin
from generator.serve import livereload, modes
from tests.conftest import FIXTURE_ENTRIES

PAGE = (
    b'<html><head><meta charset="utf-8"></head>'
    b'<body><article class="md-content__inner">x</article></body></html>'
)


def plugin_for(entries: Path, command: str, dirty: bool = False) -> tuple[EncyclopediaPlugin, Any]:
    plugin = EncyclopediaPlugin()
    plugin.load_config({"entries_dir": str(entries)})
    plugin.on_startup(command=command, dirty=dirty)  # type: ignore[arg-type]
    config = SimpleNamespace(
        config_file_path=str(entries.parent / "mkdocs.yml"),
        docs_dir=str(entries.parent / "docs"),
        theme=SimpleNamespace(custom_dir=None),
    )
    return plugin, config


def serving(plugin: EncyclopediaPlugin) -> modes.Serve:
    """The mode `mkdocs serve` chose, with the state a preview keeps."""
    assert isinstance(plugin.mode, modes.Serve)
    return plugin.mode


def break_entry(entries: Path) -> None:
    entry = entries / "memory" / "alpha-oom.yaml"
    text = entry.read_text()
    entry.write_text(text.replace("severity: high", 'severity: "<script>alert(1)</script>"', 1))


def test_a_preview_that_starts_broken_still_serves_the_problems(tmp_path: Path) -> None:
    entries = tmp_path / "entries"
    shutil.copytree(FIXTURE_ENTRIES, entries)
    break_entry(entries)
    plugin, config = plugin_for(entries, "serve")
    plugin.on_pre_build(config=config)
    mode = serving(plugin)
    assert mode.encyclopedia is not None and mode.encyclopedia.pages == {}
    server = SimpleNamespace(_inject_js_into_html=lambda content, epoch: content)
    livereload.install(server, lambda: mode.problems)
    page = server._inject_js_into_html(PAGE, 1).decode()
    assert "is not a valid value for `severity`" in page and "enc-problems" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert" not in page
    assert page.index("enc-problems") > page.index("<article"), "the banner heads the article"
    # The built page itself holds no banner: the server adds it to what it serves.
    assert "enc-problems" not in mode.finish(PAGE.decode(), "index.md", takes_log=False)


def test_the_banner_goes_with_the_problems(tmp_path: Path) -> None:
    entries = tmp_path / "entries"
    shutil.copytree(FIXTURE_ENTRIES, entries)
    plugin, config = plugin_for(entries, "serve", dirty=True)
    plugin.on_pre_build(config=config)
    mode = plugin.mode
    assert isinstance(mode, modes.DirtyPreview)
    server = SimpleNamespace(_inject_js_into_html=lambda content, epoch: content)
    livereload.install(server, lambda: mode.problems)
    assert b"enc-problems" not in server._inject_js_into_html(PAGE, 1)
    break_entry(entries)
    plugin.on_pre_build(config=config)
    assert b"enc-problems" in server._inject_js_into_html(PAGE, 2)
    assert mode.last_good is not None
    mode.showing(mode.last_good)  # what the quick rebuild says once the entry is fixed
    assert b"enc-problems" not in server._inject_js_into_html(PAGE, 3)


def test_a_preview_keeps_the_last_good_site(tmp_path: Path) -> None:
    entries = tmp_path / "entries"
    shutil.copytree(FIXTURE_ENTRIES, entries)
    plugin, config = plugin_for(entries, "serve")
    plugin.on_pre_build(config=config)
    mode = serving(plugin)
    good = mode.encyclopedia
    break_entry(entries)
    plugin.on_pre_build(config=config)
    assert mode.encyclopedia is good and mode.problems


def test_a_build_still_fails_on_a_broken_entry(tmp_path: Path) -> None:
    entries = tmp_path / "entries"
    shutil.copytree(FIXTURE_ENTRIES, entries)
    break_entry(entries)
    plugin, config = plugin_for(entries, "build")
    with pytest.raises(PluginError, match="nothing was built"):
        plugin.on_pre_build(config=config)
