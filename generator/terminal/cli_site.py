"""The `encyclopedia` commands that maintain the entries and build the site: check, verify,
export, render, finish, new and reproduce. They need the site's stack (pydantic, PyYAML, Jinja2,
MkDocs' helpers), which the core commands in cli.py (run, diagnose, explain) do not: cli.py
loads this module only when one of these commands runs or `--help` lists them."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import click

from ..pages import exports, tree
from ..pages.finish import finish_site
from ..pages.render import TEMPLATES
from ..pipeline import build_encyclopedia, build_site
from ..prove import releases, reproduce, verify
from ..read import reproduced
from ..read.load import CATEGORY_FILE, LoadCache, load_all
from ..read.model import is_slug
from ..read.problems import EntryError, Problem
from ..read.text import refused_character
from ..read.validate import did_you_mean
from ..search import fulltext
from . import report as terminal
from .cli_common import (
    BROKEN,
    COLOR_OPTION,
    ENTRIES_OPTION,
    PROBLEMS,
    UNREACHABLE,
    emit_problems,
    entries_path,
)

# How `check` and `verify` print problems.
FORMAT_OPTION = click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "github", "json"]),
    default="text",
    show_default=True,
    help="How to print problems.",
)


def _checkout(entries_dir: str | None) -> Path:
    """The folder that holds the entries: what a reproducer's box hides."""
    return entries_path(entries_dir).resolve().parent


@click.command(short_help="Validate entries: path:line:col: problem; fix.")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@ENTRIES_OPTION
@FORMAT_OPTION
def check(paths: tuple[Path, ...], entries_dir: str | None, fmt: str) -> None:
    """Validate entries and the links between them: all of them, or only report on PATHS.

    Cross-entry checks (related ids, duplicate ids and signatures) always read every entry."""
    root = entries_path(entries_dir)
    outside = [p for p in paths if not p.resolve().is_relative_to(root.resolve())]
    if outside:
        # Checking a file means checking it with the entries it links to, so a file outside the
        # entries folder would be silently skipped, not checked.
        raise click.UsageError(
            f"{outside[0]} is not inside the entries folder {root}; pass the folder that holds "
            "its category folder with --entries DIR"
        )
    wanted = {_shown(p, root) for p in paths}
    cache = LoadCache()  # the length notes read the same files again: parsed once
    try:
        build_encyclopedia(root, cache)
        problems: list[Problem] = []
    except EntryError as err:
        problems = [p for p in err.problems if not wanted or p.path in wanted]
    if _report(problems, fmt):
        _length_notes(root, wanted, cache)
        what = f"{len(paths)} file(s)" if paths else "every entry"
        click.echo(f"checked {what}: no problems.", err=True)


def _report(problems: list[Problem], fmt: str) -> bool:
    """Print the problems and exit 1, or print the empty JSON list; True when a text summary
    of success is the caller's to print."""
    if problems:
        emit_problems(sorted(problems), fmt)
        if fmt == "text":
            click.echo(f"{len(problems)} problem(s) found.", err=True)
        sys.exit(PROBLEMS)
    if fmt == "json":
        click.echo("[]")
    return fmt == "text"


def _length_notes(root: Path, wanted: set[str], cache: LoadCache) -> None:
    """Length warnings: each one for the files named, a count for the whole folder."""
    from ..read.rules import length_warnings

    found = [w for e in load_all(root, cache).entries for w in length_warnings(e)]
    if wanted:
        for w in found:
            if w.path in wanted:
                click.echo(f"{w.path}:{w.line}:{w.col}: warning: {w.message}; {w.fix}", err=True)
    elif found:
        files = len({w.path for w in found})
        click.echo(
            f"{len(found)} length warning(s) in {files} entries; name a file to see its own",
            err=True,
        )


@click.command("verify", short_help="Prove sources and versions on the package index.")
@ENTRIES_OPTION
@click.option("--offline", is_flag=True, help="Read only the cache; never ask the index.")
@click.option(
    "--requirements",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("scripts/reproduce-requirements.txt"),
    show_default=True,
    help="The reproducers' pins, checked too with the sets in reproduce-sets/ beside it "
    "(skipped when missing).",
)
@FORMAT_OPTION
def verify_command(entries_dir: str | None, offline: bool, requirements: Path, fmt: str) -> None:
    """Check against the package index what it can prove: each signature's `source` release
    holds its text, each version `applies_to` names is a release, each reproducer pin exists.
    Downloads are cached (see generator/prove/releases.py); exits 3 when the index cannot be reached
    and the cache lacks the answer."""
    root = entries_path(entries_dir)
    cache = LoadCache()  # the records verify reads are the ones the build just parsed
    try:
        build_encyclopedia(root, cache)  # what check finds first: verify reads valid entries
    except EntryError as err:
        emit_problems(err.problems, fmt)
        sys.exit(PROBLEMS)
    index = releases.PackageIndex(offline=offline)
    loaded = load_all(root, cache).entries
    try:
        problems = verify.verify(loaded, index, requirements)
    except releases.IndexUnreachable as err:
        click.echo(
            f"encyclopedia verify: {err}; connect to the package index, or fill the cache "
            f"({index.root}) on a machine that can",
            err=True,
        )
        sys.exit(UNREACHABLE)
    if _report(problems, fmt):
        click.echo(
            f"verified {len(loaded)} entries against the package index: no problems.", err=True
        )


def _shown(path: Path, root: Path) -> str:
    """A path as problems name it: relative to the folder that holds the entries folder."""
    try:
        return path.resolve().relative_to(root.resolve().parent).as_posix()
    except ValueError:
        return path.as_posix()


@click.command(short_help="Write the JSON exports (entries, signatures, schema...).")
@click.argument("out_dir", type=click.Path(file_okay=False, path_type=Path))
@ENTRIES_OPTION
@click.option("--base-url", default="/", show_default=True, help="Prefix of page URLs.")
def export(out_dir: Path, entries_dir: str | None, base_url: str) -> None:
    """Write entries.json, signatures.json, schema.json, categories.json and tags.json."""
    try:
        enc = build_encyclopedia(entries_path(entries_dir))
    except EntryError as err:
        emit_problems(err.problems, "text")
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


def _asset_files(assets: Path) -> dict[str, bytes]:
    """The hand-written pages and static files, by path inside the folder (dotfiles left out,
    as builders leave them out). A link is refused, not followed: it would publish its target."""
    files: dict[str, bytes] = {}
    for path in sorted(assets.rglob("*")):
        rel = path.relative_to(assets)
        if any(part.startswith(".") for part in rel.parts):
            continue
        if path.is_symlink():
            raise click.UsageError(
                f"{path} is a link: the site would publish what it points to; copy the file in"
            )
        if path.is_file():
            files[rel.as_posix()] = path.read_bytes()
    return files


@click.command(short_help="Write the docs tree for another builder.")
@click.argument("out_dir", type=click.Path(file_okay=False, path_type=Path))
@ENTRIES_OPTION
@click.option(
    "--assets",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default="site_assets",
    show_default=True,
    help="Hand-written pages, CSS and JavaScript copied in beside the generated pages.",
)
@click.option(
    "--overrides",
    type=click.Path(file_okay=False, path_type=Path),
    default="overrides/encyclopedia",
    show_default=True,
    help="Templates that replace the generator's own of the same name.",
)
@click.option("--base-url", default="/", show_default=True, help="Prefix of URLs in the exports.")
@click.option("--edit-url", default=None, help='"Edit this entry" link; `{path}` is the file.')
def render(
    out_dir: Path,
    entries_dir: str | None,
    assets: Path,
    overrides: Path,
    base_url: str,
    edit_url: str | None,
) -> None:
    """Write the site's docs tree to OUT_DIR: the hand-written pages and assets, every generated
    page and the exports, for any MkDocs-compatible builder to build (docs_dir: OUT_DIR).

    Pages of removed entries are deleted; unchanged files keep their bytes and mtime. Nothing
    is written when an entry has a problem."""
    try:
        enc = build_encyclopedia(entries_path(entries_dir))
    except EntryError as err:
        emit_problems(err.problems, "text")
        sys.exit(PROBLEMS)
    site = build_site(enc, base_url, edit_url, overrides)
    files = _asset_files(assets)
    files.update({page.src_uri: page.markdown.encode() for page in site.pages})
    files.update({name: text.encode() for name, text in site.files.items()})
    try:
        written = tree.write_tree(out_dir, files)
    except (tree.TreeError, OSError) as err:
        raise click.UsageError(f"cannot write {out_dir}: {err}") from None
    click.echo(
        f"{out_dir}: {len(written.changed)} written, {written.unchanged} unchanged, "
        f"{len(written.removed)} removed"
    )


@click.command(short_help="Finish a site another builder made from render.")
@click.argument("site_dir", type=click.Path(file_okay=False, exists=True, path_type=Path))
@ENTRIES_OPTION
@click.option("--no-full-text", is_flag=True, help="Skip the Pagefind index.")
def finish(site_dir: Path, entries_dir: str | None, no_full_text: bool) -> None:
    """Finish SITE_DIR, built by another builder from `encyclopedia render`: each page's
    Content-Security-Policy (the diagnose page may connect nowhere), the entries' FAQ data, and
    the Pagefind full-text index. The MkDocs plugin does this itself."""
    try:
        enc = build_encyclopedia(entries_path(entries_dir))
    except EntryError as err:
        emit_problems(err.problems, "text")
        sys.exit(PROBLEMS)
    try:
        count, summary, odd = finish_site(site_dir, enc, full_text=not no_full_text)
    except fulltext.FullTextError as err:
        raise click.UsageError(str(err)) from None
    if odd:
        emit_problems(odd, "text")
        click.echo(f"{len(odd)} problem(s) found; nothing was finished.", err=True)
        sys.exit(PROBLEMS)
    click.echo(f"{site_dir}: {count} pages finished" + (f"; {summary}" if summary else ""))


@click.command(short_help="Write a new entry from the commented template.")
@click.argument("entry_id", metavar="ID")
@click.option("--category", required=True, help="The category folder, e.g. memory.")
@click.option("--title", default=None, help="The entry's title.")
@ENTRIES_OPTION
def new(entry_id: str, category: str, title: str | None, entries_dir: str | None) -> None:
    """Write entries/CATEGORY/ID.yaml from the commented template."""
    root = entries_path(entries_dir)
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


_MARKS = {"passed": ("pass", "green"), "failed": ("FAIL", "red"), "broken": ("BROKEN", "yellow")}


def _reproduction_lines(result: reproduced.Reproduction, style: terminal.Style) -> list[str]:
    word, colour = _MARKS[result.status]
    took = f"{result.failing.seconds:.1f} s + {result.fixed.seconds:.1f} s"
    on = f"{', '.join(result.versions)}; " if result.versions else ""
    lines = [f"{style.paint(word, colour)} {result.id} on {result.set} ({on}{took})"]
    if result.status == "passed":
        return lines
    for problem in result.problems:
        lines.append(f"  - {problem}")
    for name, run in (("failing", result.failing), ("fixed", result.fixed)):
        if not run.output:
            continue
        code = "timed out" if run.exit_code is None else f"exit code {run.exit_code}"
        lines.append(style.paint(f"  output of the {name} script ({code}):", "dim"))
        lines.extend("    " + line for line in run.output.splitlines())
    return lines


@click.command("reproduce", short_help="Run the reproducers, each in its box.")
@click.argument("ids", nargs=-1, metavar="[ID]...")
@click.option(
    "--python",
    default=".venv-torch/bin/python",
    show_default=True,
    help="The Python with PyTorch installed that runs the scripts (the site does not need torch).",
)
@click.option(
    "--sets",
    "sets_folder",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path(".venv-torch/sets"),
    show_default=True,
    help="Other sets of releases, one folder each, installed over that Python's (make reproduce "
    "installs scripts/reproduce-sets/NAME.txt into sets/NAME).",
)
@click.option(
    "--jobs",
    type=click.IntRange(1, 16),
    default=2,
    show_default=True,
    help="Reproducers run at once (those that start several processes run alone).",
)
@click.option("--gpu", is_flag=True, help="Also run reproducers that need a CUDA GPU.")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the results here (merged with an existing file; entries/_reproduced.json is "
    "the one the site shows).",
)
@ENTRIES_OPTION
@COLOR_OPTION
def reproduce_command(
    ids: tuple[str, ...],
    python: str,
    sets_folder: Path,
    jobs: int,
    gpu: bool,
    out: Path | None,
    entries_dir: str | None,
    color: str,
) -> None:
    """Run the reproducers of the entries IDS (default: all) on each set of releases they name,
    each failing script and its fixed variant in a box with its time limit. A run passes when
    the failing script does what the entry says on that set (fails with a primary signature
    matched and diagnosed to its entry first, or runs through where the entry says the failure
    is absent) and the fixed script succeeds. Exits 1 when any failed, 4 when none failed but
    some could not say (a missing package, an import error, a time limit)."""
    try:
        enc = build_encyclopedia(entries_path(entries_dir))
    except EntryError as err:
        emit_problems(err.problems, "text")
        sys.exit(PROBLEMS)
    style = terminal.style_for(sys.stdout, color)

    def show(result: reproduced.Reproduction) -> None:
        click.echo("\n".join(_reproduction_lines(result, style)), color=style.colour)

    try:
        results, skipped = reproduce.reproduce_all(
            enc,
            python,
            _checkout(entries_dir),
            ids,
            gpu,
            progress=show,
            sets_folder=sets_folder,
            jobs=jobs,
        )
    except reproduce.ReproduceError as err:
        raise click.UsageError(str(err)) from None
    by_status = {s: [f"{r.id} on {r.set}" for r in results if r.status == s] for s in _MARKS}
    summary = f"{len(by_status['passed'])} of {len(results)} reproducer runs passed"
    if skipped:
        summary += f"; {len(skipped)} need a GPU, skipped (--gpu runs them)"
    for status in ("failed", "broken"):
        if by_status[status]:
            summary += f"; {status}: {', '.join(by_status[status])}"
    click.echo(summary)
    if out is not None:
        try:
            reproduced.write_results(out, results, merge=True)
        except OSError as err:
            raise click.UsageError(f"cannot write {out}: {err.strerror}") from None
        click.echo(f"results: {out}")
    sys.exit(PROBLEMS if by_status["failed"] else BROKEN if by_status["broken"] else 0)
