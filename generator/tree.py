"""Writing a generated docs tree to a folder that a builder (MkDocs, ProperDocs, Zensical) then
builds as its docs_dir. A manifest lists what the last run wrote, so a page of a removed entry
is deleted, and a file whose bytes did not change is not touched: it keeps its mtime, and a
builder that watches the folder rebuilds only what changed."""

from __future__ import annotations

import json
import os
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


def write_tree(folder: Path, files: Mapping[str, bytes]) -> Written:
    """Make `folder` hold exactly `files` (path -> bytes) plus whatever else it held that no
    earlier run wrote. A folder that has content but no manifest is refused: it is somebody's."""
    for path in files:
        _checked(path)
    if folder.exists() and any(folder.iterdir()) and not (folder / MANIFEST).is_file():
        raise TreeError(
            f"{folder} is not empty and holds no {MANIFEST}: give an empty or new folder, or one "
            "this command wrote before"
        )
    previous = _previous(folder)
    folder.mkdir(parents=True, exist_ok=True)
    changed = []
    for path, content in sorted(files.items()):
        target = folder / path
        if target.is_file() and target.read_bytes() == content:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        part = target.with_name(f".{target.name}.part")
        part.write_bytes(content)
        os.replace(part, target)
        changed.append(path)
    removed = sorted(previous - set(files))
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
        (folder / MANIFEST).write_text(manifest, encoding="utf-8")
    return Written(tuple(changed), tuple(removed), len(files) - len(changed))
