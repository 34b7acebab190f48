"""What the light commands (cli.py) and the site commands (cli_site.py) share: exit codes,
the problem printer and the common options. Imports only click and the problem record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from ..read.problems import Problem

# Exit codes: 0 clean (or matched), 1 problems found (or nothing matched), 2 errors: bad usage
# (click's own code), broken entries, unreadable input,
# 3 the package index could not be asked (verify) and the cache did not hold the answer,
# 4 a reproducer could not say (a missing package, an import error, a time limit) and none failed.
PROBLEMS = 1
USAGE = 2
UNREACHABLE = 3
BROKEN = 4


def entries_path(value: str | None) -> Path:
    return Path(value) if value else Path("entries")


def problem_records(problems: list[Problem]) -> list[dict[str, Any]]:
    return [
        {"path": p.path, "line": p.line, "col": p.col, "message": p.message, "fix": p.fix}
        for p in problems
    ]


def emit_problems(problems: list[Problem], fmt: str, err: bool = False) -> None:
    """Print problems as `check` does (`err`: to standard error, where a command whose output
    is something else puts them)."""
    if fmt == "json":
        click.echo(json.dumps(problem_records(problems), indent=1), err=err)
        return
    for p in problems:
        if fmt == "github":
            text = f"{p.message}; {p.fix}".replace("%", "%25").replace("\n", "%0A")
            click.echo(f"::error file={p.path},line={p.line},col={p.col}::{text}", err=err)
        else:
            click.echo(str(p), err=err)


COLOR_OPTION = click.option(
    "--color",
    type=click.Choice(["auto", "always", "never"]),
    default="auto",
    show_default=True,
    help="Colour the report (auto: on a terminal, unless NO_COLOR is set).",
)
ENTRIES_OPTION = click.option(
    "--entries", "entries_dir", metavar="DIR", help="Entries folder (default: entries)."
)
SITE_URL_OPTION = click.option(
    "--site-url",
    metavar="URL",
    help="Site URL for links (default: $ENCYCLOPEDIA_SITE_URL, else the one this package was "
    "built with; else the explain command).",
)
