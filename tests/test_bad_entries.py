"""The bad-input corpus: one file per case under tests/bad_entries/, each with the exact problems
`encyclopedia check` must print. Every case must exit 1 with those messages, no traceback, and a
`mkdocs build` of it must report the same messages and write no site.

A case file holds `# expect: <problem>` lines, then one `=== <path>` section per file to create.
Run with UPDATE_CASES=1 to rewrite the expect lines from the current output, then review them."""

from __future__ import annotations

import logging
import os
import re
import traceback
from pathlib import Path

import pytest
from click.testing import CliRunner
from mkdocs.commands.build import build
from mkdocs.config import load_config
from mkdocs.exceptions import Abort

from generator.terminal.cli import main
from tests.support import ROOT

CASES = Path(__file__).parent / "bad_entries"
DEFAULT_FILES = {
    "entries/memory/_category.yaml": b"title: Memory\ndescription: Memory failures.\n",
    "entries/kernels/_category.yaml": b"title: Kernels\ndescription: Kernel failures.\n",
}


def parse(path: Path) -> tuple[list[str], dict[str, bytes]]:
    raw = path.read_bytes()
    first = raw.index(b"=== ")
    expects = [
        line[len("# expect: ") :]
        for line in raw[:first].decode().splitlines()
        if line.startswith("# expect: ")
    ]
    files = dict(DEFAULT_FILES)
    for match in re.finditer(rb"^=== (.+)\n", raw[first:], re.MULTILINE):
        start = first + match.end()
        following = re.search(rb"^=== ", raw[start:], re.MULTILINE)
        end = start + following.start() if following else len(raw)
        files[match.group(1).decode()] = raw[start:end]
    return expects, files


def materialise(files: dict[str, bytes], root: Path) -> Path:
    for rel, content in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(content)
    return root / "entries"


def check(entries: Path) -> tuple[int, list[str], str]:
    result = CliRunner().invoke(main, ["check", "--entries", str(entries)])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        assert result.exc_info is not None
        raise AssertionError("".join(traceback.format_exception(*result.exc_info)))
    return result.exit_code, result.stdout.splitlines(), result.output


@pytest.mark.parametrize("case", sorted(p.name for p in CASES.glob("*.case")))
def test_case(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expects, files = parse(CASES / case)
    monkeypatch.chdir(tmp_path)
    entries = materialise(files, tmp_path)
    code, lines, output = check(Path("entries"))
    if os.environ.get("UPDATE_CASES"):
        text = (CASES / case).read_bytes()
        body = text[text.index(b"=== ") :]
        header = "".join(f"# expect: {line}\n" for line in lines).encode()
        (CASES / case).write_bytes(header + body)
        expects = lines
    assert code == 1
    assert not re.search(r"Traceback \(most recent call last\):\n +File", output)
    assert lines == expects
    for line in lines:
        assert re.match(r"^entries/.+?:\d+:\d+: .+; .+", line), line
    assert entries.is_dir()


@pytest.mark.parametrize("case", sorted(p.stem for p in CASES.glob("*.case")))
def test_mkdocs_build_reports_the_same_and_writes_nothing(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    expects, files = parse(CASES / f"{case}.case")
    entries = materialise(files, tmp_path)
    monkeypatch.setenv("ENCYCLOPEDIA_ENTRIES", str(entries))
    site = tmp_path / "site"
    config = load_config(str(ROOT / "mkdocs.yml"), site_dir=str(site))
    with caplog.at_level(logging.ERROR), pytest.raises(Abort):
        build(config)
    reported = [r.getMessage() for r in caplog.records if r.name.endswith("generator.plugin")]
    shown = [re.sub(r"^.*?entries/", "entries/", line) for line in reported]
    assert shown == expects
    assert not site.exists()


def test_huge_file_is_refused_quickly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    files = dict(DEFAULT_FILES)
    files["entries/memory/case.yaml"] = b"title: " + b"x" * (50 * 1024 * 1024) + b"\n"
    materialise(files, tmp_path)
    code, lines, _ = check(Path("entries"))
    assert code == 1
    assert lines == [
        "entries/memory/case.yaml:1:1: file is 52,428,808 bytes, over the limit of "
        "524,288; an entry is a page of text: shorten it or split it into several "
        "entries"
    ]


def test_valid_base_is_valid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cases start from _valid.yaml: it must pass, or every case would prove nothing."""
    monkeypatch.chdir(tmp_path)
    files = dict(DEFAULT_FILES)
    files["entries/memory/case.yaml"] = (CASES / "_valid.yaml").read_bytes()
    materialise(files, tmp_path)
    code, lines, output = check(Path("entries"))
    assert (code, lines) == (0, []), output


def test_the_suggested_block_header_fixes_an_indented_first_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The block-text case's fix is exact: writing the suggested header makes the entry valid."""
    expects, files = parse(CASES / "block-text-indented-first-line.case")
    suggested = re.search(r"in its header: `(.+)`$", expects[0])
    assert suggested is not None
    entry = "entries/memory/case.yaml"
    files[entry] = files[entry].replace(b"    log: |\n", f"    {suggested[1]}\n".encode())
    monkeypatch.chdir(tmp_path)
    materialise(files, tmp_path)
    code, lines, output = check(Path("entries"))
    assert code == 0, output


def test_placeholder_words_in_a_posted_log_are_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """People redact paths as `XXX` in what they post, and a log is copied as posted: the
    placeholder rule reads prose, not logs (nor code)."""
    monkeypatch.chdir(tmp_path)
    files = dict(DEFAULT_FILES)
    base = (CASES / "_valid.yaml").read_bytes()
    line = b"      RuntimeError: base entry ran out of memory while allocating 2 GiB\n"
    assert line in base
    redacted = b'      File "/home/XXX/train.py", line 3, in <module>\n' + line
    files["entries/memory/case.yaml"] = base.replace(line, redacted)
    materialise(files, tmp_path)
    code, lines, output = check(Path("entries"))
    assert (code, lines) == (0, []), output
    files["entries/memory/case.yaml"] = base.replace(b"It is valid.", b"XXX explain it.")
    materialise(files, tmp_path)
    assert check(Path("entries"))[0] == 1
