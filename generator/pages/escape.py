"""Turn contributor text into page source that renders exactly as written.

One rule covers every field: letters, digits and spaces stay as they are; every ASCII character
that Markdown, one of the enabled extensions or a template language could read as syntax becomes a
numeric character reference, which Python-Markdown passes through untouched and the browser shows
as the character. Prose keeps its one markup, code spans, as <code> elements escaped the same way.

Verbatim text (logs, code, signatures) is written as a single line of raw HTML: its newlines are
character references too, so no preprocessor that works on lines (snippet inclusion, fences,
indented code, front matter) ever sees one of its lines, and nothing inside it can close the block.
Syntax highlighting is done here with Pygments, on the text, before escaping.

The Jinja environment applies `inline` to every value a template prints unless a filter already
produced `Md` (see render.py), so a template cannot forget to escape.
"""

from __future__ import annotations

import functools
import re

from pygments.lexer import Lexer
from pygments.lexers import TextLexer, get_lexer_by_name
from pygments.token import STANDARD_TYPES, _TokenType
from pygments.util import ClassNotFound

from ..read.text import one_line, paragraphs, split_code

# Everything Markdown, attr_list, md_in_html, pymdownx (snippets, emoji, mark, caret, tilde,
# critic, keys, arithmatex), Jinja or HTML could pick up. `.` is only special after a digit at the
# start of a line (ordered lists), which `_escape` handles.
_SPECIAL = set("\\`*_{}[]()#+-!|<>&~^=:$%@\"'")
_TABLE = str.maketrans({c: f"&#{ord(c)};" for c in _SPECIAL} | {"\n": "&#10;", "\t": "&#9;"})
_LANGUAGE = re.compile(r"[a-z0-9+#-]+")


class Md(str):
    """Markdown that is already safe to emit."""


_NUMBERED = re.compile(r"(\d)\.")


def _escape(text: str) -> str:
    escaped = text.translate(_TABLE)
    return _NUMBERED.sub(r"\1&#46;", escaped) if "." in escaped else escaped


def inline(text: str) -> Md:
    """Prose on one line: code spans as <code>, everything else literal."""
    out = []
    for is_code, part in split_code(one_line(text)):
        out.append(f"<code>{_escape(part)}</code>" if is_code else _escape(part))
    return Md("".join(out))


def block(text: str) -> Md:
    """Prose that may hold several paragraphs, separated by blank lines."""
    return Md("\n\n".join(inline(p) for p in paragraphs(text)))


def _lexer(language: str) -> Lexer:
    options = {"stripnl": False, "ensurenl": False}
    try:
        lexer: Lexer = get_lexer_by_name(language, **options)
    except ClassNotFound:
        lexer = TextLexer(**options)
    return lexer


def _css_class(token: _TokenType) -> str:
    """The short class pymdownx.highlight gives a token: that of its nearest standard type."""
    current: _TokenType | None = token
    while current is not None and current not in STANDARD_TYPES:
        current = current.parent
    return STANDARD_TYPES[current] if current is not None else ""


# Pure, and a preview renders the same blocks on every rebuild; bounded for large sites.
@functools.lru_cache(maxsize=10_000)
def code_block(code: str, language: str = "text") -> Md:
    """A highlighted code block as one line of raw HTML, the markup pymdownx.highlight writes
    (so the theme styles it and adds its copy button)."""
    lang = language if _LANGUAGE.fullmatch(language) else "text"
    parts = []
    for token, value in _lexer(lang).get_tokens(code.rstrip("\n")):
        css = _css_class(token)
        text = _escape(value)
        parts.append(f'<span class="{css}">{text}</span>' if css and text else text)
    return Md(
        f'<div class="language-{lang} highlight"><pre><span></span><code>'
        + "".join(parts)
        + "</code></pre></div>"
    )


def attr(value: str) -> Md:
    """A value inside a double-quoted HTML attribute: character references are decoded there,
    so the same escaping holds (URLs are validated as https before)."""
    return Md(_escape(value))
