"""Validate one file's data against the entry format, turning every schema error into a Problem
that says where it is, what is wrong and how to fix it."""

from __future__ import annotations

import difflib
import functools
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from .model import SLUG_PATTERN, Category, CommonFailures, Entry, TagVocabulary
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


@dataclass(frozen=True)
class _Error:
    """One pydantic error, with what its message and fix are written from."""

    root: type[BaseModel]
    loc: Path
    name: str  # the dotted field path, e.g. `fix.steps[0]`
    value: Any
    ctx: dict[str, Any]
    msg: str


def _unknown_key(e: _Error) -> tuple[str, str]:
    model = _model_at(e.root, e.loc[:-1])
    allowed = sorted(model.model_fields) if model else []
    hint = did_you_mean(str(e.loc[-1]), allowed)
    return f"unknown key `{e.name}`", f"{hint}allowed keys here: {', '.join(allowed)}"


def _bad_choice(e: _Error) -> tuple[str, str]:
    choices = _literal_choices(e.root, e.loc)
    return (
        f"`{e.value}` is not a valid value for `{e.name}`",
        f"{did_you_mean(str(e.value), choices)}use one of: {', '.join(choices)}",
    )


def _too_long(e: _Error) -> tuple[str, str]:
    limit = e.ctx["max_length"]
    return (
        f"`{e.name}` is longer than {limit} characters",
        "shorten it: put details in a prose field",
    )


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _wrong_kind(expected: str, e: _Error) -> tuple[str, str]:
    if expected == "text" and isinstance(e.value, dict) and len(e.value) == 1:
        # `- Run the check: it passes` is YAML for a one-key mapping: the colon did it.
        key, value = (_short(str(part)) for part in next(iter(e.value.items())))
        return (
            f"`{e.name}` should be text, but the `: ` after `{key}` makes YAML read it as a "
            f"mapping of `{key}` to `{value}`",
            'put the whole text in double quotes ("...: ..."), or write it as a `>-` block',
        )
    return (
        f"`{e.name}` should be {expected}, not {_yaml_kind(e.value)}",
        f"write {expected} here (quote text such as `yes`, `no` or numbers)",
    )


# Pydantic error type -> (message, fix). Positions: a missing field is reported at its parent
# mapping, an unknown key at the key itself, everything else at the value.
_MESSAGES: dict[str, Callable[[_Error], tuple[str, str]]] = {
    "missing": lambda e: (
        f"missing required field `{e.name}`",
        f"add `{e.loc[-1]}:` here (see docs/entry-format.md)",
    ),
    "extra_forbidden": _unknown_key,
    "entry": lambda e: (f"`{e.name}`: {e.ctx['message']}", e.ctx["fix"]),
    "literal_error": _bad_choice,
    "string_pattern_mismatch": lambda e: _pattern_mismatch(e),
    "too_short": lambda e: (
        f"`{e.name}` is empty",
        f"add at least {e.ctx.get('min_length', 1)} item(s)",
    ),
    "string_too_long": _too_long,
    "too_long": _too_long,
    "less_than_equal": lambda e: (
        f"`{e.name}` is {e.value}, above the maximum of {e.ctx['le']}",
        f"use a number from the allowed range, at most {e.ctx['le']}",
    ),
    "greater_than_equal": lambda e: (
        f"`{e.name}` is {e.value}, below the minimum of {e.ctx['ge']}",
        f"use a number from the allowed range, at least {e.ctx['ge']}",
    ),
    **{kind: functools.partial(_wrong_kind, expected) for kind, expected in _KINDS.items()},
}


# The form of each text field that has one besides slugs, by the field's name: what the value
# must look like, with an example.
_FORMS = {
    "exception": "a class name as a traceback's last line prints it, without its module, "
    "e.g. `OSError`",
    "frame": "the end of a file's path from a package folder on, e.g. `torch/serialization.py`",
    "function": "a function's name, e.g. `save`",
    "package": "a package's name as the package index spells it, e.g. `transformers`",
    "packages": "a package's name as the package index spells it, e.g. `transformers`",
    "version": "a release number, e.g. `4.57.6`",
    "file": "a path inside the release, e.g. `transformers/trainer.py`",
    "platform": "a wheel's platform tag, e.g. `macosx_11_0_arm64`",
    "language": "a code language in lower case, e.g. `python`",
}


def _pattern_mismatch(e: _Error) -> tuple[str, str]:
    names = [part for part in e.loc if isinstance(part, str)]
    form = _FORMS.get(names[-1]) if names and e.ctx.get("pattern") != SLUG_PATTERN else None
    if form is None:
        return (
            f"`{e.value}` in `{e.name}` is not a slug",
            "use lower-case ASCII letters, digits and single hyphens, e.g. `nccl-timeout`",
        )
    return f"`{e.value}` in `{e.name}` is not {form}", "see docs/entry-format.md for this field"


def _other(e: _Error) -> tuple[str, str]:
    return f"`{e.name}`: {e.msg}", "see docs/entry-format.md for this field"


def _problem(source: Source, root: type[BaseModel], error: Any) -> Problem:
    loc: Path = tuple(p for p in error["loc"] if p != "function-after")
    kind = error["type"]
    e = _Error(root, loc, _dotted(loc), error.get("input"), error.get("ctx") or {}, error["msg"])
    if kind == "missing":
        line, col = source.position(loc[:-1])
    elif kind == "extra_forbidden":
        line, col = source.position(loc, key=True)
    else:
        line, col = source.position(loc)
    describe = _MESSAGES.get(kind)
    message, fix = (
        describe(e)
        if describe
        else (f"`{e.name}`: {e.msg}", "see docs/entry-format.md for this field")
    )
    return Problem(source.path, line, col, message, fix)


def _nested_failed(errors: list[Any], error: Any) -> bool:
    """A list's "too short" error is noise when one of its items failed: pydantic counts only
    the items that validated."""
    loc = tuple(error["loc"])
    return any(
        len(other["loc"]) > len(loc) and tuple(other["loc"][: len(loc)]) == loc for other in errors
    )


_FIRST_LINE: dict[type, str] = {
    TagVocabulary: "start the file with `tags:`",
    CommonFailures: "start the file with `common:` and list entry ids under it",
}


def validate_record(
    source: Source,
    model: type[Entry] | type[Category] | type[TagVocabulary] | type[CommonFailures],
) -> tuple[Any, list[Problem]]:
    """Validate the data of `source` as `model`; returns (record or None, problems)."""
    if not isinstance(source.data, dict):
        return None, [
            Problem(
                source.path,
                1,
                1,
                f"file holds {_yaml_kind(source.data)}, not a mapping of fields",
                _FIRST_LINE.get(model, "start the file with `title: ...`"),
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
