"""`mkdocs serve` watches the entries: an edit shows up, a broken edit prints the validation
errors without killing the server, and fixing it recovers."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURE_ENTRIES
from tests.support import ROOT


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def fetch(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return str(response.read().decode("utf-8"))
    except (urllib.error.URLError, TimeoutError, ConnectionError):
        return None


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def start_serving(
    tmp_path: Path, mode: list[str]
) -> tuple[Path, subprocess.Popen[bytes], str, Path]:
    """`mkdocs serve` over a copy of the fixture entries: (the entries, the server, the site's
    URL, the server's log)."""
    entries = tmp_path / "entries"
    shutil.copytree(FIXTURE_ENTRIES, entries)
    port = free_port()
    log = tmp_path / "serve.log"
    env = {**os.environ, "ENCYCLOPEDIA_ENTRIES": str(entries), "NO_MKDOCS_2_WARNING": "1"}
    command = [sys.executable, "-m", "mkdocs", "serve", *mode, "--livereload"]
    command += ["-a", f"127.0.0.1:{port}", "-f", str(ROOT / "mkdocs.yml")]
    with log.open("w") as out:
        server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=out)
    return entries, server, f"http://127.0.0.1:{port}/", log


@pytest.mark.parametrize("mode", [[], ["--dirty"]], ids=["full-rebuilds", "dirty-as-make-serve"])
def test_serve_reloads_entries(tmp_path: Path, mode: list[str]) -> None:
    """With `--dirty` (as `make serve` runs it) a rebuild writes only the pages whose content
    changed, except while a problem banner appears or goes: then every page."""
    entries, server, site, log = start_serving(tmp_path, mode)
    entry = entries / "memory" / "alpha-oom.yaml"
    url = site + "memory/alpha-oom/"
    try:
        wait_for(lambda: "Alpha out of memory" in (fetch(url) or ""), "first build")

        entry.write_text(
            entry.read_text().replace("title: Alpha out of memory", "title: Alpha edited live")
        )
        wait_for(lambda: "Alpha edited live" in (fetch(url) or ""), "the edit to show")

        original = entry.read_text()
        entry.write_text(original + "severity: huge\n")
        wait_for(lambda: "duplicate key `severity`" in log.read_text(), "the validation error")
        assert server.poll() is None, "the server died on a broken entry"
        assert "memory/alpha-oom.yaml:" in log.read_text()
        # The preview keeps answering: the last good page, with the problem named on it
        # (escaped: the problem quotes contributor text).
        wait_for(
            lambda: "duplicate key `severity`" in (fetch(url) or ""), "the problem on the page"
        )
        page = fetch(url) or ""
        assert "Alpha edited live" in page and "enc-problems" in page
        other = fetch(url.replace("memory/alpha-oom/", "")) or ""
        assert "memory/alpha-oom.yaml:" in other, "every page names the problem"

        entry.write_text(original.replace("title: Alpha edited live", "title: Alpha fixed"))
        wait_for(lambda: "Alpha fixed" in (fetch(url) or ""), "recovery after the fix")
        home = url.replace("memory/alpha-oom/", "")
        wait_for(lambda: "enc-problems" not in (fetch(home) or ""), "the banner gone everywhere")
        assert "Aborted" not in log.read_text()
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_dirty_preview_rebuilds_an_edit_to_entries_quickly(tmp_path: Path) -> None:
    """An edit to one entry rebuilds its own page first (then the browser reloads), then every
    page and file that shows it, without a full build; a new entry takes the full build."""
    entries, server, site, log = start_serving(tmp_path, ["--dirty"])
    alpha = entries / "memory" / "alpha-oom.yaml"
    try:
        wait_for(
            lambda: "Alpha out of memory" in (fetch(site + "memory/alpha-oom/") or ""), "build"
        )
        alpha.write_text(alpha.read_text().replace("Alpha out of memory", "Alpha quickly edited"))
        wait_for(
            lambda: "Alpha quickly edited" in (fetch(site + "memory/alpha-oom/") or ""), "edit"
        )
        # The pages that show the entry follow: the one linking to it, its category and tag
        # pages, and the exports.
        for shows in ("kernels/beta-illegal-access/", "memory/", "tags/oom/", "api/entries.json"):
            wait_for(lambda at=shows: "Alpha quickly edited" in (fetch(site + at) or ""), shows)
        text = log.read_text()
        assert "Edited pages rebuilt: 1 in" in text
        assert "Pages and files that show them rebuilt:" in text
        assert text.count("Documentation built") == 1, "the edit took a full build"

        # A new entry adds pages: the full build.
        new = entries / "memory" / "delta-new.yaml"
        new.write_text(
            alpha.read_text()
            .replace("Alpha quickly edited", "Delta brand new")
            .replace("aliases: [alpha-old]", "aliases: []")
            .replace("alpha ran out of memory", "delta ran out of memory")
            .replace("alpha_kernel_launch", "delta_kernel_launch")
        )
        wait_for(lambda: "Delta brand new" in (fetch(site + "memory/delta-new/") or ""), "new")
        assert log.read_text().count("Documentation built") == 2
        # A renamed entry's old page goes: a dirty build deletes what is no longer generated.
        new.rename(entries / "memory" / "delta-renamed.yaml")
        wait_for(lambda: "Delta brand new" in (fetch(site + "memory/delta-renamed/") or ""), "mv")
        wait_for(lambda: fetch(site + "memory/delta-new/") is None, "the old page gone")
        assert "Aborted" not in log.read_text()
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_an_entries_folder_that_goes_and_comes_back_is_watched_again(tmp_path: Path) -> None:
    """A branch switch or a move takes the folder's watch with it: the preview says so, and
    when the folder is back an edit shows again."""
    entries, server, site, log = start_serving(tmp_path, ["--dirty"])
    url = site + "memory/alpha-oom/"
    away = tmp_path / "entries-away"
    try:
        wait_for(lambda: "Alpha out of memory" in (fetch(url) or ""), "first build")
        entries.rename(away)
        wait_for(lambda: "is gone; the preview watches for it" in log.read_text(), "the notice")
        away.rename(entries)
        wait_for(lambda: "is back; edits to it rebuild" in log.read_text(), "the return")
        alpha = entries / "memory" / "alpha-oom.yaml"
        alpha.write_text(alpha.read_text().replace("Alpha out of memory", "Alpha after return"))
        wait_for(lambda: "Alpha after return" in (fetch(url) or ""), "an edit after the return")
        assert server.poll() is None
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.mark.browser
def test_the_open_page_reloads_itself_under_its_policy(tmp_path: Path, chromium: Any) -> None:
    """As `make serve` runs it: an entry page open in Chromium reloads itself when the entry is
    saved (the poller is a file the page policy allows, not MkDocs' inline script), and the
    policy blocks nothing on the way."""
    entries, server, site, _ = start_serving(tmp_path, ["--dirty"])
    entry = entries / "memory" / "alpha-oom.yaml"
    url = site + "memory/alpha-oom/"
    context = chromium.new_context()  # type: ignore[attr-defined]
    try:
        wait_for(lambda: "Alpha out of memory" in (fetch(url) or ""), "first build")
        page = context.new_page()
        refused: list[str] = []
        page.on("console", lambda m: refused.append(m.text) if "Refused" in m.text else None)
        page.goto(url)
        page.wait_for_load_state("load")
        page.evaluate("window.notReloaded = true")
        assert "/_preview/livereload.js" in page.content()
        entry.write_text(
            entry.read_text().replace("title: Alpha out of memory", "title: Alpha reloaded")
        )
        # Read through the driver, not a page function: the policy rightly refuses eval.
        shown = "!window.notReloaded && document.body.innerText.includes('Alpha reloaded')"

        def reloaded() -> bool:
            try:
                return bool(page.evaluate(shown))
            except Exception:  # the page is navigating: its context is gone for a moment
                return False

        wait_for(reloaded, "the open page to reload itself with the edit")
        assert refused == [], refused
    finally:
        context.close()
        server.terminate()
        server.wait(timeout=10)
