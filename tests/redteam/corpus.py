"""The red-team corpus: payloads (payloads.json) placed into every text field of an entry
(base-entry.yaml), of a category file and of the tag vocabulary, one field at a time.

Each placement is either refused by `encyclopedia check` or accepted; what is accepted is later
built into one site and must render as literal text (test_redteam.py, test_redteam_browser.py).
`python -m tests.redteam.corpus` prints what the project does with each payload class.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from generator.diagnose import pieces
from generator.terminal.cli import main

HERE = Path(__file__).parent
ENTRY_FILE = "entries/memory/case.yaml"
CATEGORY_FILE = "entries/memory/_category.yaml"
TAGS_FILE = "entries/_tags.yaml"
# The file each kind of placement writes its payload into.
PLACED_IN = {"entry": ENTRY_FILE, "category": CATEGORY_FILE, "tags": TAGS_FILE}
# Fields of files other than the entry: (file, path inside it).
CATEGORY_FIELDS = (("title",), ("description",))
TAG_FIELDS = (("tags", "oom"),)


@dataclass(frozen=True)
class Payload:
    number: int
    kind: str
    text: str


@dataclass(frozen=True)
class Placement:
    """A payload written into one field of one file."""

    payload: Payload
    file: str  # "entry", "category" or "tags"
    path: tuple[str | int, ...]

    @property
    def field(self) -> str:
        dotted = ""
        for part in self.path:
            dotted += f"[{part}]" if isinstance(part, int) else (f".{part}" if dotted else part)
        return f"{self.file}:{dotted}"


@dataclass(frozen=True)
class Outcome:
    placement: Placement
    exit_code: int
    lines: tuple[str, ...]
    output: str
    crashed: str | None  # a traceback, if the command raised

    @property
    def accepted(self) -> bool:
        return self.exit_code == 0


@cache
def payloads() -> tuple[Payload, ...]:
    raw = json.loads((HERE / "payloads.json").read_text(encoding="utf-8"))
    return tuple(Payload(i, item["class"], item["text"]) for i, item in enumerate(raw))


def _text_of(path: str) -> str:
    return (HERE / path).read_text(encoding="utf-8")


def base_entry(entry_id: str) -> dict[str, Any]:
    """The base entry for `entry_id`: its signatures and aliases carry the id, so that many
    copies of it can share one site."""
    return dict(yaml.safe_load(_text_of("base-entry.yaml").replace("{id}", entry_id)))


def other_entry() -> dict[str, Any]:
    return dict(yaml.safe_load(_text_of("other-entry.yaml")))


def string_paths(data: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    """Every place in `data` that holds text: each is a field a payload goes into."""
    if isinstance(data, str):
        yield path
    elif isinstance(data, dict):
        for key, value in data.items():
            yield from string_paths(value, (*path, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from string_paths(value, (*path, i))


def put(data: Any, path: tuple[str | int, ...], value: str) -> Any:
    copied = copy.deepcopy(data)
    target = copied
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return copied


def placements() -> list[Placement]:
    entry_paths = list(string_paths(base_entry("case")))
    found = []
    for payload in payloads():
        found += [Placement(payload, "entry", p) for p in entry_paths]
        found += [Placement(payload, "category", p) for p in CATEGORY_FIELDS]
        found += [Placement(payload, "tags", p) for p in TAG_FIELDS]
    return found


def dump(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=1000)


def category(title: str = "Memory", description: str = "Memory failures.") -> dict[str, Any]:
    return {"title": title, "description": description}


def tags(about: dict[str, str]) -> dict[str, Any]:
    return {"tags": about}


def proven(entry: dict[str, Any]) -> dict[str, Any]:
    """The entry with one more example log, holding each primary signature as it now reads:
    `check` asks every primary signature for a log, and a payload put into a signature (or
    into the base example's log) would otherwise fail that rule instead of the one under test."""
    signatures = entry.get("signatures", [])
    texts = [s if isinstance(s, str) else s.get("text") for s in signatures]
    texts = [
        t
        for t, s in zip(texts, signatures, strict=True)
        if isinstance(s, str) or not s.get("context")
    ]
    if not texts or not all(isinstance(t, str) and t.strip() for t in texts):
        return entry
    copied = copy.deepcopy(entry)
    log = "\n".join(t.strip() for t in texts) + "\n"
    copied["examples"] = [
        *copied.get("examples", []),
        {"source": "https://github.com/pytorch/pytorch/issues/2", "log": log},
    ]
    return copied


def files_for(placement: Placement) -> dict[str, str]:
    """The entries folder for one placement: the case entry, the entry it relates to, the
    category and the tag vocabulary, with the payload in the placement's field."""
    text = placement.payload.text
    entry = base_entry("case")
    cat = category()
    vocabulary = tags({"oom": "Running out of memory."})
    if placement.file == "entry":
        entry = put(entry, placement.path, text)
    elif placement.file == "category":
        cat = put(cat, placement.path, text)
    else:
        vocabulary = put(vocabulary, placement.path, text)
    return {
        ENTRY_FILE: dump(proven(entry)),
        "entries/memory/other.yaml": dump(proven(other_entry())),
        CATEGORY_FILE: dump(cat),
        TAGS_FILE: dump(vocabulary),
    }


def write(files: dict[str, str], root: Path) -> Path:
    for rel, content in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(content, encoding="utf-8")
    return root / "entries"


def check(entries: Path) -> tuple[int, tuple[str, ...], str, str | None]:
    result = CliRunner().invoke(main, ["check", "--entries", str(entries)])
    crashed = None
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        import traceback

        assert result.exc_info is not None
        crashed = "".join(traceback.format_exception(*result.exc_info))
    return result.exit_code, tuple(result.stdout.splitlines()), result.output, crashed


def outcome(placement: Placement, root: Path) -> Outcome:
    entries = write(files_for(placement), root)
    code, lines, output, crashed = check(entries)
    return Outcome(placement, code, lines, output, crashed)


def report(outcomes: list[Outcome]) -> str:
    """One line per payload class: how many fields refused it and how many render it."""
    by_payload: dict[int, list[Outcome]] = {}
    for item in outcomes:
        by_payload.setdefault(item.placement.payload.number, []).append(item)
    rows = ["| # | payload class | refused in | rendered as text in |", "| --- | --- | --- | --- |"]
    for number, items in sorted(by_payload.items()):
        refused = [o.placement.field for o in items if not o.accepted]
        shown = [o.placement.field for o in items if o.accepted]
        rows.append(
            f"| {number} | {items[0].placement.payload.kind} | {len(refused)} fields | "
            f"{len(shown)} fields |"
        )
    return "\n".join(rows)


if __name__ == "__main__":
    import tempfile

    results = []
    for placement in placements():
        with tempfile.TemporaryDirectory() as tmp:
            results.append(outcome(placement, Path(tmp)))
    print(report(results))


def combined_files(outcomes: list[Outcome]) -> dict[str, str]:
    """One site holding every accepted placement: per payload, an entry `p-N` in its own
    category `cat-N` with tag `tag-N`, the payload in every field that accepted it."""
    accepted: dict[int, list[Placement]] = {}
    for item in outcomes:
        if item.accepted:
            accepted.setdefault(item.placement.payload.number, []).append(item.placement)
    files = {
        "entries/memory/other.yaml": dump(proven(other_entry())),
        CATEGORY_FILE: dump(category()),
    }
    about = {"oom": "Running out of memory."}
    claimed: set[str] = set()  # two payloads that differ only in spacing are one signature
    for number, places in sorted(accepted.items()):
        entry_id, text = f"p-{number}", places[0].payload.text
        entry = base_entry(entry_id)
        entry["tags"] = ["oom", f"tag-{number}"]
        cat = category(f"Category {number}", f"Category of payload {number}.")
        about[f"tag-{number}"] = f"Tag of payload {number}."
        signature = " ".join(pieces(text))
        if any(place.path[0] == "signatures" for place in places):
            if signature in claimed:
                places = [place for place in places if place.path[0] != "signatures"]
            claimed.add(signature)
        for place in places:
            if place.file == "entry":
                entry = put(entry, place.path, text)
            elif place.file == "category":
                cat = put(cat, place.path, text)
            else:
                about[f"tag-{number}"] = text
        files[f"entries/cat-{number}/{entry_id}.yaml"] = dump(proven(entry))
        files[f"entries/cat-{number}/_category.yaml"] = dump(cat)
    files[TAGS_FILE] = dump(tags(about))
    return files
