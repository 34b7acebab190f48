"""Helpers for tests: build a site from an entries folder, serve a folder on localhost."""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"  # Debian's package; Playwright never downloads a browser here
# Without the background-networking flags Chromium tries to reach Google's hosts at start.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def run_build(
    entries: Path,
    site: Path,
    *,
    extra_env: dict[str, str] | None = None,
    config: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run `mkdocs build --strict` on the project's config with another entries folder."""
    env = {
        **os.environ,
        "ENCYCLOPEDIA_ENTRIES": str(entries),
        "NO_MKDOCS_2_WARNING": "1",
        **(extra_env or {}),
    }
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "-q",
            "-f",
            str(config or ROOT / "mkdocs.yml"),
            "-d",
            str(site),
        ],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )


def build_site(entries: Path, site: Path) -> Path:
    result = run_build(entries, site)
    if result.returncode != 0:
        raise AssertionError(f"build failed:\n{result.stdout}\n{result.stderr}")
    return site


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@contextlib.contextmanager
def serve_dir(directory: Path) -> Iterator[str]:
    """Serve `directory` on 127.0.0.1 on a free port for the duration of the block."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
