"""Tracebacks read for their structure: the exception a traceback ends with and the frames it
passed through, so that an entry can name a failure by where it is raised (`OSError` in a
frame of `torch/serialization.py`, function `save`) when the message is worded in a way no
signature holds. The Python half of one semantics whose JavaScript half is the "Tracebacks"
section of site_assets/js/diagnose-core.js; both pass tests/diagnose_vectors/.

Semantics (both implementations), over the segments diagnose.py defines:
- A frame line is `File "PATH", line N, in FUNCTION`, indented or not, after an
  optional rank prefix (`[rank0]: `, `[default3]: `) or a Ray worker's `(Name pid=N) `.
- Frames gather into a traceback while only indented or empty segments lie between them (code
  lines, carets). At most MAX_FRAMES are kept, the innermost.
- The first segment after a traceback's frames (within WITHIN segments) that is not indented, if
  it is an exception line (a dotted name, then optionally `:` and the message), ends the
  traceback: its type is the name's last part. Any other such segment ends it without one.
- A rule (an entry's `raised`) matches a traceback when the type is the rule's exception and
  one frame's path, ASCII lower-cased with `\\` read as `/`, holds `/` + the rule's frame
  (itself lower-cased) after a `/` or at its start, with the rule's function if it names one.
  Each rule counts once, at its first match, as a primary match of its entry with the rule's
  weight; the evidence is the exception line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from .records import EntrySignatures

MAX_FRAMES = 256
WITHIN = 8

_PREFIX = (
    r"(?:[ \t]?\[(?:[Rr]ank ?|default)?[0-9]{1,9}\]: ?"
    r"|\([A-Za-z_][A-Za-z0-9_]* pid=[0-9]+(?:, ip=[0-9.]+)?\) ?)?"
)
# A frame line: `File "...` first, so that the search skips to that literal (in C), then what
# comes before it on its line (LEAD) checked on its own: the same as asking for LEAD from the
# segment's start, about twice as fast on a log full of other lines.
FRAME = re.compile(r'File "([^"\r\n]+)", line [0-9]+, in ([^\r\n]*?)[ \t]*(?=[\r\n]|$)')
LEAD = re.compile(_PREFIX + r"[ \t]*")
PREFIX = re.compile(_PREFIX)
EXCEPTION = re.compile(r"([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)(?::.*)?")
_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class Rule:
    """One `raised` item of an entry, as the index holds it."""

    order: int  # its place among every entry's rules: ties on one line go in this order
    entry: str
    exception: str
    frame: str  # lower-cased, `/` first
    function: str | None
    weight: int

    @property
    def label(self) -> str:
        where = self.frame.lstrip("/") + (f", {self.function}" if self.function else "")
        return f"raised: {self.exception} in {where}"

    def matches(self, kind: str, frames: Sequence[tuple[str, str]]) -> bool:
        return kind == self.exception and any(
            self.frame in path and (self.function is None or self.function == function)
            for path, function in frames
        )


def rules(data: Sequence[EntrySignatures]) -> tuple[Rule, ...]:
    """The `raised` rules of every entry of the index, in index order."""
    found: list[Rule] = []
    for item in data:
        for rule in item.get("raised", ()):
            found.append(
                Rule(
                    len(found),
                    item["id"],
                    rule["exception"],
                    "/" + rule["frame"].lower(),
                    rule.get("function"),
                    int(rule["weight"]),
                )
            )
    return tuple(found)


@dataclass(frozen=True)
class Raised:
    """A traceback's end: the exception line, its type and the frames before it."""

    line: int
    text: str  # the exception segment as the log holds it
    kind: str
    frames: tuple[tuple[str, str], ...]


def _path(raw: str) -> str:
    return "/" + raw.replace("\\", "/").translate(_LOWER)


_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


class Reader:
    """Reads tracebacks out of a log fed in pieces that each end at a segment break."""

    def __init__(self) -> None:
        self.frames: list[tuple[str, str]] = []
        self.after = 0  # segments since the last frame, while there are frames
        self.found: list[Raised] = []

    def feed(self, text: str, line: int) -> None:
        """Read `text`, whose first segment is on `line`."""
        pos, at_line = 0, line
        for m in FRAME.finditer(text):
            start = text.rfind("\n", 0, m.start()) + 1
            start = text.rfind("\r", start, m.start()) + 1 or start  # the segment's start
            if LEAD.fullmatch(text, start, m.start()) is None:
                continue
            if self.frames:
                self._walk(text, pos, m.start(), at_line)
            at_line += text.count("\n", pos, m.start())
            self.frames.append((_path(m.group(1)), m.group(2)))
            del self.frames[:-MAX_FRAMES]
            self.after = 0
            pos = m.end()
        if self.frames:
            self._walk(text, pos, len(text), at_line)

    def _walk(self, text: str, start: int, end: int, line: int) -> None:
        """The segments of text[start:end] (`start` at a break or a segment's start, on `line`)
        while a traceback is open."""
        pos = start
        while self.frames and pos < end:
            brk = _BREAK.match(text, pos)
            if brk is not None:
                line += brk.group(0).endswith("\n")  # a CR alone starts no line
                pos = brk.end()
                if pos >= end:
                    return
            found = _BREAK.search(text, pos, end)
            seg_end = found.start() if found else end
            self._segment(text[pos:seg_end], line)
            pos = seg_end

    def _segment(self, segment: str, line: int) -> None:
        prefix = PREFIX.match(segment)
        body = segment[prefix.end() if prefix else 0 :]
        if not body or body[0] in " \t":
            self.after += 1
            if self.after > WITHIN:
                self.frames = []
            return
        kind = EXCEPTION.fullmatch(body)
        if kind is not None:
            name = kind.group(1).rsplit(".", 1)[-1]
            self.found.append(Raised(line, segment, name, tuple(self.frames)))
        self.frames = []

    def take(self) -> Iterator[Raised]:
        """The tracebacks ended since the last call."""
        found, self.found = self.found, []
        yield from found


__all__ = ["FRAME", "Raised", "Reader", "Rule", "rules"]
