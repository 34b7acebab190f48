"""`mkdocs serve` watches the entries: an edit shows up, a broken edit prints the validation
errors without killing the server, and fixing it recovers."""

from __future__ import annotations

import functools
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


def _shows(url: str, text: str) -> bool:
    return text in (fetch(url) or "")


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
    changed; in both modes the server adds the problem banner to every page it serves."""
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
    page and file that shows it; a new, renamed or removed entry and an edit that breaks an
    entry take the same quick path: none of them a full build."""
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
            wait_for(functools.partial(_shows, site + shows, "Alpha quickly edited"), shows)
        text = log.read_text()
        assert "Edited pages rebuilt: 1 in" in text
        assert "Lists that show them rebuilt:" in text
        assert "Other pages and files rebuilt:" in text

        # A new entry: its page, then its category's list and the exports.
        new = entries / "memory" / "delta-new.yaml"
        new.write_text(
            alpha.read_text()
            .replace("Alpha quickly edited", "Delta brand new")
            .replace("aliases: [alpha-old]", "aliases: []")
            .replace("alpha ran out of memory", "delta ran out of memory")
            .replace("alpha_kernel_launch", "delta_kernel_launch")
        )
        wait_for(lambda: "Delta brand new" in (fetch(site + "memory/delta-new/") or ""), "new")
        wait_for(lambda: "Delta brand new" in (fetch(site + "memory/") or ""), "in its category")
        wait_for(lambda: "delta-new" in (fetch(site + "api/entries.json") or ""), "exported")
        # A renamed entry's old page goes.
        new.rename(entries / "memory" / "delta-renamed.yaml")
        wait_for(lambda: "Delta brand new" in (fetch(site + "memory/delta-renamed/") or ""), "mv")
        wait_for(lambda: fetch(site + "memory/delta-new/") is None, "the old page gone")
        wait_for(lambda: "delta-new/" not in (fetch(site + "memory/") or ""), "the old link gone")
        # A removed one too, with its line in the category list.
        (entries / "memory" / "delta-renamed.yaml").unlink()
        wait_for(lambda: fetch(site + "memory/delta-renamed/") is None, "the removed page gone")
        wait_for(lambda: "Delta brand new" not in (fetch(site + "memory/") or ""), "unlisted")

        # An edit that breaks the entry: the problem on every page, nothing rebuilt.
        good = alpha.read_text()
        alpha.write_text(good.replace("severity: high", "severity: hihg", 1))
        wait_for(lambda: "hihg" in (fetch(site + "memory/") or ""), "the banner")
        assert "Alpha quickly edited" in (fetch(site + "memory/alpha-oom/") or "")
        assert "memory/alpha-oom.yaml:" in log.read_text(), "the terminal names the problem"
        alpha.write_text(good.replace("Alpha quickly edited", "Alpha mended"))
        wait_for(lambda: "Alpha mended" in (fetch(site + "memory/alpha-oom/") or ""), "the fix")
        wait_for(lambda: "enc-problems" not in (fetch(site) or ""), "the banner gone")
        text = log.read_text()
        assert text.count("Documentation built") == 1, "an edit took the full build"
        assert "Aborted" not in text
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
    saved (the poller is a file the page policy allows, not MkDocs' inline script), when a save
    breaks the entry (the banner names the problem) and when the next save mends it; an open
    category page reloads itself to list a new entry. The policy blocks nothing on the way."""
    entries, server, site, _ = start_serving(tmp_path, ["--dirty"])
    entry = entries / "memory" / "alpha-oom.yaml"
    url = site + "memory/alpha-oom/"
    context = chromium.new_context()
    try:
        wait_for(lambda: "Alpha out of memory" in (fetch(url) or ""), "first build")
        page = context.new_page()
        refused: list[str] = []
        page.on("console", lambda m: refused.append(m.text) if "Refused" in m.text else None)

        def reloads_to_show(change: Callable[[], object], text: str, present: bool = True) -> None:
            """Make `change`, then wait for the open page to reload itself and show `text`
            (or no longer show it)."""
            # The preview reloads open pages twice per edit (its second half reloads again):
            # the last step's second reload may still be under way, so mark the page when it
            # has loaded.
            for _ in range(50):
                try:
                    page.wait_for_load_state("load")
                    page.evaluate("window.notReloaded = true")
                    break
                except Exception:  # navigating: its context is gone for a moment
                    time.sleep(0.1)
            else:
                raise AssertionError("the open page never settled before the change")
            change()
            # Read through the driver, not a page function: the policy rightly refuses eval.
            shown = f"document.body.innerText.includes({text!r})"
            wanted = f"!window.notReloaded && ({shown} === {'true' if present else 'false'})"

            def reloaded() -> bool:
                try:
                    return bool(page.evaluate(wanted))
                except Exception:  # the page is navigating: its context is gone for a moment
                    return False

            wait_for(
                reloaded,
                f"the open page to reload itself {'with' if present else 'without'} {text!r}",
            )

        page.goto(url)
        page.wait_for_load_state("load")
        assert "/_preview/livereload.js" in page.content()
        good = entry.read_text().replace("title: Alpha out of memory", "title: Alpha reloaded")
        reloads_to_show(lambda: entry.write_text(good), "Alpha reloaded")
        reloads_to_show(
            lambda: entry.write_text(good.replace("severity: high", "severity: hihg", 1)),
            "1 problem in entries",
        )
        assert "Alpha reloaded" in page.inner_text("h1"), "the page under the banner as it was"
        reloads_to_show(lambda: entry.write_text(good), "1 problem in entries", present=False)

        page.goto(site + "memory/")
        page.wait_for_load_state("load")
        new = good.replace("Alpha reloaded", "Delta appears").replace("aliases: [alpha-old]", "")
        new = new.replace("alpha ran out of memory", "delta ran out of memory")
        new = new.replace("alpha_kernel_launch", "delta_kernel_launch")
        reloads_to_show(
            lambda: (entries / "memory" / "delta.yaml").write_text(new), "Delta appears"
        )
        assert refused == [], refused
    finally:
        context.close()
        server.terminate()
        server.wait(timeout=10)
