"""`encyclopedia run -- COMMAND`: run a training command, pass its output through unchanged as
it comes, and diagnose what it printed when it fails. The wrapper is meant to be invisible:

- The output is copied through first and spooled to a temporary file, which a process of its
  own diagnoses as it grows (at a lower priority than the job), so a chatty command runs at the
  speed of the copy, not of the matcher, and a matcher error can only cost the diagnosis, never
  the pass-through.
- On a terminal the command stays in the terminal's foreground process group (ours), so
  `input()`, pdb and Ctrl-C, Ctrl-\\ and Ctrl-Z reach it as they would without the wrapper;
  this process ignores the keyboard's signals and waits. Without a terminal (a scheduler, CI)
  the command gets a process group of its own, so a termination signal sent to this process
  reaches the command's whole group (torchrun and its workers).
- Termination signals sent to this process (SIGTERM, SIGHUP, SIGUSR1/2) are forwarded.
- It stops waiting when the command exits: a background process that still holds the output
  is not waited for (what it printed in a short grace period is passed on).
- When its own reader goes away (`| head -1`), it stops copying and closes the command's
  output, so the command gets SIGPIPE on its next write as it would without the wrapper, and
  no diagnosis is printed into a pipe nobody reads.
The exit status is the command's (128 + N when signal N killed it)."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import IO, BinaryIO

from ..diagnose import Diagnosis, Index, Streaming
from ..search.describe import Tail

TERMINATION = (signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2)
KEYBOARD = (signal.SIGINT, signal.SIGQUIT)
READ_BYTES = 1024 * 1024
# After the command exits, output still arriving (its last writes, or a background process
# that holds the pipe) is passed on until this long passes with none.
GRACE_SECONDS = 0.2
_STREAM_IDS = {"stdout": b"o", "stderr": b"e"}
_STREAM_NAMES = {v: k for k, v in _STREAM_IDS.items()}


@dataclass(frozen=True)
class Finished:
    status: int  # the exit status to exit with
    signal: int | None  # the signal that killed the command, if one did
    result: Diagnosis | None  # the diagnosis of what it printed (None: not needed, or failed)
    reader_gone: bool = False  # our standard output's reader went away
    diagnosis_error: str | None = None  # why the diagnosis failed, if it did
    forwarded: int | None = None  # the first signal sent to us that we passed on to the command
    tail: str = ""  # the end of what it printed (standard error's, else standard output's)

    @property
    def stopped_from_outside(self) -> int | None:
        """The signal someone else stopped the command with: one we forwarded, or a
        termination or keyboard signal that killed it (a scheduler, a time limit, Ctrl-C)."""
        if self.forwarded is not None:
            return self.forwarded
        return self.signal if self.signal in (*TERMINATION, *KEYBOARD) else None


class _Spool:
    """What the command printed, as records in a temporary file (stream id, length, bytes),
    appended by the copying threads in arrival order."""

    def __init__(self) -> None:
        self.file = tempfile.TemporaryFile(prefix="encyclopedia-run-")  # noqa: SIM115 - closed by run()
        self.lock = threading.Lock()
        self.written = 0
        self.tails: dict[str, Tail] = {}  # each stream's end

    def add(self, stream: str, data: bytes) -> None:
        record = _STREAM_IDS[stream] + len(data).to_bytes(4, "big") + data
        with self.lock:
            os.write(self.file.fileno(), record)  # unbuffered: the diagnoser reads it at once
            self.written += len(record)
            self.tails.setdefault(stream, Tail()).add(data)

    def tail(self) -> str:
        """The end of what was printed: standard error's, where a traceback goes, else
        standard output's."""
        tail = self.tails.get("stderr") or self.tails.get("stdout")
        return tail.text() if tail else ""


# The matcher's index, or how to make it: made in the diagnosing process, it costs the wrapper
# nothing when the command succeeds, and runs beside the command when it does not.
IndexSource = Index | Callable[[], Index]


def _follow(
    spool_fd: int, conn: Connection, index: IndexSource, inherited: tuple[int, ...]
) -> None:
    """The diagnosing process: reads the spool as it grows until told its final length, then
    sends back the diagnosis (or why it failed). It runs apart from the wrapper, so the matcher
    never holds the copying threads' interpreter lock, and at a lower priority than the job."""
    for fd in inherited:  # the command's pipes: holding one would keep it from its SIGPIPE
        os.close(fd)
    for s in (*TERMINATION, *KEYBOARD):
        signal.signal(s, signal.SIG_IGN)  # the wrapper decides when it ends
    with contextlib.suppress(OSError):
        os.nice(10)
    try:
        made = index() if callable(index) else index
        streaming, at, end, pending = Streaming(made), 0, None, b""
        while end is None or at < end:
            if end is None and conn.poll():
                end = conn.recv()
            block = os.pread(spool_fd, READ_BYTES, at)
            if not block:
                time.sleep(0.02)
                continue
            at += len(block)
            pending += block
            pos = 0
            while len(pending) - pos >= 5:
                size = int.from_bytes(pending[pos + 1 : pos + 5], "big")
                if len(pending) - pos - 5 < size:
                    break
                stream = _STREAM_NAMES[pending[pos : pos + 1]]
                streaming.push(stream, pending[pos + 5 : pos + 5 + size])
                pos += 5 + size
            pending = pending[pos:]
        conn.send((streaming.result(), None))
    except Exception as err:  # noqa: BLE001 - any matcher failure must spare the command
        conn.send((None, f"{type(err).__name__}: {err}"))


class _Diagnoser:
    """The diagnosing process and the end of the pipe to it. Forked before any thread starts,
    so it inherits the matcher's index (or what it is made from) as it is, at no cost."""

    def __init__(self, index: IndexSource, spool: _Spool, inherited: tuple[int, ...]) -> None:
        self.conn, child_conn = multiprocessing.Pipe()
        context = multiprocessing.get_context("fork")
        args = (spool.file.fileno(), child_conn, index, inherited)
        self.process = context.Process(target=_follow, args=args, daemon=True)
        self.error: str | None = None

    def start(self) -> None:
        self.process.start()

    def abandon(self) -> None:
        """No diagnosis needed: end the process now. It holds nothing worth waiting for, and
        letting it notice on its own costs about half a second (it may still be setting up)."""
        self.process.kill()
        self.process.join()

    def result(self, length: int) -> Diagnosis | None:
        """The diagnosis of the first `length` bytes of the spool: all the command printed."""
        with contextlib.suppress(OSError):  # it may have ended already, with its error sent
            self.conn.send(length)
        try:
            result, self.error = self.conn.recv()
        except (EOFError, OSError) as err:
            result, self.error = None, f"the diagnosing process ended ({err})"
        self.process.join()
        return result  # type: ignore[no-any-return]


class _Copier(threading.Thread):
    """Copies one of the command's streams to ours and into the spool. After the command has
    exited (`exited`), it stops once no output came for GRACE_SECONDS."""

    def __init__(
        self, source: IO[bytes], sink: BinaryIO, name: str, spool: _Spool, exited: threading.Event
    ) -> None:
        super().__init__(daemon=True)
        self.fd = source.fileno()
        self.out = sink.fileno()
        self.name, self.spool, self.exited = name, spool, exited
        self.reader_gone = False

    def run(self) -> None:
        quiet_since: float | None = None
        while True:
            ready, _, _ = select.select([self.fd], [], [], 0.05)
            if not ready:
                if self.exited.is_set():
                    now = time.monotonic()
                    quiet_since = quiet_since or now
                    if now - quiet_since >= GRACE_SECONDS:
                        return
                continue
            quiet_since = None
            data = os.read(self.fd, READ_BYTES)
            if not data:
                return
            if not self.reader_gone:
                try:
                    _write_all(self.out, data)
                except BrokenPipeError:
                    self.reader_gone = True
                    return  # the caller closes our end: the command meets its own SIGPIPE
            self.spool.add(self.name, data)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _on_terminal() -> bool:
    try:
        return os.isatty(sys.stdin.fileno()) and os.tcgetpgrp(sys.stdin.fileno()) == os.getpgrp()
    except (OSError, ValueError):
        return False


def run(
    command: list[str],
    index: IndexSource,
    stdout: BinaryIO,
    stderr: BinaryIO,
    diagnose: bool = True,
) -> Finished:
    """Run `command`, copying its output through; diagnose it when it fails (`diagnose`)."""
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")  # a Python child's output stays live through a pipe
    foreground = _on_terminal()
    child = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        process_group=None if foreground else 0,
    )
    assert child.stdout is not None and child.stderr is not None

    signals = _Forwarding(child.pid, foreground)
    spool, exited = _Spool(), threading.Event()
    diagnoser = _Diagnoser(index, spool, (child.stdout.fileno(), child.stderr.fileno()))
    copiers = [
        _Copier(child.stdout, stdout, "stdout", spool, exited),
        _Copier(child.stderr, stderr, "stderr", spool, exited),
    ]
    try:
        diagnoser.start()  # before the threads: it is forked
        for copier in copiers:
            copier.start()
        code = _wait(child, copiers)
        exited.set()
        for copier in copiers:
            copier.join()
        gone = any(c.reader_gone for c in copiers)
        if code == 0 or gone or not diagnose:
            diagnoser.abandon()
            result = None
        else:
            result = diagnoser.result(spool.written)
    finally:
        signals.restore()
        for stream in (child.stdout, child.stderr):
            stream.close()
        spool.file.close()
    killed = -code if code < 0 else None
    status = 128 + killed if killed else code
    first = signals.forwarded[0] if signals.forwarded else None
    return Finished(status, killed, result, gone, diagnoser.error, first, spool.tail())


class _Forwarding:
    """While the command runs, the signals that stop a job go on to it (and are noted); on a
    terminal the keyboard's reach it directly, without one they are sent to this process alone
    (kill -INT), so they are forwarded too."""

    def __init__(self, pid: int, foreground: bool) -> None:
        self.pid, self.foreground = pid, foreground
        self.forwarded: list[int] = []
        Handler = Callable[[int, object], None] | signal.Handlers
        handlers: dict[signal.Signals, Handler] = {s: self.forward for s in TERMINATION}
        handlers.update({s: (signal.SIG_IGN if foreground else self.forward) for s in KEYBOARD})
        self.previous = {s: signal.signal(s, h) for s, h in handlers.items()}

    def forward(self, signum: int, _frame: object) -> None:
        self.forwarded.append(signum)
        with contextlib.suppress(ProcessLookupError):
            if self.foreground:
                os.kill(self.pid, signum)
            else:
                os.killpg(self.pid, signum)

    def restore(self) -> None:
        for s, handler in self.previous.items():
            signal.signal(s, handler)


def _wait(child: subprocess.Popen[bytes], copiers: list[_Copier]) -> int:
    """The command's exit code; meanwhile, a stream whose reader went is closed, so that the
    command's next write there raises SIGPIPE in it."""
    assert child.stdout is not None and child.stderr is not None
    while True:
        for copier, source in zip(copiers, (child.stdout, child.stderr), strict=True):
            if copier.reader_gone and not source.closed:
                source.close()
        try:
            return child.wait(timeout=0.05)
        except subprocess.TimeoutExpired:
            continue


def describe(finished: Finished) -> str:
    outside = finished.stopped_from_outside
    if outside is not None:
        name = signal.Signals(outside).name
        return (
            f"the command was stopped by {name} from outside, by a scheduler, a preemption, "
            f"a time limit or a keyboard (exit status {finished.status})"
        )
    if finished.signal is not None:
        name = signal.Signals(finished.signal).name
        return f"the command was killed by {name} (exit status {finished.status})"
    return f"the command exited with status {finished.status}"
