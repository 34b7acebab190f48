"""The pieces of the preview's quick rebuild that do not need a server (the server itself is
exercised in test_live_preview.py)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from generator.serve.preview import Builds, fingerprint, is_list, write_files


def test_fingerprint_changes_with_any_file_under_the_inputs(tmp_path: Path) -> None:
    folder, single = tmp_path / "assets", tmp_path / "mkdocs.yml"
    (folder / "css").mkdir(parents=True)
    (folder / "css" / "a.css").write_text("a {}")
    single.write_text("site_name: x\n")
    first = fingerprint([folder, single])
    assert fingerprint([folder, single]) == first
    (folder / "css" / "b.css").write_text("b {}")
    second = fingerprint([folder, single])
    assert second != first
    stat = single.stat()
    os.utime(single, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert fingerprint([folder, single]) != second


def test_the_quick_path_falls_back_to_the_full_build() -> None:
    builds, ran = Builds(), []

    def quick_path() -> bool:
        ran.append("quick")
        return True

    full = builds.builder(lambda: ran.append("full"), lambda: False)
    quick = builds.builder(lambda: ran.append("full"), quick_path)
    full()
    quick()
    assert ran == ["full", "quick"]


def test_the_second_half_runs_after_the_build_unless_a_newer_build_came_first() -> None:
    builds, ran = Builds(), []
    done = threading.Event()

    def quick_with_rest(tag: str) -> bool:
        ran.append(f"{tag} first half")

        def rest() -> None:
            ran.append(f"{tag} rest")
            done.set()

        builds.later(rest)
        return True

    builds.builder(lambda: None, lambda: quick_with_rest("one"))()
    assert done.wait(5)
    assert ran == ["one first half", "one rest"]

    # A build that starts before the rest of the last one runs supersedes it.
    ran.clear()
    done.clear()
    with builds.lock:  # a build is running
        builds.later(lambda: ran.append("stale rest"))
        builds.generation += 1  # and the next build starts before the rest of this one
    builds.builder(lambda: None, lambda: quick_with_rest("three"))()
    assert done.wait(5)
    assert ran == ["three first half", "three rest"]


def test_files_are_written_where_the_site_serves_them(tmp_path: Path) -> None:
    write_files(tmp_path, {"api/errors/w0.json": "{}\n", "api/entries.json": "[]\n"})
    assert (tmp_path / "api" / "errors" / "w0.json").read_text() == "{}\n"
    assert (tmp_path / "api" / "entries.json").read_text() == "[]\n"


def test_the_lists_are_told_from_the_other_generated_pages() -> None:
    lists = ["memory/index.md", "memory/page/2.md", "tags/oom.md", "tags/oom/page/3.md"]
    others = ["memory/cuda-out-of-memory.md", "index.md", "tags/index.md", "severity.md"]
    assert [is_list(n) for n in lists + others] == [True] * 4 + [False] * 4
