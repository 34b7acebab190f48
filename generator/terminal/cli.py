"""The `encyclopedia` command: the same pipeline functions the MkDocs plugin uses."""

from __future__ import annotations

import dataclasses
import difflib
import functools
import importlib
import io
import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any, NoReturn, cast

import click

from .. import diagnose
from ..diagnose import ranklogs
from ..diagnose.records import EntrySignatures
from ..read.problems import EntryError
from ..read.text import paragraphs, visible
from ..search import describe
from . import report as terminal
from . import runwrap, sources
from .cli_common import (
    COLOR_OPTION,
    ENTRIES_OPTION,
    PROBLEMS,
    SITE_URL_OPTION,
    USAGE,
    emit_problems,
    problem_records,
)

# The contributor and site tools, by command name: in cli_site.py, which imports the site's
# stack (pydantic, Jinja2, MkDocs' helpers), loaded only when one of them runs or is listed.
SITE_COMMANDS = {
    "check": "check",
    "verify": "verify_command",
    "export": "export",
    "render": "render",
    "finish": "finish",
    "new": "new",
    "reproduce": "reproduce_command",
}
USER_COMMANDS = ("run", "diagnose", "explain", "search")
SITE_EXTRA = "pip install 'ml-failure-encyclopedia[site]'"


def _site_command(name: str) -> click.Command:
    """A site tool, or, where the package was installed without its site extra, a command that
    says how to get it."""
    try:
        module = importlib.import_module(".cli_site", __package__)
    except ImportError as err:
        missing = err.name or "a package"

        @click.command(name, context_settings={"ignore_unknown_options": True})
        @click.argument("args", nargs=-1, type=click.UNPROCESSED)
        def unavailable(args: tuple[str, ...]) -> None:
            raise click.UsageError(
                f"`encyclopedia {name}` is a site tool and needs {missing}: {SITE_EXTRA}"
            )

        unavailable.short_help = "(a site tool: install the [site] extra)"
        return unavailable
    command: click.Command = getattr(module, SITE_COMMANDS[name])
    return command


class _Commands(click.Group):
    """The user commands come with the light core; the site tools load on demand, and `--help`
    lists the two kinds apart."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*USER_COMMANDS, *sorted(SITE_COMMANDS)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in SITE_COMMANDS and cmd_name not in self.commands:
            self.add_command(_site_command(cmd_name), cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        for title, names in (
            ("Diagnose a failure", USER_COMMANDS),
            ("Maintain the entries and the site", sorted(SITE_COMMANDS)),
        ):
            rows = []
            for name in names:
                command = self.get_command(ctx, name)
                if command is not None and not command.hidden:
                    rows.append((name, command.get_short_help_str(formatter.width - 30)))
            with formatter.section(title):
                formatter.write_dl(rows)


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="ml-failure-encyclopedia", prog_name="encyclopedia")
def main() -> None:
    """Diagnose ML training failures from their logs, offline, and maintain the encyclopedia's
    entries."""


def _site_url(value: str | None) -> str:
    chosen = value or os.environ.get("ENCYCLOPEDIA_SITE_URL") or sources.built_site_url() or "/"
    return chosen.rstrip("/") + "/"


def _source(entries_dir: str | None, site_url: str | None, as_json: bool = False) -> sources.Source:
    """The records to work on. Broken entries are an error (exit 2), reported on standard error;
    with `as_json`, standard output still gets a diagnose result, with the problems in it."""
    base = _site_url(site_url)
    key = f"encyclopedia.source:{entries_dir}:{base}"
    # A command that needs the records twice reads them once (memo of this invocation only).
    memo = click.get_current_context().meta
    if key not in memo:
        try:
            memo[key] = sources.load(entries_dir, base)
        except EntryError as err:
            _broken(err, as_json)
    loaded: sources.Source = memo[key]
    return loaded


def _broken(err: EntryError, as_json: bool) -> NoReturn:
    if as_json:
        result = {"matches": [], "root_rank": None, "problems": problem_records(err.problems)}
        click.echo(json.dumps(result, indent=1, ensure_ascii=False))
    emit_problems(err.problems, "text", err=True)
    click.echo("Error: the entries have problems; run `encyclopedia check`", err=True)
    sys.exit(USAGE)


@main.command(short_help="Show an entry in the terminal, offline.")
@click.argument("entry_id", metavar="ID")
@ENTRIES_OPTION
@SITE_URL_OPTION
def explain(entry_id: str, entries_dir: str | None, site_url: str | None) -> None:
    """Print an entry in the terminal: quick answer, fix, how to confirm it, references."""
    source = _source(entries_dir, site_url)
    records = {r["id"]: r for r in source.entries}
    for each in source.entries:
        for alias in each.get("aliases", ()):
            records.setdefault(alias, each)
    record = records.get(entry_id)
    if record is None:
        click.echo(f"no entry `{entry_id}`{_suggest(entry_id, source.entries)}", err=True)
        sys.exit(PROBLEMS)
    # Entries cannot hold control characters (the loader refuses them); showing any that
    # reach here as escapes keeps the terminal safe whatever the source of the text.
    click.echo(visible(explain_text(record), lines=True))


def _suggest(entry_id: str, records: list[dict[str, Any]]) -> str:
    """Entries an unknown id may have meant: ids spelt alike, then entries whose title and
    phrases its words describe (`cuda-oom` finds cuda-out-of-memory)."""
    ids = [r["id"] for r in records]
    close = difflib.get_close_matches(entry_id, ids, n=3, cutoff=0.6)
    words = entry_id.replace("-", " ").replace("_", " ")
    for page in describe.rank_records(records, words + " ", 5):
        if page.id not in close and len(close) < 5:
            close.append(page.id)
    if not close:
        return "; `encyclopedia search WORDS` finds entries by what you saw"
    return "; did you mean: " + ", ".join(close) + "?"


def _wrap(text: str, indent: str = "  ") -> str:
    return "\n".join(
        textwrap.fill(p, 96, initial_indent=indent, subsequent_indent=indent)
        for p in paragraphs(text)
    )


def explain_text(record: dict[str, Any]) -> str:
    """An entry record (as exported in entries.json) as terminal text."""
    fix = record["fix"]
    out = [
        f"{record['title']}  [{record['id']}, {record['severity']}]",
        *([f"  {record['url']}"] if terminal.is_address(record["url"]) else []),
        "",
        "Quick answer",
        _wrap(record["summary"]),
        "",
        "How to fix it",
        _wrap(fix["summary"]),
    ]
    out += [
        textwrap.fill(step, 96, initial_indent=f"  {i}. ", subsequent_indent="     ")
        for i, step in enumerate(fix["steps"], 1)
    ]
    for code in fix.get("code", ()):
        out += [
            "",
            f"  {code['stack']}: {code['title']}",
            textwrap.indent(code["code"].rstrip("\n"), "      "),
        ]
    out += ["", "How to confirm (cheapest first)"]
    out += [
        textwrap.fill(item, 96, initial_indent="  [ ] ", subsequent_indent="      ")
        for item in record["confirm"]
    ]
    primary = [s["text"] for s in record["signatures"] if not s["context"] and "symptom" not in s]
    if primary:
        out += ["", "Error signatures"] + [f"  {text}" for text in primary]
    related = record.get("related", [])
    if related:
        out += ["", "Related"] + [f"  {link['id']} ({link['relation']})" for link in related]
    out += ["", "References"]
    out += [f"  {ref['title']}\n    {ref['url']}" for ref in record["references"]]
    return "\n".join(out)


def _records(
    entries_dir: str | None, index_file: Path | None, site_url: str | None, as_json: bool = False
) -> list[EntrySignatures]:
    """The diagnose index records: from an exported signatures.json (its site paths under the
    site URL, when one is given), or the entries'."""
    if index_file is not None:
        try:
            # Read as the index it claims to be; building the matcher from it is the check.
            records = cast(list[EntrySignatures], json.loads(index_file.read_text("utf-8")))
            diagnose.Index.from_export(records)
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise click.UsageError(f"{index_file}: not a signature index ({err})") from None
        return cast(list[EntrySignatures], sources.rebase(records, _site_url(site_url)))
    return _source(entries_dir, site_url, as_json).signatures


@main.command("diagnose", short_help="Which entries explain a log; nothing is sent anywhere.")
@click.argument("log", type=click.Path(exists=True, allow_dash=True, path_type=Path), default="-")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--top", type=click.IntRange(min=1), default=None, help="Show at most N entries.")
@ENTRIES_OPTION
@click.option(
    "--index",
    "index_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Use an exported signatures.json instead of the entries.",
)
@SITE_URL_OPTION
@COLOR_OPTION
def diagnose_command(
    log: Path,
    as_json: bool,
    top: int | None,
    entries_dir: str | None,
    index_file: Path | None,
    site_url: str | None,
    color: str,
) -> None:
    """Find the entries that explain LOG: a file, a folder of per-rank logs (read as one log,
    each file's name giving its rank), or - for standard input. Nothing is sent anywhere.
    Exit 0 when something matched, 1 when nothing did, 2 on errors."""
    records = _records(entries_dir, index_file, site_url, as_json)
    index = diagnose.Index.from_export(records)
    locate: terminal.Locate = lambda n: f"line {n}"  # noqa: E731
    if str(log) == "-":
        stream = _Tail(sys.stdin.buffer)
        result = diagnose.diagnose(index, stream, top)  # type: ignore[arg-type]
    elif log.is_dir():
        combined = ranklogs.Combined(ranklogs.rank_logs(log))
        stream = _Tail(combined)
        result = diagnose.diagnose(index, stream, top)  # type: ignore[arg-type]
        locate = combined.locate
        for path, why in combined.unreadable:  # one bad file is a line, not the end
            click.echo(f"{path}:1:1: cannot read it ({why}); left out of the diagnosis", err=True)
    else:
        with log.open("rb") as handle:
            stream = _Tail(handle)
            result = diagnose.diagnose(index, stream, top, log)  # type: ignore[arg-type]
    # Nothing matched: the pages closest to the log's last error line, never a blank answer
    # (not with --index: a signature index holds no entry text).
    near = None
    if not result.matches and index_file is None:
        near = _closest(_source(entries_dir, site_url).entries, stream.text())
    if as_json:
        out = result.to_json()
        if near is not None:
            out["closest"] = {"line": near[0], "pages": [_page_json(p) for p in near[1]]}
        click.echo(json.dumps(out, indent=1, ensure_ascii=False))
    else:
        style = terminal.style_for(sys.stdout, color)
        if near is not None:
            lines = terminal.closest(near[0], near[1], style)
        else:
            lines = terminal.diagnosis(result, {r["id"]: r for r in records}, style, locate)
        click.echo("\n".join(lines), color=style.colour)
    sys.exit(0 if result.matches else PROBLEMS)


class _Tail:
    """A log stream passed through to the matcher, keeping its end (describe.Tail)."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.tail = describe.Tail()

    def read(self, size: int = -1) -> bytes:
        data: bytes = self.stream.read(size)
        self.tail.add(data)
        return data

    def text(self) -> str:
        return self.tail.text()


def _closest(entries: list[dict[str, Any]], tail: str) -> tuple[str, list[describe.Ranked]] | None:
    """The log's last error line and the pages closest to it, or None when there are none."""
    line = describe.last_error_line(tail)
    if line is None:
        return None
    pages = describe.rank_records(entries, line + " ", CLOSEST_PAGES)
    return (line, pages) if pages else None


CLOSEST_PAGES = 3


def _page_json(page: describe.Ranked) -> dict[str, Any]:
    return {"id": page.id, "title": page.title, "url": page.url, "score": page.score}


@main.command("search", short_help="Find entries by an error line or by what you saw.")
@click.argument("words", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@click.option("--top", type=click.IntRange(min=1), default=8, show_default=True)
@ENTRIES_OPTION
@SITE_URL_OPTION
@COLOR_OPTION
def search_command(
    words: tuple[str, ...],
    as_json: bool,
    top: int,
    entries_dir: str | None,
    site_url: str | None,
    color: str,
) -> None:
    """Find entries as the site's search box does, offline: entries whose error signatures
    WORDS match (a pasted error line) first, then those WORDS describe best ("loss is nan when
    fine tuning", "显存不足"). Exit 0 when something was found, 1 when nothing was."""
    text = " ".join(words)
    source = _source(entries_dir, site_url, as_json)
    index = diagnose.Index.from_export(source.signatures)
    errors = diagnose.diagnose(index, io.BytesIO(text.encode("utf-8")), top)
    pages = describe.rank_records(source.entries, text, top)
    if as_json:
        result = {
            "errors": errors.to_json()["matches"],
            "described": [dataclasses.asdict(p) for p in pages],
        }
        click.echo(json.dumps(result, indent=1, ensure_ascii=False))
    else:
        style = terminal.style_for(sys.stdout, color)
        lines = terminal.search_results(errors, pages, style)
        click.echo("\n".join(lines[: 4 * top]), color=style.colour)
    sys.exit(0 if errors.matches or pages else PROBLEMS)


@main.command(
    "run",
    context_settings={"ignore_unknown_options": True},
    short_help="Run a command; if it fails, say why.",
)
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@ENTRIES_OPTION
@SITE_URL_OPTION
@COLOR_OPTION
def run_command(
    command: tuple[str, ...], entries_dir: str | None, site_url: str | None, color: str
) -> None:
    """Run COMMAND (after --), pass its output through as it comes, and when it fails or is
    killed, print the diagnosis of what it printed to standard error. Exits with the command's
    status (128 + N when signal N killed it).

    Example: encyclopedia run -- torchrun --nproc-per-node 8 train.py"""
    records = _records(entries_dir, None, site_url)
    # The index is made in the diagnosing process, beside the command: not on its way.
    index = functools.partial(diagnose.Index.from_export, records)
    try:
        finished = runwrap.run(list(command), index, sys.stdout.buffer, sys.stderr.buffer)
    except OSError as err:
        # As a shell says it: 127 for a command that is not there, 126 for one it cannot run.
        missing = isinstance(err, FileNotFoundError)
        click.echo(f"encyclopedia: cannot run `{command[0]}`: {err.strerror}", err=True)
        sys.exit(127 if missing else 126)
    if finished.status != 0 and not finished.reader_gone:
        style = terminal.style_for(sys.stderr, color)
        header = style.paint(f"encyclopedia: {runwrap.describe(finished)}.", "bold")
        if finished.result is not None:
            # Stopped by someone else: a diagnosis only if what it printed names a failure.
            quiet = finished.stopped_from_outside is not None and not finished.result.matches
            by_id = {r["id"]: r for r in records}
            near = None
            if not quiet and not finished.result.matches:
                near = _closest(_source(entries_dir, site_url).entries, finished.tail)
            if quiet:
                lines = []
            elif near is not None:
                lines = terminal.closest(near[0], near[1], style)
            else:
                lines = terminal.diagnosis(finished.result, by_id, style)
        else:
            lines = [f"The diagnosis failed ({finished.diagnosis_error}); the output is as it was."]
        click.echo("\n".join(["", header, *lines]), err=True, color=style.colour)
    sys.exit(finished.status)


if __name__ == "__main__":
    main()
