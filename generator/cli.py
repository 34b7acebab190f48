"""The `encyclopedia` command: the same pipeline functions the MkDocs plugin uses."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from . import exports
from .link import build_encyclopedia
from .problems import EntryError, Problem

# Exit codes: 0 clean, 1 problems found, 2 usage errors (click's own code for bad usage).
PROBLEMS = 1
USAGE = 2


def _entries_dir(value: str | None) -> Path:
    return Path(value) if value else Path("entries")


def _emit(problems: list[Problem], fmt: str) -> None:
    if fmt == "json":
        click.echo(json.dumps([{"path": p.path, "line": p.line, "col": p.col,
                                "message": p.message, "fix": p.fix} for p in problems], indent=1))
        return
    for p in problems:
        if fmt == "github":
            text = f"{p.message}; {p.fix}".replace("%", "%25").replace("\n", "%0A")
            click.echo(f"::error file={p.path},line={p.line},col={p.col}::{text}")
        else:
            click.echo(str(p))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """Build, check and query the ML training failure encyclopedia."""


@main.command()
@click.option("--entries", "entries_dir", metavar="DIR", help="Entries folder (default: entries).")
@click.option("--format", "fmt", type=click.Choice(["text", "github", "json"]), default="text",
              show_default=True, help="How to print problems.")
def check(entries_dir: str | None, fmt: str) -> None:
    """Validate every entry and the links between them."""
    try:
        enc = build_encyclopedia(_entries_dir(entries_dir))
    except EntryError as err:
        _emit(err.problems, fmt)
        if fmt == "text":
            click.echo(f"{len(err.problems)} problem(s) found.", err=True)
        sys.exit(PROBLEMS)
    if fmt == "json":
        click.echo("[]")
    elif fmt == "text":
        click.echo(f"{len(enc.pages)} entries in {len(enc.categories)} categories: no problems.",
                   err=True)


@main.command()
@click.argument("out_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--entries", "entries_dir", metavar="DIR", help="Entries folder (default: entries).")
@click.option("--base-url", default="/", show_default=True, help="Prefix of page URLs.")
def export(out_dir: Path, entries_dir: str | None, base_url: str) -> None:
    """Write entries.json, signatures.json, schema.json, categories.json and tags.json."""
    try:
        enc = build_encyclopedia(_entries_dir(entries_dir))
    except EntryError as err:
        _emit(err.problems, "text")
        sys.exit(PROBLEMS)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, text in exports.export_files(enc, base_url).items():
        (out_dir / name).write_text(text, encoding="utf-8")
        click.echo(out_dir / name)


if __name__ == "__main__":
    main()
