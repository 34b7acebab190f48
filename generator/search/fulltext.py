"""Full-text search: Pagefind indexes the built site after MkDocs has written it.

Pagefind reads only what the pages mark (`data-pagefind-body` on entries, weights on the
signatures, the quick answer and the symptoms: entry.md.j2 and overrides/main.html) and writes
a chunked index under `pagefind/`, of which a query loads only the few chunks its words need.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

BUNDLE_DIR = "pagefind"


class FullTextError(Exception):
    """Pagefind failed or is missing; the message says what it printed."""


# Pagefind holds about 0.7 MiB per indexed page while it indexes (3.9 GiB for 5,000 entries),
# so a site with more entry pages than this is indexed in parts of at most this many pages:
# pagefind/ and pagefind/part-N/, listed in pagefind/parts.json, which the search box merges.
# Each page goes to a part by a hash of its path, so every part is a fair sample of the whole
# and ranks by much the same word statistics (parts by category ranked the wrong entries first).
PART_PAGES = 1000
PARTS_FILE = "parts.json"
BODY = "data-pagefind-body"


def _command(site_dir: Path, output: Path | None = None) -> list[str]:
    command = [sys.executable, "-m", "pagefind", "--site", str(site_dir)]
    if output is None:
        return command + ["--output-subdir", BUNDLE_DIR]
    return command + ["--output-path", str(output)]


def parts(site_dir: Path, part_pages: int = PART_PAGES) -> list[list[str]]:
    """The site's indexed pages (those marked `data-pagefind-body`: entry pages) by part, as
    paths relative to `site_dir`: one part when they fit in one."""
    pages = sorted(
        p.relative_to(site_dir).as_posix()
        for p in site_dir.rglob("*.html")
        if BUNDLE_DIR not in p.relative_to(site_dir).parts
        and BODY in p.read_text(encoding="utf-8", errors="replace")
    )
    count = max(1, -(-len(pages) // part_pages))
    grouped: list[list[str]] = [[] for _ in range(count)]
    for page in pages:
        grouped[zlib.crc32(page.encode("utf-8")) % count].append(page)
    return grouped


def _run(command: list[str]) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise FullTextError(f"could not run Pagefind ({err}); install pagefind[bin]") from None
    output = (done.stdout + done.stderr).strip()
    if done.returncode != 0:
        raise FullTextError(
            f"Pagefind exited with {done.returncode}: {output[-2000:]}; "
            "install it with pip install 'pagefind[bin]'"
        )
    return output


def _index_part(site_dir: Path, pages: list[str], output: Path) -> str:
    """Index just `pages`: Pagefind reads a folder that holds them alone, at the same paths
    (hard links, or copies where the file system has none), and writes to `output`."""
    with tempfile.TemporaryDirectory(prefix="encyclopedia-part-") as name:
        for page in pages:
            target = Path(name) / page
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(site_dir / page, target)
            except OSError:
                shutil.copyfile(site_dir / page, target)
        return _run(_command(Path(name), output))


def start_indexing(site_dir: Path) -> subprocess.Popen[bytes]:
    """Index the site in the background, output discarded (a preview's index), at a low
    priority: the next edit's rebuild comes first."""
    return subprocess.Popen(
        [sys.executable, "-m", "generator.search.fulltext", str(site_dir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=(lambda: os.nice(10)) if hasattr(os, "nice") else None,
    )


def index_site(site_dir: Path, part_pages: int = PART_PAGES) -> str:
    """Index the built site in `site_dir`, in parts if it is large; returns Pagefind's summary
    lines (over all the parts)."""
    grouped = parts(site_dir, part_pages)
    if len(grouped) == 1:
        outputs = [_run(_command(site_dir))]
    else:
        bundle = site_dir / BUNDLE_DIR
        shutil.rmtree(bundle, ignore_errors=True)
        outputs = [
            _index_part(site_dir, pages, bundle if n == 0 else bundle / f"part-{n}")
            for n, pages in enumerate(grouped)
        ]
    names = [f"part-{n}" for n in range(1, len(grouped))]
    (site_dir / BUNDLE_DIR / PARTS_FILE).write_text(json.dumps(names) + "\n", encoding="utf-8")
    return _summary(outputs, len(grouped))


def _summary(outputs: list[str], count: int) -> str:
    """Pagefind's "Indexed N pages" (and words, filters...) lines over the parts: the pages
    added up, the rest (words, languages, filters) as many as the largest part has."""
    totals: dict[str, int] = {}
    for output in outputs:
        for line in output.splitlines():
            found = re.match(r"\s*Indexed (\d+) (.+)$", line)
            if found:
                what, n = found.group(2), int(found.group(1))
                add = what in ("page", "pages")
                totals[what] = totals.get(what, 0) + n if add else max(totals.get(what, 0), n)
    lines = [f"Indexed {n} {what}" for what, n in totals.items()]
    return "; ".join(lines) + (f" (in {count} parts)" if count > 1 else "")


if __name__ == "__main__":  # the preview's background index (start_indexing)
    index_site(Path(sys.argv[1]))
