"""Which files under the entries folder are read, and how: only regular files, never through a
symbolic link, never more than the size limit plus one byte.

A pull request controls everything under `entries/`, so a file there may be a link to a secret
elsewhere in the checkout, to `/dev/zero`, or a FIFO that blocks whoever opens it. The scan looks
at each name with `lstat` and refuses anything that is not a plain file or folder; the reader opens
with O_NOFOLLOW and O_NONBLOCK and checks what it opened before reading a byte.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from . import reserved
from .model import is_slug
from .problems import Problem
from .yamlsource import MAX_BYTES

CATEGORY_FILE = "_category.yaml"
TAGS_FILE = "_tags.yaml"
COMMON_FILE = "_common.yaml"  # read by common.py
_KINDS = {
    stat.S_IFLNK: "a symbolic link",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}


@dataclass(frozen=True)
class Layout:
    """The files the entries folder holds, each list sorted, and what is wrong with its shape."""

    category_files: tuple[Path, ...]
    entry_files: tuple[Path, ...]
    tags_file: Path | None
    problems: tuple[Problem, ...]


def display(path: Path, base: Path) -> str:
    """A path as problems and edit links name it: relative to the folder holding `entries/`."""
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        return path.as_posix()


def _kind(mode: int) -> str:
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def _not_regular(shown: str, mode: int) -> Problem:
    return Problem(
        shown,
        1,
        1,
        f"not a regular file ({_kind(mode)})",
        "entries are plain files in the repository: replace it with the file itself, or delete it",
    )


def scan(entries_dir: Path) -> Layout:
    """Walk `entries_dir` without following links. Names starting with `.` are editor and
    system files and are skipped, except folders, which would hide entries."""
    walk = _Walk(entries_dir.parent)
    walk.folder(entries_dir, 1)
    return Layout(tuple(walk.categories), tuple(walk.entries), walk.tags, tuple(walk.problems))


class _Walk:
    """What a scan has found so far: depth 1 is the entries folder, 2 a category folder."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.categories: list[Path] = []
        self.entries: list[Path] = []
        self.tags: Path | None = None
        self.problems: list[Problem] = []

    def problem(self, path: Path, message: str, fix: str) -> None:
        self.problems.append(Problem(display(path, self.base), 1, 1, message, fix))

    def folder(self, folder: Path, depth: int) -> None:
        try:
            items = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as err:
            self.problem(folder, f"cannot read folder: {err.strerror}", "check its permissions")
            return
        for item in items:
            path = Path(item.path)
            mode = item.stat(follow_symlinks=False).st_mode
            if stat.S_ISDIR(mode):
                self.subfolder(path, depth)
            elif not item.name.startswith("."):  # editor lock, swap and backup files: never read
                self.file(path, mode, depth)

    def subfolder(self, path: Path, depth: int) -> None:
        if depth == 1 and not is_slug(path.name):
            self.problem(
                path,
                f"category folder `{path.name}` is not a slug",
                "rename it to lower-case ASCII letters, digits and single hyphens, "
                "e.g. `memory` (at most 80 characters)",
            )
        elif depth == 1 and (taken := reserved.category_problem(path.name)):
            self.problem(path, *taken)
        elif path.name.endswith((".yaml", ".yml")):
            self.problem(path, "is a folder, not an entry file", "move its files out and remove it")
        elif not path.name.startswith("."):
            self.folder(path, depth + 1)

    def file(self, path: Path, mode: int, depth: int) -> None:
        if not stat.S_ISREG(mode):
            self.problems.append(_not_regular(display(path, self.base), mode))
        elif path.suffix == ".yml":
            self.problem(path, "entry files end in `.yaml`", f"rename it to `{path.stem}.yaml`")
        elif path.suffix != ".yaml":
            return
        elif depth == 1 and path.name == TAGS_FILE:
            self.tags = path
        elif depth == 1 and path.name == COMMON_FILE:
            return
        elif depth != 2:
            self.problem(
                path, "entry is not in a category folder", "move it to entries/<category>/<id>.yaml"
            )
        elif path.name == CATEGORY_FILE:
            self.categories.append(path)
        else:
            self.entries.append(path)


def read_regular(path: Path, shown: str) -> tuple[bytes | None, list[Problem]]:
    """The bytes of `path` if it is a regular file of at most MAX_BYTES, else the problem."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        if err.errno == errno.ELOOP:
            return None, [_not_regular(shown, stat.S_IFLNK)]
        problem = Problem(
            shown, 1, 1, f"cannot read file: {err.strerror}", "check the file's permissions"
        )
        return None, [problem]
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            return None, [_not_regular(shown, info.st_mode)]
        raw = file.read(MAX_BYTES + 1)
    if len(raw) > MAX_BYTES:
        return None, [
            Problem(
                shown,
                1,
                1,
                f"file is {max(info.st_size, len(raw)):,} bytes, over the limit of {MAX_BYTES:,}",
                "an entry is a page of text: shorten it or split it into several entries",
            )
        ]
    return raw, []


def linked_files(paths: Iterable[str], root: str) -> list[str]:
    """The files among `paths` that lie in `root` and are links, or lie in a linked folder
    there: a builder that copies them would publish what they point to."""
    real_root = os.path.realpath(root)
    found = []
    for path in paths:
        rel = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
        if rel.startswith(os.pardir):
            continue  # not one of the folder's own (the theme's files)
        parts = rel.split(os.sep)
        steps = [os.path.join(root, *parts[: n + 1]) for n in range(len(parts))]
        outside = not os.path.realpath(path).startswith(real_root + os.sep)
        if outside or any(os.path.islink(step) for step in steps):
            found.append(path)
    return found
