"""Problems found in entries: one record per problem, formatted like Rust's tidy."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .text import visible

# A message quotes contributor text; past this it is cut so that one problem stays one line.
MAX_MESSAGE = 400


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong with one file, with where it is and how to fix it. Every field is made
    one printable line when the problem is built: messages quote contributor text (a multi-line
    value, a file name, an escape sequence) and must print as `path:line:col: ...` on one line,
    harmless in a terminal."""

    path: str
    line: int
    col: int
    message: str
    fix: str

    def __post_init__(self) -> None:
        message = visible(self.message)
        if len(message) > MAX_MESSAGE:
            message = message[: MAX_MESSAGE - 1] + "…"
        object.__setattr__(self, "path", visible(self.path))
        object.__setattr__(self, "message", message)
        object.__setattr__(self, "fix", visible(self.fix))

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: {self.message}; {self.fix}"


def counted(problems: Sequence[Problem]) -> str:
    """`N problem(s) in entries`: how the build, the terminal and the banner sum them up."""
    return f"{len(problems)} problem{'s' if len(problems) != 1 else ''} in entries"


class EntryError(Exception):
    """Raised with every problem found, after all of them were collected."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = sorted(set(problems))
        super().__init__("\n".join(str(p) for p in self.problems))
