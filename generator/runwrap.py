"""`encyclopedia run -- COMMAND`: run a training command, pass its output through unchanged as
it comes, and diagnose what it printed when it fails.

The command runs in its own process group, so a Ctrl-C at the terminal reaches this process
only; it is forwarded once, to the command's whole group (torchrun and its workers), as the
terminal would have sent it. Termination signals sent to this process are forwarded the same
way. The exit status is the command's (128 + N when signal N killed it)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from dataclasses import dataclass
from typing import BinaryIO

from .diagnose import Diagnosis, Index, Streaming

FORWARDED = (
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
)
READ_BYTES = 64 * 1024


@dataclass(frozen=True)
class Finished:
    status: int  # the exit status to exit with
    signal: int | None  # the signal that killed the command, if one did
    result: Diagnosis  # the diagnosis of everything it printed


def _pump(
    source: BinaryIO, sink: BinaryIO, name: str, diag: Streaming, lock: threading.Lock
) -> None:
    fd = source.fileno()
    out = sink.fileno()
    while True:
        data = os.read(fd, READ_BYTES)
        if not data:
            return
        view = memoryview(data)
        while view:  # passed through whole, before it is read for the diagnosis
            written = os.write(out, view)
            view = view[written:]
        with lock:
            diag.push(name, data)


def run(command: list[str], index: Index, stdout: BinaryIO, stderr: BinaryIO) -> Finished:
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")  # a Python child's output stays live through a pipe
    child = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, process_group=0
    )
    assert child.stdout is not None and child.stderr is not None

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signum)

    previous = {s: signal.signal(s, forward) for s in FORWARDED}
    diag, lock = Streaming(index), threading.Lock()
    pumps = [
        threading.Thread(target=_pump, args=(child.stdout, stdout, "stdout", diag, lock)),
        threading.Thread(target=_pump, args=(child.stderr, stderr, "stderr", diag, lock)),
    ]
    try:
        for pump in pumps:
            pump.start()
        for pump in pumps:
            pump.join()
        code = child.wait()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    killed = -code if code < 0 else None
    return Finished(128 + killed if killed else code, killed, diag.result())


def describe(finished: Finished) -> str:
    if finished.signal is not None:
        name = signal.Signals(finished.signal).name
        return f"the command was killed by {name} (exit status {finished.status})"
    return f"the command exited with status {finished.status}"
