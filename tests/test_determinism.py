"""Two builds of the same entries with different hash seeds give byte-identical sites."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import FIXTURE_ENTRIES
from tests.support import run_build


def snapshot(site: Path) -> dict[str, bytes]:
    return {
        p.relative_to(site).as_posix(): p.read_bytes()
        for p in sorted(site.rglob("*"))
        if p.is_file()
    }


def test_builds_are_byte_identical(tmp_path: Path) -> None:
    sites = []
    for seed in ("1", "2"):
        site = tmp_path / f"site-{seed}"
        result = run_build(FIXTURE_ENTRIES, site, extra_env={"PYTHONHASHSEED": seed})
        assert result.returncode == 0, result.stderr
        sites.append(snapshot(site))
    first, second = sites
    assert sorted(first) == sorted(second)
    differing = [name for name in first if first[name] != second[name]]
    assert differing == []
