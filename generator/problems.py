"""Problems found in entries: one record per problem, formatted like Rust's tidy."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong with one file, with where it is and how to fix it."""

    path: str
    line: int
    col: int
    message: str
    fix: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: {self.message}; {self.fix}"


class EntryError(Exception):
    """Raised with every problem found, after all of them were collected."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = sorted(set(problems))
        super().__init__("\n".join(str(p) for p in self.problems))
