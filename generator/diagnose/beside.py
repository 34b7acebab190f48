"""Some of a log file's metric series read by a second process beside the scan (metrics.py): on
a long training log they are most of the work, and reading them on another core gives the same
diagnosis sooner. The process reads the file itself, chunk by chunk as the scan does, and sends
back only its sightings; the scan's process reads the other series with its own chunks. When the
second process cannot run or fails, the scan's process reads its series after the scan.
"""

from __future__ import annotations

import multiprocessing
import sys
from multiprocessing.connection import Connection
from pathlib import Path

from . import metrics
from .scanner import CHUNK_BYTES, LOWER_BYTES, chunks

# A log shorter than this is read in one process: starting a second one would cost more.
MIN_BYTES = 2 * CHUNK_BYTES
# The series the second process reads: the loss and optimizer ones and `reserved`, chosen so that
# on the bench's training log (scripts/bench_diagnose.py) both processes take about as long, the
# scan's process matching the signatures and reading the other memory series.
SERIES = frozenset({"loss", "val_loss", "xent", "grad_norm", "lr", "learning_rate", "reserved"})


def read_metrics(path: Path, series: frozenset[str] = metrics.ALL_SERIES) -> metrics.Part:
    """What the log at `path` shows of the metric `series`, as the scan would read them."""
    reader = metrics.Reader(series)
    line = 1
    with path.open("rb") as handle:
        for chunk in chunks(handle):
            text = chunk.decode("latin-1")
            reader.feed(text, chunk.translate(LOWER_BYTES).decode("latin-1"), line)
            line += text.count("\n")
    return reader.part()


def _child(path: Path, send: Connection) -> None:
    send.send(read_metrics(path, SERIES))
    send.close()


class Beside:
    """The second process, started at once; `part` waits for its answer."""

    series = SERIES

    def __init__(self, path: Path) -> None:
        self.path = path
        # fork: the child needs nothing but this module, already imported (Linux only: other
        # systems start a fresh interpreter, slower than the work it would take over)
        context = multiprocessing.get_context("fork")
        self.answer, send = context.Pipe(duplex=False)
        self.process = context.Process(target=_child, args=(path, send), daemon=True)
        self.process.start()
        send.close()

    def part(self) -> metrics.Part:
        try:
            found: metrics.Part | None = self.answer.recv()
        except (EOFError, OSError):
            found = None  # the process died before it answered
        self.answer.close()
        self.process.join()
        return found if found is not None else read_metrics(self.path, SERIES)


def beside(path: Path | None) -> Beside | None:
    """A second process for some metric series of `path`, when it is worth one."""
    if path is None or not sys.platform.startswith("linux"):
        return None
    try:
        if not path.is_file() or path.stat().st_size < MIN_BYTES:
            return None
    except OSError:
        return None
    return Beside(path)
