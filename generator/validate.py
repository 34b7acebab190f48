"""Validate one file's data against the entry format, turning every schema error into a Problem
that says where it is, what is wrong and how to fix it."""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from .model import Category, Entry, TagVocabulary
from .problems import Problem
from .yamlsource import Path, Source

_KINDS = {
    "string_type": "text",
    "int_type": "a whole number",
    "bool_type": "true or false",
    "list_type": "a list",
    "tuple_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
}


def closest(word: str, choices: typing.Iterable[str]) -> str | None:
    """The choice `word` is most likely a misspelling of, if any is close enough."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return close[0] if close else None


def did_you_mean(word: str, choices: typing.Iterable[str]) -> str:
    """`did you mean `x`? ` for the closest choice, or an empty string."""
    close = closest(word, choices)
    return f"did you mean `{close}`? " if close else ""


def _yaml_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if value is None:
        return "nothing (null)"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _model_at(root: type[BaseModel], loc: Path) -> type[BaseModel] | None:
    """The record class that holds the field at `loc` (for listing its allowed keys)."""
    model: type[BaseModel] | None = root
    for part in loc:
        if model is None or isinstance(part, int):
            continue
        field = model.model_fields.get(part)
        model = _find_model(field.annotation) if field else None
    return model


def _find_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _find_model(arg)
        if found:
            return found
    return None


def _literal_choices(root: type[BaseModel], loc: Path) -> list[str]:
    names = [i for i, part in enumerate(loc) if isinstance(part, str)]
    if not names:
        return []
    last = names[-1]
    model = _model_at(root, loc[:last])
    field = model.model_fields.get(str(loc[last])) if model else None
    return _literals(field.annotation) if field else []


def _literals(annotation: Any) -> list[str]:
    if typing.get_origin(annotation) is Literal:
        return [str(a) for a in typing.get_args(annotation)]
    found: list[str] = []
    for arg in typing.get_args(annotation):
        if not isinstance(arg, types.NoneType):
            found += _literals(arg)
    return found


def _dotted(loc: Path) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text or "entry"


def _problem(source: Source, root: type[BaseModel], error: Any) -> Problem:
    loc: Path = tuple(p for p in error["loc"] if p != "function-after")
    kind = error["type"]
    name = _dotted(loc)
    value = error.get("input")
    ctx = error.get("ctx") or {}
    if kind == "missing":
        line, col = source.position(loc[:-1])
        field = loc[-1]
        return Problem(
            source.path,
            line,
            col,
            f"missing required field `{name}`",
            f"add `{field}:` here (see docs/entry-format.md)",
        )
    if kind == "extra_forbidden":
        line, col = source.position(loc, key=True)
        model = _model_at(root, loc[:-1])
        allowed = sorted(model.model_fields) if model else []
        return Problem(
            source.path,
            line,
            col,
            f"unknown key `{name}`",
            f"{did_you_mean(str(loc[-1]), allowed)}allowed keys here: {', '.join(allowed)}",
        )
    line, col = source.position(loc)
    if kind == "entry":
        return Problem(source.path, line, col, f"`{name}`: {ctx['message']}", ctx["fix"])
    if kind == "literal_error":
        choices = _literal_choices(root, loc)
        return Problem(
            source.path,
            line,
            col,
            f"`{value}` is not a valid value for `{name}`",
            f"{did_you_mean(str(value), choices)}use one of: {', '.join(choices)}",
        )
    if kind == "string_pattern_mismatch":
        return Problem(
            source.path,
            line,
            col,
            f"`{value}` in `{name}` is not a slug",
            "use lower-case ASCII letters, digits and single hyphens, e.g. `nccl-timeout`",
        )
    if kind == "too_short":
        return Problem(
            source.path,
            line,
            col,
            f"`{name}` is empty",
            f"add at least {ctx.get('min_length', 1)} item(s)",
        )
    if kind in ("string_too_long", "too_long"):
        return Problem(
            source.path,
            line,
            col,
            f"`{name}` is longer than {ctx['max_length']} characters",
            "shorten it: put details in a prose field",
        )
    if kind == "less_than_equal":
        return Problem(
            source.path,
            line,
            col,
            f"`{name}` is {value}, above the maximum of {ctx['le']}",
            f"use a number from the allowed range, at most {ctx['le']}",
        )
    if kind == "greater_than_equal":
        return Problem(
            source.path,
            line,
            col,
            f"`{name}` is {value}, below the minimum of {ctx['ge']}",
            f"use a number from the allowed range, at least {ctx['ge']}",
        )
    if kind in _KINDS:
        return Problem(
            source.path,
            line,
            col,
            f"`{name}` should be {_KINDS[kind]}, not {_yaml_kind(value)}",
            f"write {_KINDS[kind]} here (quote text such as `yes`, `no` or numbers)",
        )
    return Problem(
        source.path,
        line,
        col,
        f"`{name}`: {error['msg']}",
        "see docs/entry-format.md for this field",
    )


def _nested_failed(errors: list[Any], error: Any) -> bool:
    """A list's "too short" error is noise when one of its items failed: pydantic counts only
    the items that validated."""
    loc = tuple(error["loc"])
    return any(
        len(other["loc"]) > len(loc) and tuple(other["loc"][: len(loc)]) == loc for other in errors
    )


def validate_record(
    source: Source, model: type[Entry] | type[Category] | type[TagVocabulary]
) -> tuple[Any, list[Problem]]:
    """Validate the data of `source` as `model`; returns (record or None, problems)."""
    if not isinstance(source.data, dict):
        return None, [
            Problem(
                source.path,
                1,
                1,
                f"file holds {_yaml_kind(source.data)}, not a mapping of fields",
                "start the file with `tags:`"
                if model is TagVocabulary
                else "start the file with `title: ...`",
            )
        ]
    try:
        return model.model_validate(source.data), []
    except ValidationError as err:
        errors = err.errors()
        return None, [
            _problem(source, model, e)
            for e in errors
            if not (e["type"] == "too_short" and _nested_failed(errors, e))
        ]
