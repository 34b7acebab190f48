"""The README's exit-code table, driven row by row: each row's case runs the installed command
(`python -m generator.terminal.cli`) in a fresh process and must exit as the table says. A row
without a case, or a case without a row, fails: the table and the commands cannot drift apart."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_ENTRIES
from tests.support import ROOT

VECTORS = ROOT / "tests" / "diagnose_vectors"
ROW = re.compile(r"^\| `(\w+)` \| ([^|]+) \| ([^|]+) \|$")


def table() -> dict[tuple[str, str], str]:
    rows = {}
    for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines():
        found = ROW.match(line)
        if found:
            rows[(found.group(1), found.group(2).strip())] = found.group(3).strip()
    return rows


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("exit-codes")
    good = root / "good"
    shutil.copytree(FIXTURE_ENTRIES, good)
    broken = root / "broken"
    shutil.copytree(FIXTURE_ENTRIES, broken)
    alpha = broken / "memory" / "alpha-oom.yaml"
    alpha.write_text(alpha.read_text().replace("severity: high", "severity: hgih"))
    log = root / "train.log"
    log.write_text(json.loads((VECTORS / "multirank-oom-then-timeout.json").read_text())["log"])
    quiet = root / "quiet.log"
    quiet.write_text("step 1 loss 0.5\n")
    return {"good": good, "broken": broken, "log": log, "quiet": quiet, "root": root}


EXIT_3 = [sys.executable, "-c", "import sys; sys.exit(3)"]
KILLED = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"]


def cases(f: dict[str, Path]) -> dict[tuple[str, str], tuple[list[str], int]]:
    """Per table row: the arguments, and the exit code that row means here."""
    index = ["--index", str(VECTORS / "index.json")]
    good, broken = ["--entries", str(f["good"])], ["--entries", str(f["broken"])]
    return {
        ("diagnose", "a known failure matched"): (["diagnose", str(f["log"]), *index], 0),
        ("diagnose", "nothing matched"): (["diagnose", str(f["quiet"]), *index], 1),
        ("diagnose", "bad usage"): (["diagnose", "--no-such-option"], 2),
        ("diagnose", "the log cannot be read"): (["diagnose", str(f["root"] / "absent.log")], 2),
        ("diagnose", "the entries are broken"): (["diagnose", str(f["log"]), *broken], 2),
        ("explain", "the entry exists"): (["explain", "alpha-oom", *good], 0),
        ("explain", "no entry has that id"): (["explain", "no-such-entry", *good], 1),
        ("explain", "the entries are broken"): (["explain", "alpha-oom", *broken], 2),
        ("search", "an entry was found"): (["search", "out", "of", "memory", *good], 0),
        ("search", "no entry was found"): (["search", "qwertyuiop", *good], 1),
        ("search", "the entries are broken"): (["search", "memory", *broken], 2),
        ("run", "the command exited with status N"): (["run", *good, "--", *EXIT_3], 3),
        ("run", "the command was killed by signal N"): (
            ["run", *good, "--", *KILLED],
            128 + signal.SIGKILL,
        ),
        ("run", "the command does not exist"): (["run", *good, "--", "no-such-command-here"], 127),
        ("run", "the command cannot be executed"): (
            ["run", *good, "--", str(ROOT / "README.md")],
            126,
        ),
        ("run", "the entries are broken"): (["run", *broken, "--", *EXIT_3], 2),
        ("check", "no problems"): (["check", *good], 0),
        ("check", "problems found"): (["check", *broken], 1),
        ("check", "a path that is not there"): (["check", *good, str(f["good"] / "x.yaml")], 2),
    }


def test_every_row_has_a_case_and_every_case_a_row(folders: dict[str, Path]) -> None:
    assert set(table()) == set(cases(folders))


@pytest.mark.parametrize("row", sorted(table()), ids=lambda row: f"{row[0]}: {row[1]}")
def test_the_command_exits_as_the_table_says(
    row: tuple[str, str], folders: dict[str, Path]
) -> None:
    args, code = cases(folders)[row]
    # The table's code: a number, or N / 128 + N, which the cases fill in with 3 and SIGKILL.
    written = table()[row]
    meaning = {"N": 3, "128 + N": 128 + signal.SIGKILL}
    assert code == (meaning[written] if written in meaning else int(written)), (row, written)
    result = subprocess.run(
        [sys.executable, "-m", "generator.terminal.cli", *args],
        cwd=folders["root"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == code, (row, result.stdout[-500:], result.stderr[-500:])
