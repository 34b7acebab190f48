"""Turn contributor text into Markdown that renders exactly as written.

Every ASCII punctuation character that Markdown or one of the enabled extensions could read as
syntax becomes a numeric character reference, which Python-Markdown passes through untouched and
the browser shows as the character. Code spans become <code> elements with the same escaping. The
Jinja environment applies `inline` to every value a template prints unless a filter already
produced `Md` (see render.py), so a template cannot forget to escape.
"""

from __future__ import annotations

import html
import re

from .text import one_line, paragraphs, split_code

# Everything Markdown, attr_list, pymdownx (emoji, mark, caret, tilde, critic, keys) or Jinja-like
# syntax could pick up. `.` is only special after a digit at the start of a line (ordered lists).
_SPECIAL = set("\\`*_{}[]()#+-!|<>&~^=:$%@\"'")
_TABLE = str.maketrans({c: f"&#{ord(c)};" for c in _SPECIAL})


class Md(str):
    """Markdown that is already safe to emit."""


def _escape(text: str) -> str:
    escaped = text.translate(_TABLE)
    return re.sub(r"(\d)\.", r"\1&#46;", escaped)


def inline(text: str) -> Md:
    """Prose on one line: code spans as <code>, everything else literal."""
    out = []
    for is_code, part in split_code(one_line(text)):
        out.append(f"<code>{_escape(part)}</code>" if is_code else _escape(part))
    return Md("".join(out))


def block(text: str) -> Md:
    """Prose that may hold several paragraphs, separated by blank lines."""
    return Md("\n\n".join(inline(p) for p in paragraphs(text)))


def code_block(code: str, language: str = "text", indent: int = 0) -> Md:
    """A fenced code block whose fence is longer than any backtick run inside it."""
    longest = max((len(m) for m in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    lang = language if re.fullmatch(r"[a-z0-9+#-]+", language) else "text"
    body = code.rstrip("\n").replace("\r\n", "\n")
    pad = " " * indent
    lines = [f"{fence}{lang}", *body.split("\n"), fence]
    return Md("\n".join(pad + line if line else line for line in lines))


def attr(value: str) -> Md:
    """A value inside a double-quoted attribute of an inline HTML tag. Python-Markdown keeps such
    a tag whole, so HTML escaping is all it needs (URLs are validated as https before)."""
    return Md(html.escape(value, quote=True))
