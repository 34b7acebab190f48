"""The box a reproducer's script runs in: bubblewrap (`bwrap`), Linux namespaces, no root needed.

A reproducer is contributor code, run on contributors' machines and in CI, so it gets nothing of
the runner's by construction:
- an environment made from an allow-list (no tokens, keys or CI secrets), with a private HOME;
- the system read-only; the runner's home folders, temporary folders, `/run` and the checkout
  hidden under empty in-memory folders; only the interpreter's own installation is shown again,
  read-only, so that the venv with torch still imports;
- a writable in-memory working folder that goes away with the box;
- no network (a loopback of its own, so gloo ranks still talk to each other);
- its own process namespace: when the script exits or its time limit kills the box, every
  process it started dies with it, a new session or a double fork included.
Whatever the script prints is read up to a bound (the end is kept, where the error is).
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

BWRAP = "bwrap"
WORK = "/tmp/work"  # the script's folder inside the box
HOME = "/tmp/home"
# Output past this is dropped from the front: the page keeps far less, the matcher needs the end.
CAPTURE_BYTES = 4 * 1024 * 1024
# The runner's variables that a box may see, besides those it sets itself.
PASSED_VARIABLES = ("PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ", "TERM")
# Runner values at least this long are blanked out of anything a box prints (belt and braces).
SECRET_MIN_CHARS = 12


class BoxError(Exception):
    """The box cannot be made on this machine."""


@dataclass(frozen=True)
class Outcome:
    """A boxed run: its exit code (None when the time limit stopped it), its wall time and the
    end of its output (stdout and stderr interleaved), at most CAPTURE_BYTES."""

    exit_code: int | None
    seconds: float
    output: bytes


@dataclass(frozen=True)
class Box:
    """How to box one interpreter: the folders hidden from it and the ones shown again."""

    python: str
    hidden: tuple[str, ...]
    shown: tuple[str, ...]
    gpu: bool = False

    def command(
        self, argv: Sequence[str], variables: dict[str, str], binds: Sequence[str] = ()
    ) -> list[str]:
        """The bwrap command line that runs `argv` in the box, in WORK, with `binds` (more
        bwrap mount arguments) made after the box's own folders."""
        cmd = [BWRAP, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        for folder in self.hidden:
            cmd += ["--tmpfs", folder]
        for folder in self.shown:
            cmd += ["--ro-bind", folder, folder]
        if self.gpu:  # the GPU's device files, which the fresh /dev lacks
            for device in sorted(glob.glob("/dev/nvidia*")):
                cmd += ["--dev-bind", device, device]
        cmd += ["--dir", WORK, "--dir", HOME, "--chdir", WORK]
        cmd += list(binds)
        cmd += ["--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
        cmd += ["--clearenv"]
        for name, value in sorted(variables.items()):
            cmd += ["--setenv", name, value]
        return [*cmd, "--", *argv]

    def variables(self, extra: dict[str, str]) -> dict[str, str]:
        """The box's whole environment: the allow-list, a private HOME, then `extra`."""
        passed = {n: os.environ[n] for n in PASSED_VARIABLES if n in os.environ}
        bin_dir = os.path.dirname(self.python)
        passed["PATH"] = os.pathsep.join([bin_dir, passed.get("PATH", "/usr/bin:/bin")])
        return {**passed, "HOME": HOME, "TMPDIR": "/tmp", **extra}

    def run(
        self,
        argv: Sequence[str],
        timeout: float,
        extra: dict[str, str] | None = None,
        files: dict[str, str] | None = None,
    ) -> Outcome:
        """Run `argv` in the box with `files` (name -> text) in its working folder."""
        variables = self.variables(extra or {})
        with _staged(files or {}) as binds:
            cmd = self.command(argv, variables, binds)
            return _supervise(cmd, timeout, redact=_secrets(variables))


@contextlib.contextmanager
def _staged(files: dict[str, str]) -> Iterator[list[str]]:
    """The script files, written to a private folder outside the box and bound into WORK
    read-only, so a script cannot rewrite itself for the fixed run; yields the bwrap binds."""
    with tempfile.TemporaryDirectory(prefix="reproduce-") as folder:
        binds: list[str] = []
        for name, text in files.items():
            path = Path(folder, name)
            path.write_text(text, encoding="utf-8")
            binds += ["--ro-bind", str(path), f"{WORK}/{name}"]
        yield binds


def _secrets(passed: dict[str, str]) -> list[bytes]:
    """The runner's values the box was not given, longest first, to blank out of its output."""
    given = set(passed.values())
    values = {v for n, v in os.environ.items() if len(v) >= SECRET_MIN_CHARS and v not in given}
    return sorted((v.encode() for v in values), key=len, reverse=True)


def _supervise(cmd: list[str], timeout: float, redact: Iterable[bytes]) -> Outcome:
    """Run the box, reading its output as it comes (the end kept), and kill it at the limit.
    Killing bwrap kills the box's first process, and with it every process of its namespace."""
    start = time.monotonic()
    child = subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    assert child.stdout is not None
    out = bytearray()
    deadline = start + timeout
    timed_out = False
    fd = child.stdout.fileno()
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        ready, _, _ = select.select([fd], [], [], min(left, 1.0))
        if not ready:
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        out += chunk
        if len(out) > 2 * CAPTURE_BYTES:
            del out[: len(out) - CAPTURE_BYTES]
    if timed_out:
        child.kill()
    exit_code = child.wait()
    child.stdout.close()
    seconds = round(time.monotonic() - start, 2)
    kept = bytes(out[-CAPTURE_BYTES:])
    for secret in redact:
        kept = kept.replace(secret, b"[withheld]")
    return Outcome(None if timed_out else exit_code, seconds, kept)


def available() -> str | None:
    """Why the box cannot be made here, or None when it can."""
    if shutil.which(BWRAP) is None:
        return "bubblewrap is not installed (Debian and Ubuntu: apt-get install bubblewrap)"
    probe = subprocess.run(
        [BWRAP, "--ro-bind", "/", "/", "--unshare-all", "--", "true"],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        return f"bubblewrap cannot make a box here: {probe.stderr.strip()}"
    return None


# Folders a box always sees (read-only): covering one would leave no system to run.
SYSTEM = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib64", "/opt", "/var", "/srv", "/dev")


def _coverable(folder: str) -> bool:
    return os.path.isdir(folder) and not any(
        system == folder or system.startswith(folder.rstrip("/") + "/") for system in SYSTEM
    )


def hidden_folders(private: Iterable[Path]) -> tuple[str, ...]:
    """What a box hides: every home folder, the temporary folders, /run (where containers keep
    their secrets), the working folder and the `private` ones (the checkout). A folder that
    holds the system (/, /usr, ...) is never covered."""
    candidates = ["/home", "/root", os.path.expanduser("~"), "/tmp", "/var/tmp", "/run"]
    candidates += [os.getcwd(), *(str(p.resolve()) for p in private)]
    kept: list[str] = []
    for folder in candidates:
        if _coverable(folder) and folder not in kept:
            kept.append(folder)
    return tuple(kept)


def installation(python: str) -> tuple[str, ...]:
    """The folders of the interpreter's own installation (its venv and the Python it was made
    from), asked of the interpreter itself with an empty environment."""
    ask = "import json, os, sys; print(json.dumps([sys.prefix, sys.base_prefix, sys.exec_prefix,"
    ask += " os.path.dirname(os.path.realpath(sys.executable))]))"
    probe = subprocess.run(
        [python, "-I", "-c", ask], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"}
    )
    if probe.returncode != 0:
        raise BoxError(f"{python} does not run: {probe.stderr.strip()[-300:]}")
    folders: list[str] = []
    for folder in json.loads(probe.stdout):
        if os.path.isdir(folder) and folder not in folders:
            folders.append(folder)
    return tuple(folders)


def make_box(
    python: str, private: Iterable[Path], gpu: bool = False, shown: Iterable[Path] = ()
) -> Box:
    """The box for `python` (an absolute path), hiding the runner's folders and `private`, and
    showing, read-only, its installation and the `shown` folders (overlays of other releases)."""
    why = available()
    if why is not None:
        raise BoxError(f"reproducers run only in a box, and {why}")
    overlays = tuple(str(folder.resolve()) for folder in shown)
    return Box(python, hidden_folders(private), installation(python) + overlays, gpu)
