"""Contributor text: the one markup it has (backtick code spans) and the checks on it.

Prose is plain text with inline code spans. Everything else a contributor writes is data and is
escaped wherever it lands (see render/escape.py); these helpers define how prose is split so that
validation and rendering agree on what is code and what is text.
"""

from __future__ import annotations

import re
import unicodedata

_BACKTICKS = re.compile(r"`+")
# A tag as browsers read it: after the name, attributes may start after whitespace or `/`
# (`<img/src=x/onerror=...>`, `<svg/onload=...>`).
_HTML = re.compile(r"<\s*/?\s*[A-Za-z][A-Za-z0-9-]*([\s/][^<>]*)?>|<!--|<\?|<!\[CDATA\[")
_JS_URL = re.compile(r"\b(javascript|vbscript)\s*:|\bdata:[a-z]+/[a-z0-9.+-]+[;,]", re.IGNORECASE)
PLACEHOLDERS = re.compile(r"\b(TODO|TBD|FIXME|XXX|lorem ipsum)\b|^\s*\.\.\.\s*$", re.IGNORECASE)


def split_code(text: str) -> list[tuple[bool, str]]:
    """Split prose into (is_code, text) parts; a code span opens and closes with backtick runs of
    the same length, as in CommonMark. An unmatched run of backticks stays literal text."""
    if "`" not in text:  # most prose: no code span to look for
        return [(False, text)] if text else []
    parts: list[tuple[bool, str]] = []
    pos = 0
    plain_from = 0
    while True:
        opening = _BACKTICKS.search(text, pos)
        if opening is None:
            break
        run = opening.group()
        closing = opening.end()
        while True:
            match = _BACKTICKS.search(text, closing)
            if match is None or match.group() == run:
                break
            closing = match.end()
        if match is None:
            pos = opening.end()
            continue
        if opening.start() > plain_from:
            parts.append((False, text[plain_from : opening.start()]))
        code = text[opening.end() : match.start()]
        if code.startswith(" ") and code.endswith(" ") and code.strip():
            code = code[1:-1]
        parts.append((True, code))
        plain_from = pos = match.end()
    if plain_from < len(text):
        parts.append((False, text[plain_from:]))
    return parts


def plain_parts(text: str) -> str:
    """The text outside code spans, joined; what HTML and link checks look at."""
    return " ".join(part for is_code, part in split_code(text) if not is_code)


def prose_problem(text: str) -> tuple[str, str] | None:
    """Why `text` is not acceptable prose, as (what is wrong, how to fix it), or None."""
    if not text.strip():
        return ("text is empty", "write the text, or remove the field if it is optional")
    plain = plain_parts(text)
    html = _HTML.search(plain)
    if html:
        return (
            f"raw HTML `{html.group()}` in text",
            "markup is not rendered: put code and identifiers like `<module>` in backticks, "
            "or remove the tag",
        )
    if _JS_URL.search(plain):
        return ("script URL scheme in text", "remove the `javascript:`/`data:` URL")
    return None


def paragraphs(text: str) -> list[str]:
    """Blank-line separated paragraphs, each with its lines joined by spaces."""
    blocks = re.split(r"\n\s*\n", text.strip())
    return [
        " ".join(line.strip() for line in block.splitlines()) for block in blocks if block.strip()
    ]


def one_line(text: str) -> str:
    """Text flattened onto one line (for table cells, headings and list items)."""
    return " ".join(text.split())


def shorten(text: str, limit: int) -> str:
    """Text on one line, cut at the last word boundary that keeps it within `limit` characters
    (an ellipsis marks the cut)."""
    flat = one_line(text)
    if len(flat) <= limit:
        return flat
    return flat[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"


def first_sentence(text: str) -> str:
    """The text up to its first full stop outside code spans (for short listings)."""
    return split_first_sentence(text)[0]


def after_first_sentence(text: str) -> str:
    """The text after its first sentence, on one line ("" when it is one sentence): what a
    section adds to the sentence the quick answer already shows."""
    return split_first_sentence(text)[1]


def split_first_sentence(text: str) -> tuple[str, str]:
    """The text on one line, cut after its first full stop outside code spans."""
    flat = one_line(text)
    out = []
    parts = split_code(flat)
    for i, (is_code, part) in enumerate(parts):
        if is_code:
            out.append(_code_span(part))
            continue
        stop = re.search(r"[.!?](\s|$)", part)
        if stop:
            out.append(part[: stop.start() + 1])
            rest = [part[stop.end() :]]
            rest += [_code_span(p) if c else p for c, p in parts[i + 1 :]]
            return "".join(out), "".join(rest).strip()
        out.append(part)
    return "".join(out), ""


def _code_span(code: str) -> str:
    return "`" + code + "`" if "`" not in code else "`` " + code + " ``"


# Characters no entry needs and that change what a reader or a terminal sees: C0/C1 controls
# (ESC starts terminal escape sequences, BEL, backspace), format characters (bidi overrides and
# isolates, zero-width spaces and joiners, the BOM, soft hyphens), line and paragraph separators
# and private-use characters. Tabs and newlines are text.
_REFUSED_CATEGORIES = {"Cc", "Cf", "Zl", "Zp", "Co", "Cs"}
_CONTROL_NAMES = {
    0x07: "BELL",
    0x08: "BACKSPACE",
    0x0B: "LINE TABULATION",
    0x0C: "FORM FEED",
    0x1B: "ESCAPE",
    0x7F: "DELETE",
    0x85: "NEXT LINE",
}


def normalize_newlines(text: str) -> str:
    """CRLF and lone CR become LF: text has one kind of line break from here on."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _refused(char: str) -> bool:
    return char not in "\n\t" and unicodedata.category(char) in _REFUSED_CATEGORIES


# The refused characters among ASCII: the C0 controls but tab and newline, and DEL.
_ASCII_REFUSED = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def refused_character(text: str) -> int | None:
    """The index of the first character entries may not hold (see above), or None."""
    if text.isascii():  # most text: one regular-expression scan instead of a lookup per char
        found = _ASCII_REFUSED.search(text)
        return found.start() if found else None
    return next((index for index, char in enumerate(text) if _refused(char)), None)


def describe_character(char: str) -> str:
    """`U+202E RIGHT-TO-LEFT OVERRIDE`: how a problem names an invisible character."""
    name = unicodedata.name(char, "") or _CONTROL_NAMES.get(ord(char), "control character")
    return f"U+{ord(char):04X} {name}"


def visible(text: str, *, lines: bool = False) -> str:
    """`text` with every refused character shown as an escape (`\\x1b`, `\\u202e`), harmless in
    a terminal. Line breaks are shown as `\\n` too (one line, for messages that quote contributor
    text) unless `lines` is true."""
    out = []
    for char in text:
        if char == "\n" and lines:
            out.append(char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\r":
            out.append("\\r")
        elif _refused(char):
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(char)
    return "".join(out)
