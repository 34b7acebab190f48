"""The `encyclopedia` command: the same pipeline functions the MkDocs plugin uses."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, BinaryIO

import click

from . import diagnose, exports
from .link import build_encyclopedia
from .problems import EntryError, Problem

# Exit codes: 0 clean, 1 problems found, 2 usage errors (click's own code for bad usage).
PROBLEMS = 1
USAGE = 2


def _entries_dir(value: str | None) -> Path:
    return Path(value) if value else Path("entries")


def _emit(problems: list[Problem], fmt: str) -> None:
    if fmt == "json":
        click.echo(
            json.dumps(
                [
                    {
                        "path": p.path,
                        "line": p.line,
                        "col": p.col,
                        "message": p.message,
                        "fix": p.fix,
                    }
                    for p in problems
                ],
                indent=1,
            )
        )
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
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "github", "json"]),
    default="text",
    show_default=True,
    help="How to print problems.",
)
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
        click.echo(
            f"{len(enc.pages)} entries in {len(enc.categories)} categories: no problems.", err=True
        )


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


def _index(entries_dir: str | None, index_file: Path | None) -> diagnose.Index:
    if index_file is not None:
        try:
            return diagnose.Index.from_export(json.loads(index_file.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise click.UsageError(f"{index_file}: not a signature index ({err})") from None
    try:
        enc = build_encyclopedia(_entries_dir(entries_dir))
    except EntryError as err:
        _emit(err.problems, "text")
        raise click.ClickException("the entries have problems; run `encyclopedia check`") from None
    return diagnose.Index.from_export(
        [exports.signature_record(p, "/") for p in enc.pages.values() if p.entry.status == "active"]
    )


@main.command("diagnose")
@click.argument("log", type=click.File("rb"), default="-")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--top", type=click.IntRange(min=1), default=None, help="Show at most N entries.")
@click.option("--entries", "entries_dir", metavar="DIR", help="Entries folder (default: entries).")
@click.option(
    "--index",
    "index_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Use an exported signatures.json instead of the entries.",
)
def diagnose_command(
    log: BinaryIO, as_json: bool, top: int | None, entries_dir: str | None, index_file: Path | None
) -> None:
    """Find the entries that explain LOG (a file, or - for standard input). Nothing is sent
    anywhere. Exit 0 when something matched, 1 when nothing did, 2 on errors."""
    result = diagnose.diagnose(_index(entries_dir, index_file), log, top)
    if as_json:
        click.echo(json.dumps(result, indent=1, ensure_ascii=False))
    else:
        _print_diagnosis(result)
    sys.exit(0 if result["matches"] else PROBLEMS)


def _print_diagnosis(result: dict[str, Any]) -> None:
    if not result["matches"]:
        click.echo(
            "No known failure matched this log. Nothing here identifies one: search the "
            "site for the exact error line, or open an entry if you find its cause."
        )
        return
    for i, match in enumerate(result["matches"], 1):
        notes = []
        if match["rank"] is not None:
            notes.append(f"rank {match['rank']}")
        if match["collateral_of"]:
            notes.append(f"collateral of {match['collateral_of']}")
        extra = f" ({', '.join(notes)})" if notes else ""
        click.echo(
            f"{i}. {match['title']} [{match['id']}] score {match['score']}, "
            f"{match['confidence']} confidence{extra}"
        )
        click.echo(f"   {match['url']}")
        for ev in match["evidence"]:
            click.echo(f"   line {ev['line']}: {ev['text'][:160]}")


if __name__ == "__main__":
    main()
