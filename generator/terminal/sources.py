"""Where the CLI reads entries from: an explicit `--entries` folder; else an `entries/` folder in
the working directory or in the repository this package was installed from (an editable install);
else the exports of the shipped entries packaged at build time (`generator/shipped/`). A folder's
records are kept between calls (recordcache.py)."""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:  # the records' shape only: listing entries needs no matcher
    from ..diagnose.records import EntrySignatures

PACKAGE = Path(__file__).resolve().parent.parent  # the generator package
SHIPPED = PACKAGE / "shipped"
SHIPPED_FILES = ("entries.json", "signatures.json")
# The site URL given when the wheel was built (ENCYCLOPEDIA_SITE_URL then): the links' default.
SHIPPED_SITE = "site.json"
REPOSITORY_ENTRIES = PACKAGE.parent / "entries"


@dataclass(frozen=True)
class Source:
    """The entry and signature records the CLI works on. The entry records, which only
    `explain`, `search` and the closest pages need, are read when first asked for."""

    signatures: list[EntrySignatures]
    read_entries: Callable[[], list[dict[str, Any]]]

    @functools.cached_property
    def entries(self) -> list[dict[str, Any]]:
        return self.read_entries()


def entries_folder(explicit: str | None) -> Path | None:
    """The entries folder to build from, or None to use the shipped exports."""
    if explicit:
        return Path(explicit)
    for candidate in (Path("entries"), REPOSITORY_ENTRIES):
        if candidate.is_dir():
            return candidate
    return None if (SHIPPED / SHIPPED_FILES[1]).is_file() else Path("entries")


def load(explicit: str | None, base: str) -> Source:
    """Records built from the entries folder, or read from the shipped exports. Raises
    EntryError for broken entries and FileNotFoundError when there is nothing to read."""
    folder = entries_folder(explicit)
    if folder is not None:
        from . import recordcache

        def build() -> recordcache.Records:
            # Reading YAML entries takes the site's stack; the shipped exports take none of it.
            from ..pages import exports
            from ..pipeline import build_encyclopedia

            enc = build_encyclopedia(folder)
            entries = [exports.entry_record(p, base) for p in enc.pages.values()]
            return exports.signature_index(enc, base), entries

        signatures, entries = recordcache.cached(folder, base, build)
        return Source(signatures, lambda: entries)

    def shipped(name: str) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = json.loads((SHIPPED / name).read_text(encoding="utf-8"))
        return records if base == "/" else rebase(records, base)

    # The packaged index was written by exports.signature_index when the wheel was built.
    index = cast("list[EntrySignatures]", shipped(SHIPPED_FILES[1]))
    return Source(index, lambda: shipped(SHIPPED_FILES[0]))


def rebase(records: Sequence[Mapping[str, Any]], base: str) -> list[dict[str, Any]]:
    """Exported records carry site paths (`/memory/x/`); prefix them with the site URL `base`
    (`/`: leave them as they are)."""

    def url(path: str) -> str:
        return base.rstrip("/") + path if path.startswith("/") else path

    out: list[dict[str, Any]] = []
    for record in records:
        moved: dict[str, Any] = dict(record, url=url(record["url"]))
        for key in ("related", "referenced_by"):
            if key in moved:
                moved[key] = [dict(link, url=url(link["url"])) for link in moved[key]]
        out.append(moved)
    return out


def write_shipped(entries: Path, dest: Path) -> list[Path]:
    """Write the shipped exports of `entries` into `dest` (the build step of setup.py)."""
    from ..pages import exports
    from ..pipeline import build_encyclopedia

    files = exports.export_files(build_encyclopedia(entries), "/")
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for name in SHIPPED_FILES:
        path = dest / name
        path.write_text(files[name], encoding="utf-8")
        written.append(path)
    site_url = os.environ.get("ENCYCLOPEDIA_SITE_URL")
    if site_url:
        path = dest / SHIPPED_SITE
        path.write_text(json.dumps({"site_url": site_url}) + "\n", encoding="utf-8")
        written.append(path)
    return written


def built_site_url(shipped: Path = SHIPPED) -> str | None:
    """The site URL this package was built with, if one was given."""
    try:
        value = json.loads((shipped / SHIPPED_SITE).read_text(encoding="utf-8"))["site_url"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return value if isinstance(value, str) and value else None
