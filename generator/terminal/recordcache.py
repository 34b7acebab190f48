"""The records the CLI builds from an entries folder, kept between calls: reading and checking
every YAML file takes about 2 s at 200 entries, which `run` would add to every job it wraps and
`diagnose` to every log. The key is every file under the folder (its path, size and modification
time), the package's own files (the code that builds the records) and the site URL, so any edit
misses the cache. A folder with problems is never cached: its problems are reported (exit 2) on
every call. The cache is `records/` under releases.cache_root(); a file that cannot be read or
written is no error, only a rebuild.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..diagnose.records import EntrySignatures

from ..prove.releases import cache_root

PACKAGE = Path(__file__).resolve().parent.parent  # the generator package
KEEP = 8  # cached folders kept (the newest); older files are removed when one is written
# (signature records, entry records)
Records = tuple["list[EntrySignatures]", list[dict[str, Any]]]


def _stamp(root: Path) -> list[str]:
    """`path size mtime` of every file under `root`, in name order (compiled bytecode aside:
    Python rewrites it by itself)."""
    out = []
    files = (p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    for path in sorted(files):
        st = path.stat()
        out.append(f"{path.relative_to(root).as_posix()} {st.st_size} {st.st_mtime_ns}")
    return out


def key(folder: Path, base: str) -> str:
    lines = [base, str(folder.resolve()), *_stamp(folder), "--", *_stamp(PACKAGE)]
    return hashlib.sha256("\n".join(lines).encode("utf-8", "surrogateescape")).hexdigest()


def cached(folder: Path, base: str, build: Callable[[], Records]) -> Records:
    """The records of `folder` from the cache, else from `build()` (then cached). What `build`
    raises (broken entries) passes through, and nothing is written."""
    where = cache_root() / "records"
    name = key(folder, base) + ".json"
    try:
        data = json.loads((where / name).read_text(encoding="utf-8"))
        return data["signatures"], data["entries"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    built = build()
    # As JSON, so that a call that builds and one that reads the cache hand back the same values.
    text = json.dumps({"signatures": built[0], "entries": built[1]}, ensure_ascii=False)
    _write(where, name, text)
    data = json.loads(text)
    return data["signatures"], data["entries"]


def _write(where: Path, name: str, text: str) -> None:
    try:
        where.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=where, suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
            os.replace(tmp, where / name)  # whole or not at all, also beside a concurrent call
        finally:
            Path(tmp).unlink(missing_ok=True)
        old = sorted(where.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        for path in old[KEEP:]:
            path.unlink(missing_ok=True)
    except OSError:
        pass
