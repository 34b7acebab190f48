"""What a preview touches of MkDocs' live-reload server and its watchdog observer beyond their
public API: how often the entries folder is polled, a rebuild asked for by hand, a folder that
goes away and comes back, MkDocs' notice about dirty builds. Kept here, in one place, so that a
change in either library shows up in one module."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from typing import Any

from mkdocs.plugins import get_plugin_logger

log = get_plugin_logger("generator.plugin")


def not_dirty_notice(record: logging.LogRecord) -> bool:
    return not record.getMessage().startswith("A 'dirty' build is being performed")


# How often a dirty preview looks for edits to entries. MkDocs polls what it watches every 0.5 s,
# which would be most of what an edit waits for once its pages rebuild in a fraction of that.
ENTRIES_POLL_SECONDS = 0.1


def watch_often(server: Any, path: str) -> None:
    """Watch `path` polled every ENTRIES_POLL_SECONDS. watchdog gives a folder's poller the
    observer's timeout when the folder is first watched, and MkDocs has no setting for it, so
    the timeout is set around that one call (where it is not found, MkDocs' own applies)."""
    observer = getattr(server, "observer", None)
    before = getattr(observer, "_timeout", None)
    if not isinstance(before, (int, float)):
        server.watch(path)
        return
    observer._timeout = ENTRIES_POLL_SECONDS  # type: ignore[union-attr]
    try:
        server.watch(path)
    finally:
        observer._timeout = before  # type: ignore[union-attr]


def want_rebuild(server: Any) -> None:
    """Ask MkDocs' server for a rebuild, as its own watch callback does (where it can)."""
    cond = getattr(server, "_rebuild_cond", None)
    if cond is None:
        return
    with cond:
        server._want_rebuild = True
        cond.notify_all()


def keep_watching(server: Any, path: str, every: float = 1.0) -> threading.Thread:
    """A watched folder that goes away (a branch switch, a `git stash`, a move) takes its
    watch with it: say so, and watch it again when it is back (the next edit rebuilds)."""

    def run() -> None:
        there = os.path.isdir(path)
        while True:
            time.sleep(every)
            now = os.path.isdir(path)
            if there and not now:
                log.warning(f"{path} is gone; the preview watches for it to come back")
            elif now and not there:
                with contextlib.suppress(Exception):  # the old watch, whose poller has died
                    server.unwatch(path)
                watch_often(server, path)
                log.info(f"{path} is back; edits to it rebuild the site again")
                want_rebuild(server)  # what came back may differ from what went
            there = now

    thread = threading.Thread(target=run, name="entries-folder", daemon=True)
    thread.start()
    return thread
