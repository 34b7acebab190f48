"""The package index, as `encyclopedia verify` reads it: each package's list of releases and the
archive (wheel or source) of one release, fetched with the ordinary pip client and cached, so a
second run, or a run without a network, reads the cache.

The cache lives in $ENCYCLOPEDIA_CACHE, else $XDG_CACHE_HOME/encyclopedia, else
~/.cache/encyclopedia: `releases/<package>.json` and `archives/<package>-<version>/<file>`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

# A release list this old is asked again when a version is missing from it.
STALE_SECONDS = 24 * 3600
PIP_SECONDS = 600  # a large wheel (torch) on a slow line
ARCHIVE_SUFFIXES = (".whl", ".zip", ".tar.gz", ".tgz")


class IndexUnreachable(Exception):
    """The index could not be asked and the cache does not hold the answer."""


def cache_root() -> Path:
    if found := os.environ.get("ENCYCLOPEDIA_CACHE"):
        return Path(found)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "encyclopedia"


def canonical(package: str) -> str:
    """The package's name as the index compares names (PEP 503)."""
    return re.sub(r"[-_.]+", "-", package).lower()


def _pip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        timeout=PIP_SECONDS,
    )


# pip lists only the releases installable where it runs: asked for this machine (source
# releases included) and for wheels of older and newer Pythons, the union is every release.
_LINUX: tuple[str, ...] = (
    "--platform",
    "manylinux1_x86_64",
    "--platform",
    "manylinux2014_x86_64",
    "--platform",
    "manylinux_2_28_x86_64",
    "--only-binary=:all:",
)
TARGETS: tuple[tuple[str, ...], ...] = (
    (),
    ("--python-version", "3.7", *_LINUX),
    ("--python-version", "3.9", *_LINUX),
    ("--python-version", "3.13", *_LINUX),
)


def _listed(package: str, target: tuple[str, ...]) -> tuple[str, ...]:
    try:
        found = _pip("index", "versions", "--pre", package, *target)
    except subprocess.TimeoutExpired:
        raise IndexUnreachable(f"the index did not answer for {package}") from None
    line = next((x for x in found.stdout.splitlines() if x.startswith("Available")), None)
    if line is not None:
        return tuple(v.strip() for v in line.split(":", 1)[1].split(","))
    if "No matching distribution" in found.stderr + found.stdout:
        return ()
    raise IndexUnreachable(f"cannot list the releases of {package}: {found.stderr.strip()[-200:]}")


@dataclass
class PackageIndex:
    """The index through the cache. `offline` never asks the index, only the cache."""

    root: Path = field(default_factory=cache_root)
    offline: bool = False
    asked: set[str] = field(default_factory=set)  # packages whose list was fetched this run

    def _list_path(self, package: str) -> Path:
        return self.root / "releases" / f"{canonical(package)}.json"

    def _cached(self, package: str) -> tuple[tuple[str, ...], float] | None:
        try:
            data = json.loads(self._list_path(package).read_text(encoding="utf-8"))
            return tuple(data["versions"]), float(data["fetched"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _fetch_list(self, package: str) -> tuple[str, ...]:
        if self.offline:
            raise IndexUnreachable(f"no cached release list of {package} (offline)")
        self.asked.add(canonical(package))
        found: set[str] = set()
        for target in TARGETS:
            found.update(_listed(package, target))
        versions = tuple(sorted(found))
        path = self._list_path(package)
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(path.name + ".tmp")
        temporary.write_text(json.dumps({"versions": versions, "fetched": time.time()}))
        temporary.replace(path)
        return versions

    def releases(self, package: str, wanted: str | None = None) -> tuple[str, ...]:
        """The package's releases (empty when the index has no such package). The cached list
        is used unless it lacks `wanted` and was not fetched in the last day or in this run."""
        cached = self._cached(package)
        if cached is not None:
            versions, fetched = cached
            fresh = time.time() - fetched < STALE_SECONDS or canonical(package) in self.asked
            if wanted is None or has_release(versions, wanted) or fresh or self.offline:
                return versions
        return self._fetch_list(package)

    def has(self, package: str, version: str) -> bool:
        """True when `version` is a release or a series of releases of `package`. pip lists no
        yanked release, so an exact version missing from the list is asked for by itself."""
        if has_release(self.releases(package, version), version):
            return True
        if not re.fullmatch(r"\d+(\.\d+){2,}\S*", version):
            return False
        path = self.root / "releases" / f"{canonical(package)}={version}.yanked"
        if path.exists():
            return True
        if self.offline:  # the cached list is the answer; a yanked release seen online is too
            return False
        try:
            found = _pip(
                "install",
                "--dry-run",
                "--no-deps",
                "--ignore-installed",
                "--quiet",
                f"{package}=={version}",
            )
        except subprocess.TimeoutExpired:
            raise IndexUnreachable(f"the index did not answer for {package}=={version}") from None
        if found.returncode == 0:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("")
            return True
        return False

    def archive(self, package: str, version: str, platform: str | None = None) -> Path:
        """The archive of `package==version`: the wheel for `platform`, or for this machine,
        else the sdist."""
        name = f"{canonical(package)}-{version}" + (f"-{platform}" if platform else "")
        folder = self.root / "archives" / name
        found = _archive_in(folder)
        if found is not None:
            return found
        if self.offline:
            raise IndexUnreachable(f"{package}=={version} is not in the cache (offline)")
        partial = folder.with_name(folder.name + ".partial")
        partial.mkdir(parents=True, exist_ok=True)
        target = ("--platform", platform, "--only-binary=:all:") if platform else ()
        try:
            got = _pip(
                "download",
                "--no-deps",
                "--quiet",
                *target,
                "-d",
                str(partial),
                f"{package}=={version}",
            )
        except subprocess.TimeoutExpired:
            raise IndexUnreachable(f"downloading {package}=={version} took too long") from None
        found = _archive_in(partial)
        if got.returncode != 0 or found is None:
            raise IndexUnreachable(
                f"cannot download {package}=={version}: {got.stderr.strip()[-200:]}"
            )
        partial.replace(folder)  # whole or not at all
        result = _archive_in(folder)
        assert result is not None
        return result


def _archive_in(folder: Path) -> Path | None:
    if not folder.is_dir():
        return None
    return next((p for p in sorted(folder.iterdir()) if p.name.endswith(ARCHIVE_SUFFIXES)), None)


def has_release(versions: tuple[str, ...], version: str) -> bool:
    """True when `version` is a release, or a series of releases (`2.5` for 2.5.0, 2.5.1)."""
    series = version.removesuffix(".x")
    return any(v == series or v.startswith(series + ".") for v in versions)


def member(archive: Path, file: str) -> bytes | None:
    """The bytes of `file` in the archive: a path inside a wheel, or inside an sdist's top
    folder (`pkg/module.py` finds `pkg-1.0/pkg/module.py`). None when it is not there."""
    name = file.strip("/")
    if archive.name.endswith((".whl", ".zip")):
        with zipfile.ZipFile(archive) as zipped:
            names = zipped.namelist()
            hit = next((n for n in names if n == name or n.split("/", 1)[-1] == name), None)
            return zipped.read(hit) if hit is not None else None
    with tarfile.open(archive) as tar:
        for info in tar:
            if info.isfile() and info.name.split("/", 1)[-1] == name:
                extracted = tar.extractfile(info)
                return extracted.read() if extracted is not None else None
    return None


def members(archive: Path) -> list[str]:
    """The file names an archive holds, as `member` takes them."""
    if archive.name.endswith((".whl", ".zip")):
        with zipfile.ZipFile(archive) as zipped:
            return [n for n in zipped.namelist() if not n.endswith("/")]
    with tarfile.open(archive) as tar:
        return [info.name.split("/", 1)[-1] for info in tar if info.isfile()]
