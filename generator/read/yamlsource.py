"""Read one YAML file into plain data plus the line and column of every value.

The YAML is composed into nodes (C parser when available) and turned into data here, not by
PyYAML's constructor, so that: every key and value keeps its position for error messages,
duplicate keys are caught, anchors and aliases are refused before anything is expanded (the
"billion laughs" bomb costs nothing), and no tag can construct a Python object.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from .problems import Problem
from .text import describe_character, normalize_newlines, refused_character

try:  # the C parser is several times faster; fall back when libyaml is missing
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - depends on how PyYAML was built
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]

MAX_BYTES = 512 * 1024
MAX_DEPTH = 12
_TAG = "tag:yaml.org,2002:"
_SCALAR_TAGS = {_TAG + t for t in ("str", "int", "float", "bool", "null", "timestamp")}
_CONSTRUCTOR = yaml.constructor.SafeConstructor()

Path = tuple[str | int, ...]
REFUSED_CHARACTER_FIX = (
    "delete it: entries hold printable text only (strip colour codes from pasted logs, "
    "retype text copied with hidden characters)"
)


@dataclass
class Source:
    """A file's data with positions: `marks[path]` is where the value at `path` starts and
    `key_marks[path]` where its key is written (for mapping members)."""

    path: str
    data: Any = None
    marks: dict[Path, tuple[int, int]] = field(default_factory=dict)
    key_marks: dict[Path, tuple[int, int]] = field(default_factory=dict)

    def position(self, path: Path, *, key: bool = False) -> tuple[int, int]:
        """The closest known position of `path` (falling back to its parents)."""
        for end in range(len(path), -1, -1):
            prefix = path[:end]
            if key and prefix in self.key_marks:
                return self.key_marks[prefix]
            if prefix in self.marks:
                return self.marks[prefix]
        return (1, 1)


class _Refused(Exception):
    def __init__(self, problem: Problem) -> None:
        self.problem = problem


def _at(path: str, mark: Any, message: str, fix: str) -> Problem:
    return Problem(path, mark.line + 1, mark.column + 1, message, fix)


def _decode(path: str, raw: bytes) -> str:
    if len(raw) > MAX_BYTES:
        raise _Refused(
            Problem(
                path,
                1,
                1,
                f"file is {len(raw):,} bytes, over the limit of {MAX_BYTES:,}",
                "an entry is a page of text: shorten it or split it into several entries",
            )
        )
    if raw.startswith(b"\xef\xbb\xbf"):
        raise _Refused(
            Problem(
                path,
                1,
                1,
                "file starts with a UTF-8 byte-order mark",
                "save the file as UTF-8 without BOM",
            )
        )
    if b"\x00" in raw:
        line = raw[: raw.index(b"\x00")].count(b"\n") + 1
        raise _Refused(
            Problem(
                path,
                line,
                1,
                "file holds binary data (a NUL byte)",
                "entries are UTF-8 text: replace the file with the YAML entry",
            )
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        before = raw[: err.start]
        line = before.count(b"\n") + 1
        col = err.start - (before.rfind(b"\n") + 1) + 1
        raise _Refused(
            Problem(
                path,
                line,
                col,
                f"byte 0x{raw[err.start]:02x} is not valid UTF-8",
                "re-save the file with UTF-8 encoding",
            )
        ) from None
    return text


def _syntax_problem(path: str, text: str, err: yaml.MarkedYAMLError) -> Problem:
    mark = err.problem_mark or err.context_mark
    what = (err.problem or err.context or "invalid YAML").strip()
    if mark is None:
        return Problem(path, 1, 1, f"invalid YAML: {what}", "fix the YAML syntax")
    if "nesting depth" in what:
        return _at(
            path, mark, "YAML is nested too deeply", f"entries nest at most {MAX_DEPTH} levels"
        )
    lines = text.splitlines()
    at = lines[mark.line][mark.column : mark.column + 1] if mark.line < len(lines) else ""
    if at == "\t" or "'\\t'" in what:
        return _at(
            path,
            mark,
            "tab character where YAML expects indentation",
            "YAML indents with spaces: replace the tab with spaces",
        )
    indicator = _needed_indent_indicator(lines, mark.line)
    if indicator:
        header, fixed = indicator
        return Problem(
            path,
            header + 1,
            len(lines[header]) - len(lines[header].lstrip()) + 1,
            "block text starts with a line indented deeper than the lines after it, "
            "so YAML ends the block there",
            f"state the block's indentation in its header: `{fixed}`",
        )
    misaligned = _misaligned_key(lines, mark.line)
    if misaligned:
        key, indent, expected = misaligned
        return Problem(
            path,
            mark.line + 1,
            indent + 1,
            f"`{key}` is indented {indent} spaces, where the keys above it are indented "
            f"{' or '.join(str(c) for c in expected)}",
            "YAML nests by indentation: align it with the key it belongs beside",
        )
    return _at(
        path,
        mark,
        f"invalid YAML: {what}",
        "fix the YAML syntax at this point (quote text that holds `: ` "
        "or starts with a special character)",
    )


_KEY_LINE = re.compile(r"^( *)(- )?([A-Za-z_][\w-]*):(\s|$)")


def _misaligned_key(lines: list[str], error_line: int) -> tuple[str, int, list[int]] | None:
    """A `key:` line on which YAML failed, indented to a column where no key above it starts
    (neither a sibling nor an outer level): the key, its indent and the columns keys use."""
    if error_line >= len(lines):
        return None
    found = _KEY_LINE.match(lines[error_line])
    if not found or found.group(2):
        return None
    indent = len(found.group(1))
    columns: set[int] = set()
    for line in lines[:error_line]:
        above = _KEY_LINE.match(line)
        if above:
            columns.add(len(above.group(1)) + (2 if above.group(2) else 0))
    if not columns or indent in columns:
        return None
    return found.group(3), indent, sorted(c for c in columns if c <= indent + 4)[-2:] or [0]


_BLOCK_HEADER = re.compile(r"^(\s*(?:- )?)([^\s#][^#]*?:\s*)([|>])([+-]?)\s*(#.*)?$")


def _needed_indent_indicator(lines: list[str], error_line: int) -> tuple[int, str] | None:
    """A pasted log whose first line is indented (a traceback's `    loss.backward()`) makes
    YAML take that indentation for the whole `|` block, and the next, shallower line breaks
    the file. Returns the header's line and the header with the indicator that fixes it."""
    for header in range(min(error_line, len(lines) - 1), -1, -1):
        match = _BLOCK_HEADER.match(lines[header])
        if match:
            break
    else:
        return None
    key_indent = len(lines[header]) - len(lines[header].lstrip())
    if match.group(1).endswith("- "):
        key_indent = len(match.group(1))
    body = []  # indents of the block's lines: up to the error, then on to the block's end
    for number, line in enumerate(lines[header + 1 :], header + 1):
        if line.strip():
            indent = len(line) - len(line.lstrip(" "))
            if indent <= key_indent:
                if number <= error_line:
                    return None
                break
            body.append(indent)
    if len(body) < 2 or min(body) >= body[0]:
        return None
    indicator = min(body) - key_indent
    if not 1 <= indicator <= 9:
        return None
    head = match.group(1) + match.group(2) + match.group(3) + str(indicator) + match.group(4)
    return header, head.strip()


def _compose(path: str, text: str) -> yaml.Node | None:
    try:
        nodes = list(yaml.compose_all(text, Loader=_Loader))
    except yaml.MarkedYAMLError as err:
        raise _Refused(_syntax_problem(path, text, err)) from None
    except yaml.reader.ReaderError as err:
        # a control character written literally: YAML itself refuses it. libyaml counts the
        # position in UTF-8 bytes, the pure-Python reader in characters.
        at = err.position
        if text[at : at + 1] != chr(err.character):
            at = len(text.encode("utf-8")[:at].decode("utf-8", "ignore"))
        raise _Refused(_refused_character(path, text, at, chr(err.character))) from None
    except yaml.YAMLError as err:
        raise _Refused(Problem(path, 1, 1, f"invalid YAML: {err}", "fix the YAML syntax")) from None
    except RecursionError:
        raise _Refused(
            Problem(
                path, 1, 1, "YAML is nested too deeply", f"entries nest at most {MAX_DEPTH} levels"
            )
        ) from None
    if len(nodes) > 1:
        raise _Refused(
            _at(
                path,
                nodes[1].start_mark,
                "file holds more than one YAML document",
                "keep one entry per file and remove the `---` separator",
            )
        )
    return nodes[0] if nodes else None


def _refused_character(path: str, text: str, offset: int, char: str) -> Problem:
    """The problem for `char`, placed at the line and column of `offset` in `text`."""
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return Problem(
        path,
        line,
        col,
        f"invisible or control character {describe_character(char)} in text",
        REFUSED_CHARACTER_FIX,
    )


class _Builder:
    """Turns a node tree into data, recording positions and refusing what entries must not use."""

    def __init__(self, source: Source, text: str) -> None:
        self.source = source
        self.text = text
        self.seen: set[int] = set()
        self.problems: list[Problem] = []

    def build(self, node: yaml.Node, path: Path) -> Any:
        if id(node) in self.seen:
            raise _Refused(
                _at(
                    self.source.path,
                    node.start_mark,
                    "YAML anchors and aliases are not allowed",
                    "write the value out in full where it is used",
                )
            )
        self.seen.add(id(node))
        if len(path) > MAX_DEPTH:
            raise _Refused(
                _at(
                    self.source.path,
                    node.start_mark,
                    "YAML is nested too deeply",
                    f"entries nest at most {MAX_DEPTH} levels",
                )
            )
        self.source.marks[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path)
        if isinstance(node, yaml.SequenceNode):
            self._check_tag(node, _TAG + "seq")
            return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
        return self._scalar(node)

    def _check_tag(self, node: yaml.Node, *allowed: str) -> None:
        if node.tag not in allowed:
            tag = "!!" + node.tag[len(_TAG) :] if node.tag.startswith(_TAG) else node.tag
            raise _Refused(
                _at(
                    self.source.path,
                    node.start_mark,
                    f"YAML tag `{tag}` is not allowed",
                    "remove the `!`-tag: entries hold plain text, lists and mappings",
                )
            )

    def _scalar(self, node: yaml.Node) -> Any:
        self._check_tag(node, *_SCALAR_TAGS)
        if node.tag in (_TAG + "str", _TAG + "timestamp"):
            # dates stay text: entries have no date fields
            return self._text(node)
        return _CONSTRUCTOR.construct_object(node)

    def _text(self, node: yaml.Node) -> str:
        """A string value with its line breaks normalised; a control, bidi or zero-width
        character in it is a problem, placed on the character when it is written literally
        (an escape such as `"\\e"` is placed on the value)."""
        value = normalize_newlines(node.value)
        index = refused_character(value)
        if index is not None:
            char, start = value[index], node.start_mark.index
            at = self.text.find(char, start, node.end_mark.index)  # -1 when written as an escape
            self.problems.append(
                _refused_character(self.source.path, self.text, at if at >= 0 else start, char)
            )
        return value

    def _mapping(self, node: yaml.MappingNode, path: Path) -> dict[str, Any]:
        self._check_tag(node, _TAG + "map")
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _TAG + "merge":
                raise _Refused(
                    _at(
                        self.source.path,
                        key_node.start_mark,
                        "YAML merge keys (`<<`) are not allowed",
                        "write the keys out in full",
                    )
                )
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag != _TAG + "str":
                raise _Refused(
                    _at(
                        self.source.path,
                        key_node.start_mark,
                        "mapping key is not plain text",
                        "use a field name such as `title:` as the key",
                    )
                )
            key = self._text(key_node)
            key_path = (*path, key)
            if key in result:
                first = self.source.key_marks[key_path]
                self.problems.append(
                    _at(
                        self.source.path,
                        key_node.start_mark,
                        f"duplicate key `{key}` (first at line {first[0]})",
                        "keep one of the two and delete the other",
                    )
                )
                continue
            self.source.key_marks[key_path] = (
                key_node.start_mark.line + 1,
                key_node.start_mark.column + 1,
            )
            result[key] = self.build(value_node, key_path)
        return result


def read_source(path: str, raw: bytes) -> tuple[Source, list[Problem]]:
    """Parse `raw` (the bytes of `path`); return the data with positions and any problems.

    When a problem makes the file unreadable, `data` is None and the problem explains why."""
    source = Source(path)
    try:
        text = _decode(path, raw)
        node = _compose(path, text)
        if node is None:
            return source, [
                Problem(
                    path,
                    1,
                    1,
                    "file is empty (or holds only comments)",
                    "fill in the entry; `encyclopedia new` writes a template",
                )
            ]
        builder = _Builder(source, text)
        source.data = builder.build(node, ())
    except _Refused as refused:
        source.data = None
        return source, [refused.problem]
    return source, builder.problems
