"""Load stage: find entry and category files under the entries folder and validate each one."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from .files import CATEGORY_FILE, TAGS_FILE, Layout, display, read_regular, scan
from .model import MAX_SLUG, Category, CommonFailures, Entry, TagVocabulary, is_slug
from .problems import Problem
from .validate import validate_record
from .yamlsource import Source, read_source

if TYPE_CHECKING:
    from .rules import RuleMemo

__all__ = ["CATEGORY_FILE", "TAGS_FILE", "Loaded", "LoadedCategory", "LoadedTags", "load_all"]


@dataclass(frozen=True)
class Loaded:
    """A valid entry with where it came from."""

    id: str
    category: str
    path: str  # as shown in messages and edit links, relative to the project
    entry: Entry
    source: Source


@dataclass(frozen=True)
class Draft:
    """An entry file that parsed to a mapping but failed validation: its tags and related ids
    are still checked, so one `check` reports every problem of the file at once."""

    id: str
    path: str
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


def _read(path: Path, shown: str) -> tuple[Source, list[Problem]]:
    raw, problems = read_regular(path, shown)
    if raw is None:
        return Source(shown), problems
    return read_source(shown, raw)


_Record = TypeVar("_Record", Category, TagVocabulary, CommonFailures)


def read_checked(
    path: Path, shown: str, model: type[_Record]
) -> tuple[_Record | None, Source, list[Problem]]:
    """Read `path` (shown as `shown`) and validate it as `model`: (record or None, the source
    for positions, problems)."""
    source, problems = _read(path, shown)
    if source.data is None:
        return None, source, problems
    record, errors = validate_record(source, model)
    return record, source, problems + errors


def load_category(path: Path, base: Path) -> tuple[LoadedCategory | None, list[Problem]]:
    shown = display(path, base)
    record, _, problems = read_checked(path, shown, Category)
    if record is None or problems:
        return None, problems
    return LoadedCategory(path.parent.name, shown, record), []


def load_tags(path: Path | None, base: Path) -> tuple[LoadedTags | None, list[Problem]]:
    """Read `entries/_tags.yaml` if the site has one; without it any slug is a valid tag."""
    if path is None:
        return None, []
    shown = display(path, base)
    record, source, problems = read_checked(path, shown, TagVocabulary)
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


def load_entry(
    path: Path, base: Path, categories: set[str]
) -> tuple[Loaded | None, list[Problem], Draft | None]:
    """Load and validate one entry file; the cross-entry checks happen in link.py."""
    shown = display(path, base)
    problems: list[Problem] = []
    entry_id, category = path.stem, path.parent.name
    if len(entry_id) > MAX_SLUG:
        problems.append(
            Problem(
                shown,
                1,
                1,
                f"file name is {len(entry_id)} characters before `.yaml`, over the id limit "
                f"of {MAX_SLUG}",
                "rename it to a shorter slug: the id is the page's URL",
            )
        )
    elif not is_slug(entry_id):
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
        return None, problems, None
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
        draft = Draft(entry_id, shown, source) if isinstance(source.data, dict) else None
        return None, problems, draft
    return Loaded(entry_id, category, shown, record, source), [], None


@dataclass(frozen=True)
class LoadResult:
    """Everything under an entries folder, loaded file by file. `failed` holds the ids of entry
    files that did not load (unreadable, not YAML, or invalid): their problems say why, and the
    cross-entry checks must not report links to them as links to nothing."""

    categories: tuple[LoadedCategory, ...]
    entries: tuple[Loaded, ...]
    drafts: tuple[Draft, ...]
    failed: frozenset[str]
    tags: LoadedTags | None
    problems: tuple[Problem, ...]


EntryLoad = tuple[Loaded | None, list[Problem], Draft | None]


@dataclass
class LoadCache:
    """Entry files already loaded, by path: reused while the file's size and modification time
    and the set of categories are what they were. The preview server keeps one across
    rebuilds, so an edit re-reads one file instead of every file."""

    entries: dict[Path, tuple[tuple[int, int, frozenset[str]], EntryLoad]] = field(
        default_factory=dict
    )
    # The link stage's per-entry rule results, kept with the records.
    rule_problems: RuleMemo = field(default_factory=dict)

    def load(self, path: Path, base: Path, categories: set[str]) -> EntryLoad:
        stat = path.stat()
        key = (stat.st_mtime_ns, stat.st_size, frozenset(categories))
        cached = self.entries.get(path)
        if cached is not None and cached[0] == key:
            return cached[1]
        result = load_entry(path, base, categories)
        self.entries[path] = (key, result)
        return result


def load_all(entries_dir: Path, cache: LoadCache | None = None) -> LoadResult:
    """Load every category, entry and the tag vocabulary under `entries_dir`, collecting all
    problems. Invalid entry files are left out of the entries, their problems say why, and
    those that parsed come back as drafts for the checks that need only their raw data."""
    base = entries_dir.parent
    layout: Layout = scan(entries_dir)
    problems = list(layout.problems)
    categories: list[LoadedCategory] = []
    for path in layout.category_files:
        loaded_category, errors = load_category(path, base)
        problems += errors
        if loaded_category:
            categories.append(loaded_category)
    known = {path.parent.name for path in layout.category_files}
    entries: list[Loaded] = []
    drafts: list[Draft] = []
    failed: set[str] = set()
    for path in layout.entry_files:
        loaded, errors, draft = (
            cache.load(path, base, known) if cache else load_entry(path, base, known)
        )
        problems += errors
        if loaded:
            entries.append(loaded)
        else:
            failed.add(path.stem)
        if draft:
            drafts.append(draft)
    tags, errors = load_tags(layout.tags_file, base)
    return LoadResult(
        tuple(categories),
        tuple(entries),
        tuple(drafts),
        frozenset(failed) - {e.id for e in entries},
        tags,
        tuple(problems + errors),
    )
