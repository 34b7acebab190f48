"""The site without MkDocs' plugin lifecycle: `encyclopedia render` writes the docs tree to a
folder (with a manifest), `encyclopedia finish` adds what the plugin adds after a build, and the
site builds three ways: MkDocs (the default), ProperDocs (the maintained MkDocs 1.6 fork, with
the plugin) and Zensical (over the rendered folder, with no plugin at all)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.pages import tree
from generator.terminal.cli import main
from tests.support import ROOT, run_build

BIN = Path(sys.executable).parent
ENTRY_PAGES = ("data/batchnorm-single-sample-batch", "memory/cuda-out-of-memory")
POLICY = re.compile(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)"')

WRITES = [
    # (case, files before, files after, changed, removed)
    ("new folder", {}, {"a.md": b"A", "d/b.md": b"B"}, ("a.md", "d/b.md"), ()),
    ("same bytes", {"a.md": b"A"}, {"a.md": b"A"}, (), ()),
    ("one changed", {"a.md": b"A", "b.md": b"B"}, {"a.md": b"A", "b.md": b"C"}, ("b.md",), ()),
    ("one removed", {"a.md": b"A", "d/b.md": b"B"}, {"a.md": b"A"}, (), ("d/b.md",)),
]


@pytest.mark.parametrize(
    ("before", "after", "changed", "removed"), [c[1:] for c in WRITES], ids=[c[0] for c in WRITES]
)
def test_write_tree(
    tmp_path: Path,
    before: dict[str, bytes],
    after: dict[str, bytes],
    changed: tuple[str, ...],
    removed: tuple[str, ...],
) -> None:
    folder = tmp_path / "out"
    tree.write_tree(folder, before)
    old = {p: (folder / p).stat().st_mtime_ns for p in before}
    (folder / "mine.txt").write_text("not written by the tree")
    written = tree.write_tree(folder, after)
    assert (written.changed, written.removed) == (changed, removed)
    for path, content in after.items():
        assert (folder / path).read_bytes() == content
        if path in old and path not in changed:
            assert (folder / path).stat().st_mtime_ns == old[path]  # untouched
    for path in removed:
        assert not (folder / path).exists()
        assert not (folder / path).parent.exists() or (folder / path).parent == folder
    assert (folder / "mine.txt").exists()  # only what an earlier run wrote is removed


@pytest.mark.parametrize("path", ["../x.md", "/etc/x.md", ".hidden/x.md", "a/../../x.md"])
def test_write_tree_refuses_paths_outside(tmp_path: Path, path: str) -> None:
    with pytest.raises(tree.TreeError):
        tree.write_tree(tmp_path / "out", {path: b"x"})
    assert not (tmp_path / "out").exists()


def test_write_tree_refuses_somebody_elses_folder(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("mine")
    with pytest.raises(tree.TreeError, match="not empty"):
        tree.write_tree(tmp_path, {"a.md": b"A"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.md"]


def _link_folder(folder: Path, outside: Path) -> None:
    shutil.rmtree(folder / "d")
    (folder / "d").symlink_to(outside)


def _link_file(folder: Path, outside: Path) -> None:
    (folder / "a.md").unlink()
    (folder / "a.md").symlink_to(outside / "b.md")


def _fifo(folder: Path, outside: Path) -> None:
    (folder / "a.md").unlink()
    os.mkfifo(folder / "a.md")


# A folder this command wrote before (a.md, d/b.md), then something planted in it: a link to a
# folder or file outside, a file it did not write, a FIFO. Each is refused before any write.
PLANTED = [
    # (case, how to plant it, the files of the next run, the problem)
    (
        "linked-subfolder",
        _link_folder,
        {"a.md": b"A", "d/b.md": b"NEW"},
        "d is a link",
    ),
    (
        "delete-through-link",
        _link_folder,
        {"a.md": b"A"},
        "d is a link",
    ),
    (
        "file-linked-outside",
        _link_file,
        {"a.md": b"NEW", "d/b.md": b"B"},
        "a.md is a link",
    ),
    (
        "not-written-by-it",
        lambda f, o: (f / "c.md").write_text("somebody's"),
        {"a.md": b"A", "d/b.md": b"B", "c.md": b"NEW"},
        "c.md was not written by this command",
    ),
    (
        "fifo-named-like-a-page",
        _fifo,
        {"a.md": b"NEW", "d/b.md": b"B"},
        "a.md is not a regular file",
    ),
]


@pytest.mark.parametrize(
    ("plant", "after", "problem"), [c[1:] for c in PLANTED], ids=[c[0] for c in PLANTED]
)
def test_write_tree_never_writes_or_deletes_through_what_was_planted(
    tmp_path: Path, plant: object, after: dict[str, bytes], problem: str
) -> None:
    folder, outside = tmp_path / "out", tmp_path / "outside"
    outside.mkdir()
    (outside / "b.md").write_text("outside, not ours")
    tree.write_tree(folder, {"a.md": b"A", "d/b.md": b"B"})
    plant(folder, outside)  # type: ignore[operator]
    with pytest.raises(tree.TreeError, match=problem):
        tree.write_tree(folder, after)
    assert (outside / "b.md").read_text() == "outside, not ours"
    assert sorted(p.name for p in outside.iterdir()) == ["b.md"]


def _render(out: Path, entries: Path) -> str:
    result = CliRunner().invoke(
        main, ["render", str(out), "--entries", str(entries), "--assets", str(ROOT / "site_assets")]
    )
    assert result.exit_code == 0, result.output
    return result.output


def test_render_keeps_unchanged_files_and_drops_removed_entries(tmp_path: Path) -> None:
    entries = tmp_path / "entries"
    shutil.copytree(ROOT / "entries", entries)
    out = tmp_path / "rendered"
    first = _render(out, entries)
    page = out / "kernels" / "cuda-misaligned-address.md"  # an entry no other entry links to
    assert page.is_file() and (out / "api" / "entries.json").is_file()
    assert (out / "diagnose.md").is_file() and (out / "js" / "diagnose-core.js").is_file()
    total = int(re.search(r"(\d+) written", first).group(1))  # type: ignore[union-attr]
    stamp = page.stat().st_mtime_ns
    assert f"0 written, {total} unchanged, 0 removed" in _render(out, entries)
    assert page.stat().st_mtime_ns == stamp
    (entries / "kernels" / "cuda-misaligned-address.yaml").unlink()
    third = _render(out, entries)
    assert not page.exists()
    assert re.search(r" [1-9]\d* removed", third)
    # A bad entry writes nothing: the last good tree stays as it was.
    (entries / "data" / "broken.yaml").write_text("title: [unclosed\n")
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    bad = CliRunner().invoke(main, ["render", str(out), "--entries", str(entries)])
    assert bad.exit_code == 1 and "broken.yaml" in bad.output
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before


def _entry_pages_exist(site: Path) -> None:
    for page in ENTRY_PAGES:
        html = (site / page / "index.html").read_text()
        assert "<h1" in html and "How to fix it" in html, page


def _policy(site: Path, page: str) -> str:
    found = POLICY.search((site / page).read_text())
    assert found, f"{page} has no Content-Security-Policy"
    return found.group(1)


def test_builds_with_properdocs_and_the_plugin(tmp_path: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    site = tmp_path / "site"
    done = subprocess.run(
        [str(BIN / "properdocs"), "build", "--strict", "-q", "-d", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    _entry_pages_exist(site)
    assert "connect-src 'none'" in _policy(site, "diagnose/index.html")
    assert (site / "pagefind" / "pagefind.js").is_file()


def test_zensical_yml_is_made_from_mkdocs_yml() -> None:
    """zensical.yml is mkdocs.yml with Zensical's differences (scripts/zensical_config.py): a
    setting added to mkdocs.yml reaches it, and a change of shape the script cannot follow is
    refused, not copied half-way."""
    from scripts.zensical_config import zensical_config

    mkdocs_yml = (ROOT / "mkdocs.yml").read_text()
    made = zensical_config(mkdocs_yml)
    assert (ROOT / "zensical.yml").read_text() == made, "run `make zensical.yml`"
    assert "encyclopedia:" not in made and "variant: classic" in made
    assert "docs_dir: build/rendered" in made and "css/zensical.css" in made
    added = mkdocs_yml.replace(
        "  - Diagnose: diagnose.md\n", "  - Diagnose: diagnose.md\n  - FAQ: faq.md\n"
    )
    assert "  - FAQ: faq.md\n" in zensical_config(added)
    with pytest.raises(ValueError, match="docs_dir: site_assets"):
        zensical_config(mkdocs_yml.replace("docs_dir: site_assets", "docs_dir: pages"))


def test_builds_with_zensical_over_the_rendered_folder(tmp_path: Path) -> None:
    """zensical.yml builds build/rendered into build/site-zensical; the test works on a copy of
    the project's config files so that it leaves the checkout alone."""
    project = tmp_path / "project"
    project.mkdir()
    for name in ("zensical.yml", "CONTRIBUTING.md"):
        shutil.copy(ROOT / name, project / name)
    shutil.copytree(ROOT / "overrides", project / "overrides")
    shutil.copytree(ROOT / "docs", project / "docs")
    _render(project / "build" / "rendered", ROOT / "entries")
    done = subprocess.run(
        [str(BIN / "zensical"), "build", "--strict", "-f", "zensical.yml"],
        cwd=project,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    site = project / "build" / "site-zensical"
    _entry_pages_exist(site)
    finished = CliRunner().invoke(main, ["finish", str(site), "--entries", str(ROOT / "entries")])
    assert finished.exit_code == 0, finished.output
    assert "connect-src 'none'" in _policy(site, "diagnose/index.html")
    assert "connect-src 'self'" in _policy(site, "data/batchnorm-single-sample-batch/index.html")
    assert '"@type": "FAQPage"' in (site / ENTRY_PAGES[0] / "index.html").read_text()
    assert (site / "pagefind" / "pagefind.js").is_file()
    again = CliRunner().invoke(main, ["finish", str(site), "--no-full-text"])
    assert again.exit_code == 0 and ": 0 pages finished" in again.output


def test_mkdocs_builds_the_same_entry_pages(tmp_path: Path) -> None:
    done = run_build(ROOT / "entries", tmp_path / "site")
    assert done.returncode == 0, done.stderr
    _entry_pages_exist(tmp_path / "site")


ODD_PAGES = [
    # (case, how to plant it in a site, the problem)
    (
        "link-to-a-page-outside",
        lambda s, o: (s / "x.html").symlink_to(o / "page.html"),
        "is a link",
    ),
    ("fifo-named-like-a-page", lambda s, o: os.mkfifo(s / "x.html"), "is a special file"),
    ("link-to-dev-zero", lambda s, o: (s / "x.html").symlink_to("/dev/zero"), "is a link"),
    ("not-utf-8", lambda s, o: (s / "x.html").write_bytes(b"<html>\xff\xfe</html>"), "not UTF-8"),
    ("folder-named-like-a-page", lambda s, o: (s / "x.html").mkdir(), "is a folder"),
]


@pytest.mark.parametrize(
    ("plant", "problem"), [c[1:] for c in ODD_PAGES], ids=[c[0] for c in ODD_PAGES]
)
def test_finish_reports_what_is_not_a_page_and_changes_nothing(
    tmp_path: Path, plant: object, problem: str
) -> None:
    from generator.pages.finish import finish_site
    from generator.pipeline import build_encyclopedia
    from tests.conftest import FIXTURE_ENTRIES

    site, outside = tmp_path / "site", tmp_path / "outside"
    site.mkdir()
    outside.mkdir()
    (outside / "page.html").write_text("<html><head></head><body>outside</body></html>")
    (site / "index.html").write_text("<html><head></head><body>home</body></html>")
    plant(site, outside)  # type: ignore[operator]
    count, summary, problems = finish_site(site, build_encyclopedia(FIXTURE_ENTRIES), False)
    assert (count, summary) == (0, None)
    assert [p.path for p in problems] == [str(site / "x.html")] and problem in problems[0].message
    assert "Content-Security-Policy" not in (site / "index.html").read_text()
    assert (outside / "page.html").read_text().endswith("outside</body></html>")


def test_render_refuses_a_link_among_the_assets(tmp_path: Path) -> None:
    from tests.conftest import FIXTURE_ENTRIES

    assets = tmp_path / "assets"
    shutil.copytree(ROOT / "site_assets", assets)
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the site")
    (assets / "css" / "secret.css").symlink_to(secret)
    out = tmp_path / "rendered"
    result = CliRunner().invoke(
        main, ["render", str(out), "--entries", str(FIXTURE_ENTRIES), "--assets", str(assets)]
    )
    assert result.exit_code == 2
    assert "secret.css is a link: the site would publish what it points to" in result.output
    assert not out.exists()


def test_the_mkdocs_build_refuses_a_linked_asset(tmp_path: Path) -> None:
    """The plugin's check (files.linked_files): a link among the docs_dir's files, or a file in
    a linked folder, would make MkDocs publish its target; theme files outside are not its."""
    from generator.read.files import linked_files

    docs, outside = tmp_path / "docs", tmp_path / "outside"
    (docs / "css").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text("not for the site")
    (docs / "page.md").write_text("# Page")
    (docs / "css" / "secret.css").symlink_to(outside / "secret.txt")
    (docs / "linked").symlink_to(outside, target_is_directory=True)
    theme = tmp_path / "theme" / "main.html"
    theme.parent.mkdir()
    theme.write_text("<html></html>")
    paths = [docs / "page.md", docs / "css" / "secret.css", docs / "linked" / "secret.txt", theme]
    assert linked_files([str(p) for p in paths], str(docs)) == [str(p) for p in paths[1:3]]
