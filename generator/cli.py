"""The `encyclopedia` command: the same pipeline functions the MkDocs plugin uses."""

from __future__ import annotations

import difflib
import json
import os
import re
import sys
import textwrap
from pathlib import Path
from typing import Any, BinaryIO

import click

from . import diagnose, exports
from .link import Page, build_encyclopedia
from .load import CATEGORY_FILE
from .model import is_slug
from .problems import EntryError, Problem
from .render import TEMPLATES
from .text import one_line, paragraphs, refused_character, visible
from .validate import did_you_mean

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
@click.argument("paths", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--entries", "entries_dir", metavar="DIR", help="Entries folder (default: entries).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "github", "json"]),
    default="text",
    show_default=True,
    help="How to print problems.",
)
def check(paths: tuple[Path, ...], entries_dir: str | None, fmt: str) -> None:
    """Validate entries and the links between them: all of them, or only report on PATHS.

    Cross-entry checks (related ids, duplicate ids and signatures) always read every entry."""
    root = _entries_dir(entries_dir)
    outside = [p for p in paths if not p.resolve().is_relative_to(root.resolve())]
    if outside:
        # Checking a file means checking it with the entries it links to, so a file outside the
        # entries folder would be silently skipped, not checked.
        raise click.UsageError(
            f"{outside[0]} is not inside the entries folder {root}; pass the folder that holds "
            "its category folder with --entries DIR"
        )
    wanted = {_shown(p, root) for p in paths}
    try:
        build_encyclopedia(root)
        problems: list[Problem] = []
    except EntryError as err:
        problems = [p for p in err.problems if not wanted or p.path in wanted]
    if problems:
        _emit(problems, fmt)
        if fmt == "text":
            click.echo(f"{len(problems)} problem(s) found.", err=True)
        sys.exit(PROBLEMS)
    if fmt == "json":
        click.echo("[]")
    elif fmt == "text":
        what = f"{len(paths)} file(s)" if paths else "every entry"
        click.echo(f"checked {what}: no problems.", err=True)


def _shown(path: Path, root: Path) -> str:
    """A path as problems name it: relative to the folder that holds the entries folder."""
    try:
        return path.resolve().relative_to(root.resolve().parent).as_posix()
    except ValueError:
        return path.as_posix()


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
    files = exports.export_files(enc, base_url)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            # each file appears whole or not at all: written beside its name, then renamed
            part = out_dir / f".{name}.part"
            part.write_text(text, encoding="utf-8")
            os.replace(part, out_dir / name)
            click.echo(out_dir / name)
    except OSError as err:
        raise click.UsageError(f"cannot write to {out_dir}: {err.strerror}") from None


@main.command()
@click.argument("entry_id", metavar="ID")
@click.option("--category", required=True, help="The category folder, e.g. memory.")
@click.option("--title", default=None, help="The entry's title.")
@click.option("--entries", "entries_dir", metavar="DIR", help="Entries folder (default: entries).")
def new(entry_id: str, category: str, title: str | None, entries_dir: str | None) -> None:
    """Write entries/CATEGORY/ID.yaml from the commented template."""
    root = _entries_dir(entries_dir)
    if not is_slug(entry_id):
        raise click.UsageError(
            f"`{entry_id}` is not a valid id: use lower-case ASCII letters, "
            "digits and single hyphens, e.g. `nccl-timeout`"
        )
    known = sorted(p.parent.name for p in root.glob(f"*/{CATEGORY_FILE}"))
    if category not in known:
        raise click.UsageError(
            f"unknown category `{category}`; {did_you_mean(category, known)}"
            f"known categories: {', '.join(known)}"
        )
    existing = sorted(root.glob(f"*/{entry_id}.yaml"))
    if existing:
        raise click.UsageError(f"an entry `{entry_id}` already exists: {existing[0]}")
    if title is not None and (refused_character(title) is not None or "\n" in title):
        raise click.UsageError("the title holds a line break or an invisible character")
    target = root / category / f"{entry_id}.yaml"
    template = (TEMPLATES / "entry-template.yaml").read_text(encoding="utf-8")
    values = {
        "title": json.dumps(title or entry_id.replace("-", " ").capitalize(), ensure_ascii=False),
        "category": category,
        "id": entry_id,
    }
    # One pass over the template: a value that holds `{id}` (a title) is not expanded again.
    text = re.sub(r"\{(title|category|id)\}", lambda m: values[m.group(1)], template)
    try:
        with target.open("x", encoding="utf-8") as file:  # never over an existing file or link
            file.write(text)
    except OSError as err:
        raise click.UsageError(f"cannot write {target}: {err.strerror}") from None
    click.echo(f"wrote {target}")
    click.echo("next: fill in the TODOs, then run `encyclopedia check` and `make serve`")


@main.command()
@click.argument("entry_id", metavar="ID")
@click.option("--entries", "entries_dir", metavar="DIR", help="Entries folder (default: entries).")
def explain(entry_id: str, entries_dir: str | None) -> None:
    """Print an entry in the terminal: quick answer, fix and how to confirm it."""
    try:
        enc = build_encyclopedia(_entries_dir(entries_dir))
    except EntryError as err:
        _emit(err.problems, "text")
        raise click.ClickException("the entries have problems; run `encyclopedia check`") from None
    page = enc.pages.get(entry_id) or enc.aliases.get(entry_id)
    if page is None:
        close = difflib.get_close_matches(entry_id, list(enc.pages), n=3, cutoff=0.4)
        hint = f"; did you mean: {', '.join(close)}?" if close else ""
        click.echo(f"no entry `{entry_id}`{hint}", err=True)
        sys.exit(PROBLEMS)
    # Entries cannot hold control characters (the loader refuses them); showing any that
    # reach here as escapes keeps the terminal safe whatever the source of the text.
    click.echo(visible(explain_text(page), lines=True))


def _wrap(text: str, indent: str = "  ") -> str:
    return "\n".join(
        textwrap.fill(p, 96, initial_indent=indent, subsequent_indent=indent)
        for p in paragraphs(text)
    )


def explain_text(page: Page) -> str:
    e = page.entry
    out = [
        f"{e.title}  [{page.id}, {e.severity}]",
        "",
        "Quick answer",
        _wrap(e.summary),
        "",
        "How to fix it",
        _wrap(e.fix.summary),
    ]
    out += [
        textwrap.fill(step, 96, initial_indent=f"  {i}. ", subsequent_indent="     ")
        for i, step in enumerate(e.fix.steps, 1)
    ]
    for code in e.fix.code:
        out += [
            "",
            f"  {code.stack}: {code.title}",
            textwrap.indent(code.code.rstrip("\n"), "      "),
        ]
    out += ["", "How to confirm (cheapest first)"]
    out += [
        textwrap.fill(item, 96, initial_indent="  [ ] ", subsequent_indent="      ")
        for item in e.confirm
    ]
    out += ["", "Error signatures"] + [f"  {s.text}" for s in e.signatures if not s.context]
    if page.related:
        out += ["", "Related"] + [f"  {link.page.id} ({link.relation})" for link in page.related]
    return "\n".join(out)


def _records(entries_dir: str | None, index_file: Path | None) -> list[dict[str, Any]]:
    """The diagnose index records: from an exported signatures.json, or built from entries."""
    if index_file is not None:
        try:
            records: list[dict[str, Any]] = json.loads(index_file.read_text(encoding="utf-8"))
            diagnose.Index.from_export(records)
            return records
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise click.UsageError(f"{index_file}: not a signature index ({err})") from None
    try:
        enc = build_encyclopedia(_entries_dir(entries_dir))
    except EntryError as err:
        _emit(err.problems, "text")
        raise click.ClickException("the entries have problems; run `encyclopedia check`") from None
    return exports.signature_index(enc, "/")


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
    records = _records(entries_dir, index_file)
    result = diagnose.diagnose(diagnose.Index.from_export(records), log, top)
    if as_json:
        click.echo(json.dumps(result, indent=1, ensure_ascii=False))
    else:
        _print_diagnosis(result, {r["id"]: r for r in records})
    sys.exit(0 if result["matches"] else PROBLEMS)


def _print_diagnosis(result: dict[str, Any], records: dict[str, dict[str, Any]]) -> None:
    if not result["matches"]:
        click.echo(
            "No known failure matched this log. Nothing here identifies one: search the "
            "site for the exact error line, or open an entry if you find its cause."
        )
        return
    lead = next((m for m in result["matches"] if not m["collateral_of"]), None)
    shown = [m for m in result["matches"] if not m["also_possible_for"]]
    for i, match in enumerate(shown, 1):
        notes = []
        if match["rank"] is not None:
            notes.append(f"rank {match['rank']}")
        if match["collateral_of"]:
            notes.append(f"caused by {match['collateral_of']}")
        extra = f" ({', '.join(notes)})" if notes else ""
        click.echo(
            visible(
                f"{i}. {match['title']} [{match['id']}] score {match['score']}, "
                f"{match['confidence']} confidence{extra}"
            )
        )
        click.echo(f"   {visible(match['url'])}")
        symptom = match["symptom"]
        if symptom:
            # The symptom row the log itself shows, with the numbers it was read from.
            values = ", ".join(f"{k} {v}" for k, v in sorted(symptom["values"].items()))
            click.echo(visible(f"   Your log shows: {one_line(symptom['symptom'])}"))
            if values:
                click.echo(visible(f"   Read from the log: {values}"))
            click.echo(visible(f"   Cause: {one_line(symptom['cause'])}"))
        record = records.get(match["id"], {})
        advise = match is lead or (not match["collateral_of"] and match["confidence"] != "low")
        if advise and record.get("summary"):
            # What to do, before the evidence: the quick answer and the first fix step (a
            # low-confidence alternative below the lead keeps to its title and evidence).
            click.echo(f"   {visible(one_line(record['summary']))}")
            click.echo(f"   First step: {visible(one_line(record['first_step']))}")
        printed: set[int] = set()
        for ev in match["evidence"]:
            if ev["line"] in printed:
                continue  # two signatures on one line: the line once
            printed.add(ev["line"])
            # a log line may carry the run's own colour codes or worse: shown, not obeyed
            click.echo(f"   line {ev['line']}: {visible(ev['text'][:160])}")
        for alt in result["matches"]:
            if alt["also_possible_for"] == match["id"]:
                click.echo(
                    visible(
                        f"   also possible: {alt['title']} [{alt['id']}] score {alt['score']}, "
                        f"{alt['confidence']} confidence (same lines)"
                    )
                )


if __name__ == "__main__":
    main()
