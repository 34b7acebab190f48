"""Load stage: find entry and category files under the entries folder and validate each one."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .model import Category, Entry, TagVocabulary, is_slug
from .problems import Problem
from .validate import validate_record
from .yamlsource import Source, read_source

CATEGORY_FILE = "_category.yaml"
TAGS_FILE = "_tags.yaml"


@dataclass(frozen=True)
class Loaded:
    """A valid entry with where it came from."""

    id: str
    category: str
    path: str  # as shown in messages and edit links, relative to the project
    entry: Entry
    source: Source


@dataclass(frozen=True)
class LoadedCategory:
    slug: str
    path: str
    category: Category


@dataclass(frozen=True)
class LoadedTags:
    """The tag vocabulary: tag -> what it covers, and where each tag is written."""

    path: str
    about: dict[str, str]
    source: Source


def _display(path: Path, base: Path) -> str:
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        return path.as_posix()


def _read(path: Path, shown: str) -> tuple[Source, list[Problem]]:
    try:
        raw = path.read_bytes()
    except OSError as err:
        return Source(shown), [
            Problem(
                shown, 1, 1, f"cannot read file: {err.strerror}", "check the file's permissions"
            )
        ]
    return read_source(shown, raw)


def load_category(path: Path, base: Path) -> tuple[LoadedCategory | None, list[Problem]]:
    shown = _display(path, base)
    source, problems = _read(path, shown)
    if source.data is None:
        return None, problems
    record, errors = validate_record(source, Category)
    problems += errors
    if record is None or problems:
        return None, problems
    return LoadedCategory(path.parent.name, shown, record), []


def load_tags(entries_dir: Path) -> tuple[LoadedTags | None, list[Problem]]:
    """Read `entries/_tags.yaml` if the site has one; without it any slug is a valid tag."""
    path = entries_dir / TAGS_FILE
    if not path.is_file():
        return None, []
    shown = _display(path, entries_dir.parent)
    source, problems = _read(path, shown)
    if source.data is None:
        return None, problems
    record, errors = validate_record(source, TagVocabulary)
    problems += errors
    if record is None:
        return None, problems
    for tag in record.tags:
        if not is_slug(tag):
            line, col = source.position(("tags", tag), key=True)
            problems.append(
                Problem(
                    shown,
                    line,
                    col,
                    f"tag `{tag}` is not a slug",
                    "use lower-case ASCII letters, digits and single hyphens, "
                    "e.g. `flash-attention`",
                )
            )
    if problems:
        return None, problems
    return LoadedTags(shown, dict(record.tags), source), []


def load_entry(path: Path, base: Path, categories: set[str]) -> tuple[Loaded | None, list[Problem]]:
    """Load and validate one entry file; the cross-entry checks happen in link.py."""
    shown = _display(path, base)
    problems: list[Problem] = []
    entry_id, category = path.stem, path.parent.name
    if not is_slug(entry_id):
        problems.append(
            Problem(
                shown,
                1,
                1,
                f"file name `{path.name}` is not a valid id",
                "rename it to a lower-case ASCII slug such as `nccl-timeout.yaml`",
            )
        )
    if category not in categories:
        problems.append(
            Problem(
                shown,
                1,
                1,
                f"unknown category `{category}`",
                f"move the file into one of: {', '.join(sorted(categories))} "
                f"(a category is a folder with {CATEGORY_FILE})",
            )
        )
    source, errors = _read(path, shown)
    problems += errors
    if source.data is None:
        return None, problems
    record, errors = validate_record(source, Entry)
    problems += errors
    if record is not None and record.id is not None and record.id != entry_id:
        line, col = source.position(("id",))
        problems.append(
            Problem(
                shown,
                line,
                col,
                f"id `{record.id}` does not match the file name `{path.name}`",
                f"set `id: {entry_id}` or remove the `id` line (the file name is the id)",
            )
        )
    if record is None or problems:
        return None, problems
    return Loaded(entry_id, category, shown, record, source), []


def entry_files(entries_dir: Path) -> tuple[list[Path], list[Path], list[Problem]]:
    """(category files, entry files, problems with the layout), each list sorted."""
    base = entries_dir.parent
    category_files = sorted(entries_dir.glob(f"*/{CATEGORY_FILE}"))
    entry_paths: list[Path] = []
    problems: list[Problem] = []
    for path in sorted(entries_dir.rglob("*")):
        if path.is_dir() or path.name.startswith("."):
            continue
        depth = len(path.relative_to(entries_dir).parts)
        shown = _display(path, base)
        if path.suffix == ".yml":
            problems.append(
                Problem(
                    shown, 1, 1, "entry files end in `.yaml`", f"rename it to `{path.stem}.yaml`"
                )
            )
        elif path.suffix != ".yaml" or (depth == 1 and path.name == TAGS_FILE):
            continue
        elif depth != 2:
            problems.append(
                Problem(
                    shown,
                    1,
                    1,
                    "entry is not in a category folder",
                    "move it to entries/<category>/<id>.yaml",
                )
            )
        elif path.name != CATEGORY_FILE:
            entry_paths.append(path)
    return category_files, entry_paths, problems


def load_all(entries_dir: Path) -> tuple[list[LoadedCategory], list[Loaded], list[Problem]]:
    """Load every category and entry under `entries_dir`, collecting all problems. Invalid
    entries are left out of the result; their problems say why."""
    base = entries_dir.parent
    category_files, entry_paths, problems = entry_files(entries_dir)
    categories: list[LoadedCategory] = []
    for path in category_files:
        loaded_category, errors = load_category(path, base)
        problems += errors
        if loaded_category:
            categories.append(loaded_category)
    known = {path.parent.name for path in category_files}
    entries: list[Loaded] = []
    for path in entry_paths:
        loaded, errors = load_entry(path, base, known)
        problems += errors
        if loaded:
            entries.append(loaded)
    return categories, entries, problems
