"""The dirty preview (`mkdocs serve --dirty`, what `make serve` runs) reuses what an edit did not
touch: loaded files, rendered pages, export records, the pages MkDocs does not rebuild. After each
kind of edit its site folder must equal, file by file, a fresh build of the same sources (one case
per kind of input below; the build gets the server's URL as its site URL, as the preview does)."""

from __future__ import annotations

import functools
import gzip
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from generator.pages.render import TEMPLATES
from tests.conftest import FIXTURE_ENTRIES
from tests.support import ROOT
from tests.test_live_preview import fetch, free_port, wait_for


def _replace(rel: str, old: str, new: str) -> Callable[[Path], None]:
    def edit(project: Path) -> None:
        path = project / rel
        text = path.read_text()
        assert old in text, f"{rel} has no {old!r}"
        path.write_text(text.replace(old, new, 1))

    return edit


def _override_entry_template(project: Path) -> None:
    """A template override appears: every entry page is rendered from it."""
    text = (TEMPLATES / "entry.md.j2").read_text()
    target = project / "overrides" / "encyclopedia" / "entry.md.j2"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text + "\nRendered from the project's own entry template.\n")


EDITS: list[tuple[str, Callable[[Path], None]]] = [
    # (kind of input, the edit), applied one after another to the same preview
    (
        "entry field",
        _replace("entries/memory/alpha-oom.yaml", "fix_time:", "fix_time: a few minutes"),
    ),
    (
        "entry title",
        _replace(
            "entries/kernels/beta-illegal-access.yaml",
            "title: Beta illegal access",
            "title: Beta renamed in the preview",
        ),
    ),
    ("tag", _replace("entries/_tags.yaml", "Running out of memory.", "Out of device memory.")),
    (
        "category file",
        _replace(
            "entries/memory/_category.yaml",
            "or memory is used badly.",
            "or memory is used badly (edited).",
        ),
    ),
    ("generator template", _override_entry_template),
    (
        "theme override",
        _replace(
            "overrides/main.html",
            "{% block extrahead %}\n",
            '{% block extrahead %}\n  <meta name="x-edited" content="in the preview">\n',
        ),
    ),
    (
        "hand-written page",
        _replace(
            "site_assets/contributing.md",
            '--8<-- "CONTRIBUTING.md"',
            'Edited in the preview.\n\n--8<-- "CONTRIBUTING.md"',
        ),
    ),
]


def _project(tmp_path: Path) -> Path:
    """A copy of the project's site sources over the fixture entries, with full-text search off
    (Pagefind's own file names differ between any two builds)."""
    project = tmp_path / "project"
    project.mkdir()
    for name in ("overrides", "site_assets", "docs"):
        shutil.copytree(ROOT / name, project / name)
    shutil.copy(ROOT / "CONTRIBUTING.md", project / "CONTRIBUTING.md")
    shutil.copytree(FIXTURE_ENTRIES, project / "entries")
    config = (ROOT / "mkdocs.yml").read_text()
    plugin = "  - encyclopedia:\n"
    assert plugin in config
    (project / "mkdocs.yml").write_text(config.replace(plugin, plugin + "      full_text: false\n"))
    return project


def _files(site: Path) -> dict[str, bytes]:
    out = {}
    for path in site.rglob("*"):
        rel = path.relative_to(site).as_posix()
        if path.is_file() and not rel.startswith("_preview/"):  # the server's own poller
            data = path.read_bytes()
            # gzip stores a time: compare what the sitemap says
            out[rel] = gzip.decompress(data) if rel.endswith(".gz") else data
    return out


def _fresh_build(project: Path, url: str, dest: Path) -> dict[str, bytes]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "ENCYCLOPEDIA_SITE_URL": url}
    env.pop("ENCYCLOPEDIA_ENTRIES", None)
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-q", "-d", str(dest)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return _files(dest)


def _differences(preview: dict[str, bytes], fresh: dict[str, bytes]) -> list[str]:
    return sorted(
        [f"only in the preview: {n}" for n in preview.keys() - fresh.keys()]
        + [f"missing from the preview: {n}" for n in fresh.keys() - preview.keys()]
        + [f"differs: {n}" for n in preview.keys() & fresh.keys() if preview[n] != fresh[n]]
    )


def _settled(site: Path, fresh: dict[str, bytes], log: Path, builds: int) -> bool:
    """The preview has finished the rebuild after the edit and its folder equals the fresh
    build (the quick path writes the edited pages first and the rest after)."""
    text = log.read_text()
    if text.count("Documentation built") + text.count("Other pages and files rebuilt") < builds:
        return False
    return not _differences(_files(site), fresh)


def test_the_dirty_preview_equals_a_fresh_build_after_each_kind_of_edit(tmp_path: Path) -> None:
    project = _project(tmp_path)
    temp = tmp_path / "tmp"  # the server builds into a folder of its own under TMPDIR
    temp.mkdir()
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    log = tmp_path / "serve.log"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "TMPDIR": str(temp)}
    env.pop("ENCYCLOPEDIA_ENTRIES", None)
    env.pop("ENCYCLOPEDIA_SITE_URL", None)
    command = [sys.executable, "-m", "mkdocs", "serve", "--dirty", "--livereload"]
    with log.open("w") as out:
        server = subprocess.Popen(
            [*command, "-a", f"127.0.0.1:{port}"], cwd=project, env=env, stdout=out, stderr=out
        )
    try:
        wait_for(lambda: "Alpha out of memory" in (fetch(url + "memory/alpha-oom/") or ""), "build")
        (site,) = [p for p in temp.iterdir() if p.name.startswith("mkdocs_")]
        builds = 1
        fresh = _fresh_build(project, url, tmp_path / "fresh-0")
        assert not _differences(_files(site), fresh), "before any edit"
        for number, (kind, edit) in enumerate(EDITS, start=1):
            time.sleep(1.1)  # a new mtime even on a file system with coarse timestamps
            edit(project)
            builds += 1
            fresh = _fresh_build(project, url, tmp_path / f"fresh-{number}")
            try:
                settled = functools.partial(_settled, site, fresh, log, builds)
                wait_for(settled, kind, timeout=40)
            except AssertionError:
                found = _differences(_files(site), fresh)
                pytest.fail(f"after an edit to a {kind}: {found[:10]} ({len(found)} in all)")
        assert server.poll() is None
    finally:
        server.terminate()
        server.wait(timeout=10)
