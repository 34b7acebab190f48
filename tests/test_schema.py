"""The exported JSON Schema (what editors validate against) agrees with the build's validation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft202012Validator

from generator.read.schema import schema_text
from tests.support import ROOT

SCHEMA = json.loads((ROOT / "schema" / "entry.schema.json").read_text())
VALIDATOR = Draft202012Validator(SCHEMA)
ENTRY_FILES = sorted(
    p
    for p in [
        *(ROOT / "entries").glob("*/*.yaml"),
        *(ROOT / "tests" / "fixtures" / "site" / "entries").glob("*/*.yaml"),
    ]
    if p.name != "_category.yaml"
)


def test_committed_schema_is_up_to_date() -> None:
    """Regenerate with: python -c 'from generator.read.schema import schema_text; ...'"""
    assert (ROOT / "schema" / "entry.schema.json").read_text() == schema_text()


def test_schema_is_valid_json_schema() -> None:
    Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("path", ENTRY_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_entry_validates_against_the_schema(path: Path) -> None:
    errors = [e.message for e in VALIDATOR.iter_errors(yaml.safe_load(path.read_text()))]
    assert errors == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"severity": "huge"}, "'huge' is not one of"),
        ({"colour": "red"}, "Additional properties are not allowed"),
        ({"signatures": [{"text": "x", "regex": ".*"}]}, "is not valid under any of the given"),
        ({"stage": []}, "should be non-empty"),
    ],
)
def test_schema_rejects_what_the_build_rejects(change: dict[str, object], expected: str) -> None:
    base = yaml.safe_load((ROOT / "tests" / "bad_entries" / "_valid.yaml").read_text())
    assert list(VALIDATOR.iter_errors(base)) == []
    messages = " ".join(e.message for e in VALIDATOR.iter_errors({**base, **change}))
    assert expected in messages
