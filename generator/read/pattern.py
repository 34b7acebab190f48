"""The signature language: literal text, `*` for any run of characters, and two placeholders
that read a value out of the matched line. site_assets/js/diagnose-core.js implements the same.

- `{nonfinite}` matches a non-finite number: `nan`, `inf` or `infinity`, with an optional sign
  and an optional `tensor(` before it, not followed by a letter, digit or `_`. It lets one
  signature say "this metric was printed as NaN or inf" without matching `loss: 0.5` or `info`.
- `{size:NAME}` matches a memory size such as `1.53 GiB` or `20 MiB` (digits, an optional
  fraction, an optional space and a unit) and captures it as NAME, so a signature's `when`
  condition can compare two sizes of one message (`unallocated > requested`).

A placeholder is one only right after literal text of the same piece (a piece is the text
between two `*`); anywhere else it is literal text. Each piece is found at its earliest start
where it matches, in order, and a piece's placeholders read a bounded number of characters, so
matching stays linear in the length of the line.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import TypedDict

PLACEHOLDER = re.compile(r"\{(nonfinite|size:[a-z][a-z0-9_]*)\}")
# Near misses of a placeholder: a contributor who writes `{nan}` or `{size}` meant one (other
# braces are literal text, such as an f-string template a traceback prints).
PLACEHOLDER_LIKE = re.compile(r"\{ *(nan|inf|non-?finite[^}]*|size[^}]*|number[^}]*) *\}")
NUMBER_DIGITS = 20  # a size reads at most this many digits before and after the point
WORD_CHAR = re.compile(r"[a-z0-9_]")
NONFINITE_WORDS = ("infinity", "inf", "nan")  # longest first
NONFINITE_PREFIX = "tensor("
# Units as the normalised (lower-cased) text holds them, longest first, and their bytes.
UNITS: tuple[tuple[str, int, str], ...] = (
    ("bytes", 1, "bytes"),
    ("tib", 1024**4, "TiB"),
    ("gib", 1024**3, "GiB"),
    ("mib", 1024**2, "MiB"),
    ("kib", 1024, "KiB"),
    ("tb", 1000**4, "TB"),
    ("gb", 1000**3, "GB"),
    ("mb", 1000**2, "MB"),
    ("kb", 1000, "KB"),
    ("b", 1, "B"),
)
CONDITION = re.compile(
    r"^\s*([a-z][a-z0-9_]*)\s*(<=|>=|<|>)\s*"
    r"(?:([a-z][a-z0-9_]*)|([0-9]+(?:\.[0-9]+)?)\s*(bytes|tib|gib|mib|kib|tb|gb|mb|kb|b)?)\s*$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Slot:
    kind: str  # "nonfinite" or "size"
    name: str  # the capture name of a size, "" for nonfinite


Token = str | Slot
Piece = tuple[Token, ...]


@dataclass(frozen=True)
class Value:
    """A size read from a log: its bytes, and how it reads (`1.53 GiB`)."""

    bytes: float
    text: str


class ConditionRecord(TypedDict):
    """A signature's `when`: `left op right`, right another capture's name or a size in bytes."""

    left: str
    op: str
    right: str | None
    value: float | None


@dataclass(frozen=True)
class Condition:
    """`left op right`: right is another capture's name, or a size in bytes."""

    left: str
    op: str
    right: str | None
    value: float | None

    def holds(self, values: dict[str, Value]) -> bool:
        left = values.get(self.left)
        other = values.get(self.right) if self.right is not None else None
        right = other.bytes if other is not None else self.value
        if left is None or right is None:
            return False
        a = left.bytes
        return {"<": a < right, "<=": a <= right, ">": a > right, ">=": a >= right}[self.op]

    def export(self) -> ConditionRecord:
        return {"left": self.left, "op": self.op, "right": self.right, "value": self.value}


def parse_condition(text: str) -> Condition | None:
    """A `when` condition, or None when it is not one (validation says why)."""
    found = CONDITION.match(text)
    if not found:
        return None
    left, op, right, number, unit = found.groups()
    value = None
    if number is not None:
        scale = next((s for u, s, _ in UNITS if u == (unit or "b").lower()), 1)
        value = float(number) * scale
    return Condition(left.lower(), op, right.lower() if right else None, value)


def literal_view(signature: str) -> str:
    """The signature with each placeholder as `*`: its literal pieces, which every text it
    matches contains (what anchors, search keys and the length rules are computed from)."""
    return PLACEHOLDER.sub("*", signature)


def compile_pieces(normalised: str) -> tuple[Piece, ...]:
    """The pieces of a normalised, trimmed signature, each a run of literal text and slots."""
    compiled: list[Piece] = []
    for raw in normalised.split("*"):
        tokens: list[Token] = []
        pos = 0
        for found in PLACEHOLDER.finditer(raw):
            if found.start() > pos:
                tokens.append(raw[pos : found.start()])
            if tokens:
                kind, _, name = found.group(1).partition(":")
                tokens.append(Slot(kind, name))
            else:
                tokens.append(found.group())  # no literal text before it: literal
            pos = found.end()
        if pos < len(raw):
            tokens.append(raw[pos:])
        merged: list[Token] = []
        for token in tokens:
            if isinstance(token, str) and merged and isinstance(merged[-1], str):
                merged[-1] += token
            else:
                merged.append(token)
        if merged:
            compiled.append(tuple(merged))
    return tuple(compiled)


def _read_nonfinite(text: str, pos: int) -> int:
    if text.startswith(NONFINITE_PREFIX, pos):
        pos += len(NONFINITE_PREFIX)
    if pos < len(text) and text[pos] in "+-":
        pos += 1
    for word in NONFINITE_WORDS:
        if text.startswith(word, pos):
            end = pos + len(word)
            return end if end >= len(text) or not WORD_CHAR.match(text[end]) else -1
    return -1


def _digits(text: str, pos: int) -> int:
    end = pos
    while end < len(text) and end - pos < NUMBER_DIGITS and "0" <= text[end] <= "9":
        end += 1
    return end


def _read_size(text: str, pos: int) -> tuple[int, Value] | None:
    end = _digits(text, pos)
    if end == pos:
        return None
    if end < len(text) and text[end] == "." and end + 1 < len(text) and text[end + 1].isdigit():
        end = _digits(text, end + 1)
    number = text[pos:end]
    at = end + 1 if text.startswith(" ", end) else end
    for unit, scale, shown in UNITS:
        stop = at + len(unit)
        if text.startswith(unit, at) and (stop >= len(text) or not WORD_CHAR.match(text[stop])):
            return stop, Value(float(number) * scale, f"{number} {shown}")
    return None


def _match_rest(piece: Piece, text: str, pos: int, values: dict[str, Value]) -> int:
    """Match the tokens after the first at `pos`; the end, or -1."""
    for token in piece[1:]:
        if isinstance(token, str):
            if not text.startswith(token, pos):
                return -1
            pos += len(token)
        elif token.kind == "nonfinite":
            pos = _read_nonfinite(text, pos)
            if pos < 0:
                return -1
        else:
            read = _read_size(text, pos)
            if read is None:
                return -1
            pos, values[token.name] = read
    return pos


def match(compiled: tuple[Piece, ...], text: str) -> dict[str, Value] | None:
    """The sizes captured when the pieces occur in `text` (normalised) in order, else None."""
    values: dict[str, Value] = {}
    pos = 0
    for piece in compiled:
        first = piece[0]
        assert isinstance(first, str)  # compile_pieces makes every piece start with text
        start = text.find(first, pos)
        while start >= 0:
            found: dict[str, Value] = {}
            end = _match_rest(piece, text, start + len(first), found)
            if end >= 0:
                values.update(found)
                pos = end
                break
            start = text.find(first, start + 1)
        if start < 0:
            return None
    return values


# How the matcher reads a signature and a log line alike: ASCII letters lower-cased, each run of
# blanks one space (diagnose/ and diagnose-core.js).
_SPACES = re.compile(r"[ \t\f\v]+")
_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def ascii_lower(text: str) -> str:
    return text.translate(_LOWER)


def normalise(text: str) -> str:
    return _SPACES.sub(" ", ascii_lower(text))


def pieces(signature: str) -> list[str]:
    """The literal pieces of a signature, normalised, in order (a placeholder splits pieces
    like `*`: its text is not in the log)."""
    return [p for p in normalise(literal_view(signature)).strip(" ").split("*") if p]


@functools.lru_cache(maxsize=100_000)
def compiled(signature: str) -> tuple[Piece, ...]:
    """The signature as the matcher runs it: literal text and placeholders."""
    return compile_pieces(normalise(signature).strip(" "))
