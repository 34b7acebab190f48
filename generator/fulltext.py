"""Full-text search: Pagefind indexes the built site after MkDocs has written it.

Pagefind reads only what the pages mark (`data-pagefind-body` on entries, weights on the
signatures, the quick answer and the symptoms: entry.md.j2 and overrides/main.html) and writes
a chunked index under `pagefind/`, of which a query loads only the few chunks its words need.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BUNDLE_DIR = "pagefind"


class FullTextError(Exception):
    """Pagefind failed or is missing; the message says what it printed."""


def _command(site_dir: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pagefind",
        "--site",
        str(site_dir),
        "--output-subdir",
        BUNDLE_DIR,
    ]


def start_indexing(site_dir: Path) -> subprocess.Popen[bytes]:
    """Index the site in the background, output discarded (a preview's index), at a low
    priority: the next edit's rebuild comes first."""
    return subprocess.Popen(
        _command(site_dir),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=(lambda: os.nice(10)) if hasattr(os, "nice") else None,
    )


def index_site(site_dir: Path) -> str:
    """Index the built site in `site_dir`; returns Pagefind's summary line."""
    command = _command(site_dir)
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
    indexed = [line.strip() for line in output.splitlines() if line.strip().startswith("Indexed")]
    return "; ".join(indexed)
