"""What a preview reuses across rebuilds (loaded files, entry rules, rendered entry pages,
export records) must never show stale content: a rebuild after an edit gives exactly what a
fresh build of the edited files gives, and reuses what the edit did not touch."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from generator.pages.render import (
    CATEGORY_LIST_LIMIT,
    LIST_PAGE_SIZE,
    SEVERITY_LIST_LIMIT,
    render_site,
)
from generator.pipeline import Reuse, build_encyclopedia, build_site
from generator.read.link import CategoryPage, Encyclopedia, Page
from generator.read.load import LoadCache
from generator.read.problems import EntryError
from tests.conftest import FIXTURE_ENTRIES
from tests.support import ROOT

OVERRIDES = ROOT / "overrides" / "encyclopedia"


def _site(entries: Path, cache: LoadCache | None, reuse: Reuse | None = None) -> dict[str, str]:
    enc = build_encyclopedia(entries, cache)
    site = build_site(enc, "/", "https://e/{path}", OVERRIDES, reuse)
    return {p.src_uri: p.markdown for p in site.pages} | site.files


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    stat = path.stat()
    path.write_text(text.replace(old, new))
    # A new mtime even on a file system with coarse timestamps.
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


def test_rebuild_with_caches_equals_a_fresh_build(tmp_path: Path) -> None:
    entries = tmp_path / "entries"
    shutil.copytree(FIXTURE_ENTRIES, entries)
    cache, reuse = LoadCache(), Reuse()
    first = _site(entries, cache, reuse)
    assert _site(entries, cache, reuse) == first  # nothing changed: the same site
    assert reuse.pages and reuse.records and cache.rule_problems

    # The linked entry's title shows on the page that links to it and in the exports.
    beta = entries / "kernels" / "beta-illegal-access.yaml"
    _edit(beta, "title: Beta illegal access", "title: Beta renamed")
    second = _site(entries, cache, reuse)
    assert second == _site(entries, None)
    assert "Beta renamed" in second["memory/alpha-oom.md"]
    assert "Beta renamed" in second["api/entries.json"]
    assert "Beta renamed" in second["api/signatures.json"]

    # A field only its own page shows changes that page alone among the entry pages.
    _edit(beta, "Beta renamed", "Beta renamed again")
    _edit(entries / "memory" / "alpha-oom.yaml", "fix_time:", "fix_time: about")
    third = _site(entries, cache, reuse)
    assert third == _site(entries, None)
    changed = {name for name in third if third[name] != second.get(name)}
    assert "memory/alpha-oom.md" in changed and "kernels/beta-illegal-access.md" in changed


def test_a_renamed_new_or_removed_entry_leaves_no_stale_page(tmp_path: Path) -> None:
    """A renamed file's record equals the old one (the id is the file's name, not a field):
    the lists must still link the new page. A partial render (`only`, the preview's first
    half) leaves the memo as good as a full one."""
    entries = tmp_path / "entries"
    shutil.copytree(FIXTURE_ENTRIES, entries)
    cache, reuse = LoadCache(), Reuse()
    _site(entries, cache, reuse)
    gamma = entries / "kernels" / "tricky-text.yaml"
    gamma.rename(entries / "kernels" / "tricky-text-renamed.yaml")
    renamed = _site(entries, cache, reuse)
    assert renamed == _site(entries, None)
    assert "tricky-text-renamed.md" in renamed["kernels/index.md"]

    alpha = entries / "memory" / "alpha-oom.yaml"
    new = entries / "memory" / "delta-new.yaml"
    new.write_text(
        alpha.read_text()
        .replace("title: Alpha out of memory", "title: Delta brand new")
        .replace("aliases: [alpha-old]", "aliases: []")
        .replace("alpha ran out of memory", "delta ran out of memory")
        .replace("alpha_kernel_launch", "delta_kernel_launch")
    )
    enc = build_encyclopedia(entries, cache)
    partial = render_site(
        enc, "https://e/{path}", OVERRIDES, reuse.pages, "memory/delta-new.md".__eq__
    )
    assert "Delta brand new" in {p.src_uri: p.markdown for p in partial}["memory/delta-new.md"]
    added = _site(entries, cache, reuse)
    assert added == _site(entries, None)
    assert "Delta brand new" in added["memory/index.md"]

    new.unlink()
    removed = _site(entries, cache, reuse)
    assert removed == _site(entries, None) and "memory/delta-new.md" not in removed


def test_a_broken_edit_is_reported_and_a_fix_recovers(tmp_path: Path) -> None:
    entries = tmp_path / "entries"
    shutil.copytree(FIXTURE_ENTRIES, entries)
    cache = LoadCache()
    good = _site(entries, cache)
    alpha = entries / "memory" / "alpha-oom.yaml"
    original = alpha.read_text()
    _edit(alpha, "severity: ", "severity: huge\nseverity: ")
    with pytest.raises(EntryError, match="duplicate key `severity`"):
        build_encyclopedia(entries, cache)
    alpha.write_text(original)
    os.utime(alpha, ns=(0, alpha.stat().st_mtime_ns + 2_000_000_000))
    assert _site(entries, cache) == good


def test_pages_that_list_every_entry_stay_bounded() -> None:
    """At thousands of entries the severity page and the categories overview show a bounded
    number of entries per group and point to the category pages for the rest; category and tag
    pages split their lists into pages."""
    assert LIST_PAGE_SIZE == 100, "the figures below assume pages of 100"
    small = build_encyclopedia(FIXTURE_ENTRIES)
    model = small.pages["alpha-oom"]
    many = tuple(
        Page(f"alpha-oom-{n}", model.category, model.path, model.entry) for n in range(300)
    )
    memory = next(c for c in small.categories if c.slug == model.category)
    big = Encyclopedia(
        (CategoryPage(memory.slug, memory.path, memory.category, many),),
        {p.id: p for p in many},
        {},
    )
    pages = {p.src_uri: p.markdown for p in render_site(big, None, OVERRIDES)}
    severity = pages["severity.md"]
    assert severity.count("](../memory/alpha-oom-") + severity.count("](memory/alpha-oom-") == (
        SEVERITY_LIST_LIMIT
    )
    assert f"{300 - SEVERITY_LIST_LIMIT} more high entries" in severity
    overview = pages["categories.md"]
    assert overview.count("enc-badge enc-severity-high") == CATEGORY_LIST_LIMIT
    assert "All 300 Memory entries" in overview
    # The category's own list and each tag's go on over pages of LIST_PAGE_SIZE entries, each
    # entry on exactly one of them, every page linking every other.
    cases = (
        ("memory/index.md", "memory", "[1](../index.md)", "[3](page/3.md)", "# Memory"),
        ("tags/oom.md", "tags/oom", "[1](../../oom.md)", "[3](oom/page/3.md)", "# Tag: oom"),
    )
    for first, stem, back_to_first, on_to_third, heading in cases:
        uris = [first] + [f"{stem}/page/{n}.md" for n in (2, 3)]
        assert f"{stem}/page/4.md" not in pages
        listed = [
            line.split("](")[1].split(")")[0]
            for u in uris
            for line in pages[u].splitlines()
            if line.startswith("| [")
        ]
        assert len(listed) == len(set(listed)) == 300
        assert "Entries 201 to 300 of 300." in pages[uris[2]]
        assert f"\n{heading} (page 3 of 3)\n" in pages[uris[2]]
        assert f"\n{heading}\n" in pages[first] and " (page " not in pages[first]
        assert '<strong aria-current="page">2</strong>' in pages[uris[1]]
        assert back_to_first in pages[uris[1]] and on_to_third in pages[first]


def test_the_diagnose_script_holds_the_exported_index_compactly() -> None:
    files = _site(ROOT / "entries", None)
    script = files["api/signatures.js"]
    prefix, suffix = "self.DIAGNOSE_INDEX = ", ";\n"
    assert script.startswith(prefix) and script.endswith(suffix)
    compact = script[len(prefix) : -len(suffix)]
    assert json.loads(compact) == json.loads(files["api/signatures.json"])
    assert "\n" not in compact and len(compact) < len(files["api/signatures.json"])
