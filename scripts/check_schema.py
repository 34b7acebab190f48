"""Validate entry files against the committed JSON Schema, the one editors use.

Usage: python scripts/check_schema.py [ENTRY.yaml ...]   (default: every entry)
Exits 1 and prints `path: message` for each entry the schema rejects, or when the committed
schema is out of date with generator/read/model.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml
from jsonschema import Draft202012Validator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generator.read.schema import schema_text  # noqa: E402


def main(args: list[str]) -> int:
    schema_file = ROOT / "schema" / "entry.schema.json"
    if schema_file.read_text(encoding="utf-8") != schema_text():
        print(
            f"{schema_file}: out of date; regenerate it with "
            "`python -c 'from generator.read.schema import schema_text; "
            'open("schema/entry.schema.json", "w").write(schema_text())\'`'
        )
        return 1
    validator = Draft202012Validator(json.loads(schema_file.read_text(encoding="utf-8")))
    paths = [Path(a) for a in args if a.endswith(".yaml")] or sorted(
        p for p in (ROOT / "entries").glob("*/*.yaml") if p.name != "_category.yaml"
    )
    failed = 0
    for path in paths:
        if path.name == "_category.yaml" or path.suffix != ".yaml":
            continue
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        for error in validator.iter_errors(data):
            where = "/".join(str(p) for p in error.absolute_path) or "(top)"
            print(f"{path}: {where}: {error.message}")
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
