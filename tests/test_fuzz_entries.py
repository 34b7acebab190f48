"""Property test: random mutations of a valid entry only ever produce validation problems,
never an exception, and every problem points into the file."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from generator.read.link import link
from generator.read.load import Loaded
from generator.read.model import Entry
from generator.read.validate import validate_record
from generator.read.yamlsource import read_source

BASE = yaml.safe_load((Path(__file__).parent / "bad_entries" / "_valid.yaml").read_text())
PATH = "entries/memory/case.yaml"

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=40)
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)


def paths(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(data, dict):
        for key, value in data.items():
            found += paths(value, (*prefix, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            found += paths(value, (*prefix, i))
    return found


def mutate(data: Any, path: tuple[Any, ...], action: str, value: Any) -> Any:
    if not path:
        return value if action == "replace" else data
    head, rest = path[0], path[1:]
    copy = dict(data) if isinstance(data, dict) else list(data)
    if rest:
        copy[head] = mutate(copy[head], rest, action, value)
    elif action == "delete":
        del copy[head]
    elif action == "replace":
        copy[head] = value
    elif isinstance(copy, dict):
        copy[str(value)[:10] or "extra"] = value
    return copy


def check_text(raw: bytes) -> None:
    source, problems = read_source(PATH, raw)
    if source.data is not None:
        record, errors = validate_record(source, Entry)
        problems += errors
        if record is not None:
            _, link_problems = link([], [Loaded("case", "memory", PATH, record, source)])
            problems += link_problems
    # YAML also breaks lines at CR, NEL and the Unicode line and paragraph separators.
    text = raw.decode("utf-8", errors="replace")
    lines = len(re.split("\r\n|[\r\n\x85\u2028\u2029]", text))
    for problem in problems:
        assert problem.path == PATH
        assert 1 <= problem.line <= lines, problem
        assert problem.message and problem.fix


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_structural_mutations_never_crash(data: st.DataObject) -> None:
    entry = BASE
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(paths(entry)))
        action = data.draw(st.sampled_from(["delete", "replace", "add"]))
        entry = mutate(entry, path, action, data.draw(values))
    check_text(yaml.safe_dump(entry, allow_unicode=True).encode())


@settings(max_examples=300, deadline=None)
@given(position=st.integers(0, 2000), junk=st.binary(max_size=8), cut=st.integers(0, 8))
@example(position=554, junk=b"\r", cut=1)  # a CR for a LF: YAML counts it as a line break
def test_byte_mutations_never_crash(position: int, junk: bytes, cut: int) -> None:
    raw = (Path(__file__).parent / "bad_entries" / "_valid.yaml").read_bytes()
    position %= len(raw)
    check_text(raw[:position] + junk + raw[position + cut :])
