"""Full-text search: Pagefind indexes the built site after MkDocs has written it.

Pagefind reads only what the pages mark (`data-pagefind-body` on entries, weights on the
signatures, the quick answer and the symptoms: entry.md.j2 and overrides/main.html) and writes
a chunked index under `pagefind/`, of which a query loads only the few chunks its words need.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

BUNDLE_DIR = "pagefind"


class FullTextError(Exception):
    """Pagefind failed or is missing; the message says what it printed."""


# Pagefind holds about 0.7 MiB per indexed page while it indexes (3.9 GiB for 5,000 entries), so
# a site with more entry pages than this is indexed in parts: each part a few category folders,
# the first at pagefind/ and the others at pagefind/part-N/, listed in pagefind/parts.json for
# the search box to merge. A site this size or smaller keeps its one index.
PART_PAGES = 1000
PARTS_FILE = "parts.json"
BODY = "data-pagefind-body"


def _command(site_dir: Path, output: str = BUNDLE_DIR, glob: str | None = None) -> list[str]:
    command = [sys.executable, "-m", "pagefind", "--site", str(site_dir), "--output-subdir", output]
    return command + (["--glob", glob] if glob else [])


def parts(site_dir: Path, part_pages: int = PART_PAGES) -> list[list[str]]:
    """The site's folders of indexed pages (entry pages, `<category>/<id>/index.html`, marked
    `data-pagefind-body`) grouped into parts of at most `part_pages` pages, in name order; one
    part when the whole site fits. Only folders with indexed pages go into a part: Pagefind
    indexes every page of a run in which none is marked."""
    sizes: dict[str, int] = {}
    for folder in sorted(d for d in site_dir.iterdir() if d.is_dir() and d.name != BUNDLE_DIR):
        pages = sorted(folder.glob("*/index.html"))
        if any(BODY in page.read_text(encoding="utf-8") for page in pages):
            sizes[folder.name] = len(pages)
    if sum(sizes.values()) <= part_pages:
        return [list(sizes)]
    grouped: list[list[str]] = [[]]
    size = 0
    for name, count in sizes.items():
        if grouped[-1] and size + count > part_pages:
            grouped.append([])
            size = 0
        grouped[-1].append(name)
        size += count
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


def start_indexing(site_dir: Path) -> subprocess.Popen[bytes]:
    """Index the site in the background, output discarded (a preview's index), at a low
    priority: the next edit's rebuild comes first."""
    return subprocess.Popen(
        [sys.executable, "-m", "generator.fulltext", str(site_dir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=(lambda: os.nice(10)) if hasattr(os, "nice") else None,
    )


def index_site(site_dir: Path, part_pages: int = PART_PAGES) -> str:
    """Index the built site in `site_dir`, in parts if it is large; returns Pagefind's summary
    lines (added up over the parts)."""
    grouped = parts(site_dir, part_pages)
    outputs = []
    for n, folders in enumerate(grouped):
        output = BUNDLE_DIR if n == 0 else f"{BUNDLE_DIR}/part-{n}"
        glob = None if len(grouped) == 1 else "{" + ",".join(folders) + "}/**/*.html"
        outputs.append(_run(_command(site_dir, output, glob)))
    names = [f"part-{n}" for n in range(1, len(grouped))]
    (site_dir / BUNDLE_DIR / PARTS_FILE).write_text(json.dumps(names) + "\n", encoding="utf-8")
    return _summary(outputs, len(grouped))


def _summary(outputs: list[str], count: int) -> str:
    """Pagefind's "Indexed N pages" (and words, filters...) lines over the parts:
    the pages added up, the rest (words, languages, filters) as many as the largest part has."""
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


if __name__ == "__main__":  # the preview's background indexing: start_indexing
    index_site(Path(sys.argv[1]))
