"""The entry format as JSON Schema, generated from the same records that validate entries."""

from __future__ import annotations

import json
from typing import Any

from .model import Entry

SCHEMA_ID = "https://json-schema.org/draft/2020-12/schema"


def entry_schema() -> dict[str, Any]:
    schema = Entry.model_json_schema(mode="validation")
    schema["$schema"] = SCHEMA_ID
    schema["title"] = "ML training failure encyclopedia entry"
    return schema


def schema_text() -> str:
    return json.dumps(entry_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
