"""Content rules a reviewer would otherwise have to catch, on top of the schema: placeholder text,
references that are search results or carry tracking parameters, signatures too generic to
identify anything, and one signature claimed by two unrelated entries."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from .diagnose import pieces
from .load import Loaded
from .problems import Problem
from .text import PLACEHOLDERS, plain_parts

MIN_PRIMARY_LITERAL = 10
MIN_ANCHOR = 4
# Text every traceback or log holds: it identifies nothing on its own.
GENERIC_SIGNATURES = {
    "traceback (most recent call last):",
    "traceback (most recent call last)",
    "runtimeerror",
    "runtimeerror:",
    "error",
    "error:",
    "exception",
    "warning",
    "failed",
    "killed",
    "cuda error",
    "cuda error:",
    "runtimeerror: cuda error:",
    "assertionerror",
    "valueerror",
    "typeerror",
    "keyerror",
    "segmentation fault",
    "core dumped",
}
# Fields not checked for placeholder words: code (a `# TODO` comment can be real) and URLs
# (checked on their own in `references`).
SEARCH_HOSTS = re.compile(r"(^|\.)(google|bing|duckduckgo|yahoo|baidu|yandex)\.[a-z.]+$")
# Regular-expression syntax in a signature: the contributor expected a regex, but signatures are
# literal text with `*` wildcards (which is what keeps matching linear).
REGEX_SYNTAX = re.compile(r"\\[dswbDSW]|\[\^?[0-9a-zA-Z]-[0-9a-zA-Z]\]|\(\?[:=!<]|\{\d+,\d*\}")
TRACKING = re.compile(r"^(utm_[a-z]+|fbclid|gclid|mc_cid|mc_eid|igshid|ref_src|si)$")


def _strings(
    data: Any, path: tuple[str | int, ...] = ()
) -> Iterator[tuple[tuple[str | int, ...], str]]:
    if isinstance(data, str):
        yield path, data
    elif isinstance(data, dict):
        for key, value in data.items():
            skip = key in ("url", "source") or (key == "code" and isinstance(value, str))
            if not skip:
                yield from _strings(value, (*path, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _strings(value, (*path, i))


def _at(loaded: Loaded, path: tuple[str | int, ...], message: str, fix: str) -> Problem:
    line, col = loaded.source.position(path)
    return Problem(loaded.path, line, col, message, fix)


def placeholders(loaded: Loaded) -> list[Problem]:
    problems = []
    for path, text in _strings(loaded.source.data):
        found = PLACEHOLDERS.search(plain_parts(text))
        if found:
            problems.append(
                _at(
                    loaded,
                    path,
                    f"placeholder text `{found.group().strip()}` left in",
                    "write the real content, or remove the field if it is optional",
                )
            )
    return problems


def url_problem(url: str) -> str | None:
    """Why a reference URL is not acceptable, or None."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if (
        SEARCH_HOSTS.search(host)
        or parts.path.rstrip("/").endswith("/search")
        or (host == "github.com" and parts.path.startswith("/search"))
    ):
        return "points at search results"
    tracking = [key for key, _ in parse_qsl(parts.query) if TRACKING.match(key.lower())]
    if tracking:
        return f"carries tracking parameters ({', '.join(tracking)})"
    return None


def references(loaded: Loaded) -> list[Problem]:
    problems = []
    for field, key in (("references", "url"), ("examples", "source")):
        for i, item in enumerate(getattr(loaded.entry, field)):
            url = getattr(item, key)
            why = "is a placeholder" if PLACEHOLDERS.search(url) else url_problem(url)
            if why:
                problems.append(
                    _at(
                        loaded,
                        (field, i, key),
                        f"`{field}[{i}].{key}` {why}",
                        "link the real page: no placeholder, search results or tracking parameters",
                    )
                )
    return problems


def signatures(loaded: Loaded) -> list[Problem]:
    problems = []
    for i, sig in enumerate(loaded.entry.signatures):
        path = ("signatures", i)
        literal = "".join(pieces(sig.text)).replace(" ", "")
        regex = REGEX_SYNTAX.search(sig.text)
        if regex:
            problems.append(
                _at(
                    loaded,
                    path,
                    f"signature uses regular-expression syntax `{regex.group()}`",
                    "signatures are literal text: copy the message as printed and put `*` where "
                    "the variable part goes",
                )
            )
        elif "\n" in sig.text.strip():
            problems.append(
                _at(
                    loaded,
                    path,
                    "signature spans several lines",
                    "signatures match within one line: keep the most specific line",
                )
            )
        elif not sig.context and " ".join(pieces(sig.text)).strip(" :") in {
            g.strip(" :") for g in GENERIC_SIGNATURES
        }:
            problems.append(
                _at(
                    loaded,
                    path,
                    f"signature `{sig.text}` is too generic",
                    "use the specific error message, or mark it `context: true`",
                )
            )
        elif not sig.context and len(literal) < MIN_PRIMARY_LITERAL:
            problems.append(
                _at(
                    loaded,
                    path,
                    f"signature `{sig.text}` has fewer than "
                    f"{MIN_PRIMARY_LITERAL} literal characters",
                    "a primary signature must identify the failure alone: use more of "
                    "the message, or mark it `context: true`",
                )
            )
        elif max((len(t) for p in pieces(sig.text) for t in p.split(" ")), default=0) < MIN_ANCHOR:
            problems.append(
                _at(
                    loaded,
                    path,
                    f"signature `{sig.text}` has no word of {MIN_ANCHOR} or more characters",
                    "include a distinctive word: short fragments slow every diagnosis",
                )
            )
    return problems


def shared_signatures(entries: list[Loaded]) -> list[Problem]:
    """The same primary signature on two entries that do not relate to each other: readers and
    the matcher cannot tell the two apart, and neither page says how."""
    owners: dict[str, list[tuple[Loaded, int]]] = {}
    for loaded in entries:
        for i, sig in enumerate(loaded.entry.signatures):
            if not sig.context:
                owners.setdefault(" ".join(pieces(sig.text)), []).append((loaded, i))
    related = {(a.id, r.id) for a in entries for r in a.entry.related}
    problems = []
    for claimed in owners.values():
        for n, (loaded, i) in enumerate(claimed):
            for other, _ in claimed[:n]:
                if (loaded.id, other.id) not in related and (other.id, loaded.id) not in related:
                    problems.append(
                        _at(
                            loaded,
                            ("signatures", i),
                            f"signature also claimed by {other.path}, which is not "
                            "related to this entry",
                            f"add a `related` link (e.g. `confused-with`) to "
                            f"`{other.id}` and say how to tell the two apart",
                        )
                    )
    return problems


def check(entries: list[Loaded]) -> list[Problem]:
    problems = []
    for loaded in entries:
        problems += placeholders(loaded) + references(loaded) + signatures(loaded)
    return problems + shared_signatures(entries)
