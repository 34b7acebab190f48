"""`encyclopedia run` is invisible around a command: it never hangs a job (a reader that goes
away, a background process holding the output), keeps the command in the terminal's foreground
(input, Ctrl-Z), and a matcher failure costs only the diagnosis."""

from __future__ import annotations

import contextlib
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from generator import diagnose
from generator.terminal import runwrap
from tests.support import ROOT

WRAPPER = [sys.executable, "-m", "generator.terminal.cli", "run", "--"]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}


def _alive(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return None


def test_a_reader_that_goes_away_ends_the_job(tmp_path: Path) -> None:
    """`run -- CMD | head -1` ends as `CMD | head -1` does, and prints no diagnosis."""
    flood = "import sys\nwhile True:\n    sys.stdout.write('line\\n')\n"
    start = time.monotonic()
    shell = subprocess.run(
        ["bash", "-c", f'{" ".join(WRAPPER)} {sys.executable} -c "$FLOOD" | head -1'],
        env={**ENV, "FLOOD": flood},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shell.stdout == "line\n"
    assert "encyclopedia:" not in shell.stderr
    assert time.monotonic() - start < 30


def test_it_stops_waiting_when_the_command_exits() -> None:
    """A background process that keeps the output open is not waited for."""
    start = time.monotonic()
    done = subprocess.run(
        [*WRAPPER, "bash", "-c", "sleep 60 & echo started"],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (0, "started\n")
    assert time.monotonic() - start < 20


def _in_a_terminal(code: str) -> tuple[int, int]:
    """The wrapper running `python -c code` on a new pseudo-terminal: (its pid, the pty)."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: a session leader whose terminal is the pty
        os.execvpe(WRAPPER[0], [*WRAPPER, sys.executable, "-c", code], ENV)
    return pid, fd


def _read_until(fd: int, wanted: bytes, seconds: float = 20) -> bytes:
    seen = b""
    deadline = time.monotonic() + seconds
    while wanted not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                seen += os.read(fd, 4096)
            except OSError:
                break
    return seen


def test_the_command_can_read_the_terminal() -> None:
    """input() and pdb read the terminal: the command is in its foreground process group."""
    pid, fd = _in_a_terminal("print('got', input('name? '))")
    try:
        assert b"name? " in _read_until(fd, b"name? ")
        os.write(fd, b"bob\n")
        assert b"got bob" in _read_until(fd, b"got bob")
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        with pytest.raises(OSError):
            os.kill(pid, 0)
        os.close(fd)


def test_ctrl_z_stops_the_job_as_it_would_without_the_wrapper() -> None:
    """Under a shell with job control, Ctrl-Z stops the job (wrapper and command) and the shell
    takes the terminal back: the command gets the terminal's SIGTSTP."""
    sleeper = "import os, time\nprint('pid', os.getpid(), flush=True)\ntime.sleep(60)"
    job = " ".join([*WRAPPER, sys.executable, "-c", '"$SLEEPER"'])
    pid, fd = pty.fork()
    if pid == 0:  # a shell that runs the job in its own foreground group, as at a prompt
        script = f"set -m; {job}; echo after=$?; sleep 30"  # the shell stays, as at a prompt
        os.execvpe("bash", ["bash", "-c", script], {**ENV, "SLEEPER": sleeper})
    child = -1
    try:
        shown = _read_until(fd, b"pid ")
        shown += b"" if b"\n" in shown.split(b"pid ")[1] else _read_until(fd, b"\n")
        child = int(shown.split(b"pid ")[1].split()[0])
        os.write(fd, b"\x1a")  # Ctrl-Z: the terminal sends SIGTSTP to its foreground group
        assert b"after=148" in _read_until(fd, b"after=")  # 128 + SIGTSTP: the job stopped
        # The shell saw its own child (the wrapper) stop; the command stops with it.
        deadline = time.monotonic() + 10
        while _alive(child) != "T":
            assert time.monotonic() < deadline, f"the command is {_alive(child)}, not stopped"
            time.sleep(0.05)
    finally:
        with contextlib.suppress(OSError):
            os.kill(child, signal.SIGKILL)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)


def test_a_matcher_failure_costs_only_the_diagnosis(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: object, stream: str, data: bytes) -> None:
        raise RuntimeError("matcher bug")

    monkeypatch.setattr(diagnose.Streaming, "push", broken)
    index = diagnose.Index.from_export([])
    out_path, err_path = tmp_path / "out", tmp_path / "err"
    code = "import sys\nfor i in range(1000):\n    print(i)\nsys.exit(4)\n"
    with out_path.open("wb") as out, err_path.open("wb") as err:
        finished = runwrap.run([sys.executable, "-c", code], index, out, err)
    assert finished.status == 4 and finished.result is None
    assert finished.diagnosis_error == "RuntimeError: matcher bug"
    assert out_path.read_text() == "".join(f"{i}\n" for i in range(1000))


@pytest.mark.parametrize(
    ("command", "status"),
    [(["no-such-command-anywhere"], 127), ([str(ROOT / "README.md")], 126)],
    ids=["missing", "not-executable"],
)
def test_a_command_it_cannot_start_exits_as_a_shell_would(command: list[str], status: int) -> None:
    done = subprocess.run([*WRAPPER, *command], env=ENV, capture_output=True, text=True, timeout=60)
    assert done.returncode == status
    assert f"encyclopedia: cannot run `{command[0]}`" in done.stderr
    assert "Usage:" not in done.stderr


def test_output_passes_through_byte_for_byte() -> None:
    code = "import sys\nsys.stdout.buffer.write(bytes(range(256)) * 4096)\n"
    done = subprocess.run(
        [*WRAPPER, sys.executable, "-c", code], env=ENV, capture_output=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout == bytes(range(256)) * 4096


def test_stdin_is_the_commands() -> None:
    done = subprocess.run(
        [*WRAPPER, sys.executable, "-c", "import sys; print(sys.stdin.read().upper())"],
        env=ENV,
        input=b"piped in",
        capture_output=True,
        timeout=60,
    )
    assert done.stdout == b"PIPED IN\n"
