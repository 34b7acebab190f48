"""Only regular files inside the entries folder are read: links, FIFOs, devices and folders
named like entries are refused with `path:1:1: not a regular file (...)`, without reading them,
hanging on them, or publishing what they point to."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_ENTRIES

SECRET = "token-that-must-never-be-published"


def check(entries: Path) -> subprocess.CompletedProcess[str]:
    """`encyclopedia check` in its own process, so that a hang fails the test instead of
    blocking the suite."""
    return subprocess.run(
        [sys.executable, "-m", "generator.terminal.cli", "check", "--entries", str(entries)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture()
def entries(tmp_path: Path) -> Path:
    target = tmp_path / "repo" / "entries"
    shutil.copytree(FIXTURE_ENTRIES, target)
    (tmp_path / "secret.txt").write_text(f"title: {SECRET}\n")
    return target


def refused(result: subprocess.CompletedProcess[str], path: str, kind: str) -> None:
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{path}:1:1: not a regular file ({kind})" in result.stdout
    assert SECRET not in result.stdout + result.stderr
    assert "Traceback" not in result.stderr


def test_link_to_a_file_outside_is_refused(entries: Path, tmp_path: Path) -> None:
    (entries / "memory" / "leak.yaml").symlink_to(tmp_path / "secret.txt")
    refused(check(entries), "entries/memory/leak.yaml", "a symbolic link")


def test_link_to_dev_zero_is_refused_without_reading_it(entries: Path) -> None:
    (entries / "memory" / "zero.yaml").symlink_to("/dev/zero")
    refused(check(entries), "entries/memory/zero.yaml", "a symbolic link")


def test_link_inside_the_folder_is_refused_too(entries: Path) -> None:
    (entries / "memory" / "twin.yaml").symlink_to(entries / "memory" / "alpha-oom.yaml")
    refused(check(entries), "entries/memory/twin.yaml", "a symbolic link")


def test_fifo_does_not_hang(entries: Path) -> None:
    os.mkfifo(entries / "memory" / "pipe.yaml")
    refused(check(entries), "entries/memory/pipe.yaml", "a FIFO (named pipe)")


def test_linked_category_folder_is_refused(entries: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    shutil.copytree(entries / "memory", outside)
    (entries / "stolen").symlink_to(outside, target_is_directory=True)
    refused(check(entries), "entries/stolen", "a symbolic link")


def test_linked_tag_vocabulary_is_refused(entries: Path, tmp_path: Path) -> None:
    tags = entries / "_tags.yaml"
    shutil.move(tags, tmp_path / "tags.yaml")
    tags.symlink_to(tmp_path / "tags.yaml")
    refused(check(entries), "entries/_tags.yaml", "a symbolic link")


def test_folder_named_like_an_entry_is_refused(entries: Path) -> None:
    (entries / "memory" / "x.yaml").mkdir()
    result = check(entries)
    assert result.returncode == 1
    assert "entries/memory/x.yaml:1:1: is a folder, not an entry file" in result.stdout


def test_huge_file_is_refused_after_reading_the_limit(entries: Path) -> None:
    huge = entries / "memory" / "huge.yaml"
    with huge.open("wb") as file:
        file.truncate(8 * 1024**3)  # sparse: 8 GiB that would take minutes to read whole
    result = check(entries)
    assert result.returncode == 1
    assert "entries/memory/huge.yaml:1:1: file is 8,589,934,592 bytes, over the limit" in (
        result.stdout
    )


def test_hidden_editor_files_are_skipped(entries: Path) -> None:
    (entries / "memory" / ".#alpha-oom.yaml").symlink_to("nobody@host.1234:1")  # emacs lock
    (entries / "memory" / ".alpha-oom.yaml.swp").write_bytes(b"\x00\x01")
    assert check(entries).returncode == 0


def test_the_entries_folder_itself_may_be_a_link(entries: Path, tmp_path: Path) -> None:
    link = tmp_path / "linked-entries"
    link.symlink_to(entries, target_is_directory=True)
    assert check(link).returncode == 0
