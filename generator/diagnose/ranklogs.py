"""A folder of per-rank logs read as one multi-rank log: the files in name order, each line
that carries no rank prefix of its own given the rank in its file's name (`rank3.log`,
`node0-12.out`: the last number), so the matcher sees what torchrun's prefixes would show.
Line numbers of the combined log map back to `file:line`."""

from __future__ import annotations

import bisect
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..diagnose import SEGMENT_BYTES

_PREFIXED = re.compile(rb"^ ?\[(?:rank ?|default)[0-9]{1,9}\]:")
_NUMBER = re.compile(r"(?<![0-9])([0-9]{1,9})(?!.*[0-9])")  # the last number, if rank-sized


@dataclass(frozen=True)
class RankLog:
    path: Path
    rank: int | None


def rank_logs(folder: Path) -> list[RankLog]:
    files = sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))
    found = []
    for path in files:
        number = _NUMBER.search(path.stem)
        found.append(RankLog(path, int(number.group(1)) if number else None))
    return found


class Combined(io.RawIOBase):
    """The files as one stream (bounded memory: one line of at most SEGMENT_BYTES at a time),
    and where each file starts in it, for `locate`."""

    def __init__(self, logs: list[RankLog]) -> None:
        self.logs = logs
        self.starts: list[int] = []  # the combined line number each file starts at
        self.unreadable: list[tuple[Path, str]] = []  # files skipped, with why
        self._lines = self._generate()
        self._pending = b""

    def _generate(self) -> Iterator[bytes]:
        line = 1
        for log in self.logs:
            self.starts.append(line)
            prefix = f"[rank{log.rank}]: ".encode() if log.rank is not None else b""
            try:
                handle = log.path.open("rb")
            except OSError as err:
                self.unreadable.append((log.path, err.strerror or str(err)))
                continue
            with handle:
                at_start = True
                while True:
                    chunk = handle.readline(SEGMENT_BYTES)
                    if not chunk:
                        break
                    if at_start and prefix and not _PREFIXED.match(chunk):
                        chunk = prefix + chunk
                    at_start = chunk.endswith(b"\n")
                    line += chunk.count(b"\n")
                    yield chunk
                if not at_start:
                    line += 1
                    yield b"\n"

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray) -> int:  # type: ignore[override]
        parts, size = [self._pending], len(self._pending)
        while size < len(buffer):
            chunk = next(self._lines, None)
            if chunk is None:
                break
            parts.append(chunk)
            size += len(chunk)
        self._pending = b"".join(parts)
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

    def locate(self, line: int) -> str:
        """`file:line` for a line of the combined log."""
        at = bisect.bisect_right(self.starts, line) - 1
        if at < 0:
            return f"line {line}"
        return f"{self.logs[at].path.name}:{line - self.starts[at] + 1}"
