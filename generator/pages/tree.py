"""Writing a generated docs tree to a folder that a builder (MkDocs, ProperDocs, Zensical) then
builds as its docs_dir. A manifest lists what the last run wrote, so a page of a removed entry
is deleted, and a file whose bytes did not change is not touched: it keeps its mtime, and a
builder that watches the folder rebuilds only what changed."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

MANIFEST = ".encyclopedia-manifest.json"


@dataclass(frozen=True)
class Written:
    """What one run did to the folder, by path inside it."""

    changed: tuple[str, ...]
    removed: tuple[str, ...]
    unchanged: int


class TreeError(Exception):
    """The folder cannot hold the tree (a path escapes it, or it is not ours to write)."""


def _checked(path: str) -> PurePosixPath:
    pure = PurePosixPath(path)
    if pure.is_absolute() or ".." in pure.parts or not pure.parts or path.startswith("."):
        raise TreeError(f"`{path}` is not a relative path inside the folder")
    return pure


def _previous(folder: Path) -> set[str]:
    manifest = folder / MANIFEST
    if not manifest.is_file():
        return set()
    try:
        listed = json.loads(manifest.read_text(encoding="utf-8"))["files"]
    except (ValueError, KeyError, TypeError) as err:
        raise TreeError(f"{manifest} is not a manifest this command wrote ({err})") from None
    return {str(_checked(p)) for p in listed}


def _odd(folder: Path, path: str) -> str | None:
    """Why `path` inside `folder` is not ours to write: a link or a special file on the way to
    it or at it. Nothing is followed: a link planted in the folder (a pull request can commit
    one) would send the write, or a delete, outside it."""
    current = folder
    parts = PurePosixPath(path).parts
    for n, part in enumerate(parts):
        current = current / part
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            return None  # the rest is made by this command
        last = n == len(parts) - 1
        if stat.S_ISLNK(mode):
            return f"{current} is a link; nothing here follows one: remove it"
        if not last and not stat.S_ISDIR(mode):
            return f"{current} is not a folder; move it away"
        if last and not stat.S_ISREG(mode):
            return f"{current} is not a regular file; remove it"
    return None


def write_replacing(target: Path, content: bytes) -> None:
    """Write beside `target` and rename over it, never through a link."""
    part = target.with_name(f".{target.name}.part")
    if os.path.lexists(part):
        os.unlink(part)  # a leftover, or a planted link: the link goes, not what it points to
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as out:
        out.write(content)
    os.replace(part, target)


def write_tree(folder: Path, files: Mapping[str, bytes]) -> Written:
    """Make `folder` hold exactly `files` (path -> bytes) plus whatever else it held that no
    earlier run wrote. A folder that has content but no manifest is refused: it is somebody's.
    So is a file this command did not write, a link or a special file where it would write or
    delete: every such problem is reported before anything is written."""
    for path in files:
        _checked(path)
    if folder.exists() and any(folder.iterdir()) and not (folder / MANIFEST).is_file():
        raise TreeError(
            f"{folder} is not empty and holds no {MANIFEST}: give an empty or new folder, or one "
            "this command wrote before"
        )
    previous = _previous(folder)
    removed = sorted(previous - set(files))
    problems = [odd for path in [*sorted(files), *removed] if (odd := _odd(folder, path))]
    for path in sorted(files):
        if path not in previous and os.path.lexists(folder / path) and not _odd(folder, path):
            problems.append(
                f"{folder / path} was not written by this command; move it away or delete it"
            )
    if problems:
        raise TreeError("; ".join(problems))
    folder.mkdir(parents=True, exist_ok=True)
    changed = []
    for path, content in sorted(files.items()):
        target = folder / path
        if target.is_file() and target.read_bytes() == content:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        write_replacing(target, content)
        changed.append(path)
    for path in removed:
        target = folder / path
        if target.is_file():
            target.unlink()
        for parent in target.parents:
            if parent == folder or not parent.is_dir() or any(parent.iterdir()):
                break
            parent.rmdir()
    manifest = json.dumps({"files": sorted(files)}, indent=0) + "\n"
    if previous != set(files) or not (folder / MANIFEST).is_file():
        write_replacing(folder / MANIFEST, manifest.encode())
    return Written(tuple(changed), tuple(removed), len(files) - len(changed))
