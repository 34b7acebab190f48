"""Two builds of the same entries with different hash seeds give byte-identical sites.

Pagefind 1.5 writes its filter files (category, severity) in an order of its own that changes
between runs, and names them, the metadata file that lists them and the entry file by content
hash (and compresses them to sizes that differ by a byte): those are compared by shape (the
same version, page counts and number of files), every other file byte for byte.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import FIXTURE_ENTRIES
from tests.support import run_build


def _unordered(name: str) -> bool:
    return (
        name.startswith("pagefind/filter/")
        or name == "pagefind/pagefind-entry.json"
        or (name.startswith("pagefind/") and name.endswith(".pf_meta"))
    )


def snapshot(site: Path) -> dict[str, bytes]:
    return {
        p.relative_to(site).as_posix(): p.read_bytes()
        for p in sorted(site.rglob("*"))
        if p.is_file() and not _unordered(p.relative_to(site).as_posix())
    }


def pagefind_shape(site: Path) -> tuple[object, ...]:
    entry = json.loads((site / "pagefind" / "pagefind-entry.json").read_text())
    languages = {k: v["page_count"] for k, v in entry["languages"].items()}
    files = [p for p in (site / "pagefind").rglob("*") if _unordered(str(p.relative_to(site)))]
    return entry["version"], languages, len(files)


def test_builds_are_byte_identical(tmp_path: Path) -> None:
    sites = []
    shapes = []
    for seed in ("1", "2"):
        site = tmp_path / f"site-{seed}"
        result = run_build(FIXTURE_ENTRIES, site, extra_env={"PYTHONHASHSEED": seed})
        assert result.returncode == 0, result.stderr
        sites.append(snapshot(site))
        shapes.append(pagefind_shape(site))
    assert shapes[0] == shapes[1]
    first, second = sites
    assert sorted(first) == sorted(second)
    differing = [name for name in first if first[name] != second[name]]
    assert differing == []
