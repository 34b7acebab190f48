"""`encyclopedia reproduce`: the judge of a reproducer, its results file and the page it feeds.

The real reproducers need PyTorch and run in their own CI step (`make reproduce`). Here the
harness runs small Python scripts that print real error lines, with a stand-in `torch` module
on the path that only carries a version, so every way a reproducer can fail is exercised."""

from __future__ import annotations

import dataclasses
import importlib.util
import shutil
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator import diagnose, exports, reproduce, reproduced
from generator.cli import main
from generator.link import Encyclopedia
from generator.model import Reproduce
from generator.pipeline import build_encyclopedia
from generator.render import render_site
from tests.support import ROOT

ENTRY = "batchnorm-single-sample-batch"
ITS_ERROR = (
    "ValueError: Expected more than 1 value per channel when training, "
    "got input size torch.Size([1, 8])"
)
NAN_ERROR = "RuntimeError: Function 'MulBackward0' returned nan values in its 0th output."


def _prints(line: str, code: int) -> str:
    return f"import sys\nprint({line!r}, file=sys.stderr)\nsys.exit({code})\n"


@pytest.fixture(scope="module")
def enc() -> Encyclopedia:
    return build_encyclopedia(ROOT / "entries")


@pytest.fixture(scope="module")
def index(enc: Encyclopedia) -> diagnose.Index:
    return diagnose.Index.from_export(exports.signature_index(enc, "/"))


@pytest.fixture
def fake_torch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A `torch` that imports and has a version, and nothing else."""
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text('__version__ = "9.9.9+stand-in"\n')
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    return sys.executable


def _spec(**fields: object) -> Reproduce:
    base: dict[str, object] = {
        "about": "test",
        "failing": _prints(ITS_ERROR, 1),
        "fixed": "print('ok')\n",
        "timeout": 30,
    }
    return Reproduce.model_validate({**base, **fields})


JUDGED = [
    # (case, spec fields, problems expected, in order; empty: it passes)
    ("passes", {}, []),
    (
        "failing-script-succeeds",
        {"failing": "print('all good')\n"},
        ["the failing script succeeded", "matches no entry"],
    ),
    ("another-entrys-error", {"failing": _prints(NAN_ERROR, 1)}, ["diagnoses to loss-nan first"]),
    (
        "fixed-script-fails",
        {"fixed": "raise SystemExit(3)\n"},
        ["fixed script failed (exit code 3)"],
    ),
    ("fix-still-prints-the-error", {"fixed": _prints(ITS_ERROR, 0)}, ["still prints"]),
    ("missing-package", {"packages": ["no_such_package_here"]}, ["lacks no_such_package_here"]),
]


@pytest.mark.parametrize(
    ("fields", "expected"), [c[1:] for c in JUDGED], ids=[c[0] for c in JUDGED]
)
def test_judgement(
    enc: Encyclopedia,
    index: diagnose.Index,
    fake_torch: str,
    fields: dict[str, object],
    expected: list[str],
) -> None:
    env = reproduce.environment(fake_torch)
    assert env.torch == "9.9.9+stand-in"
    spec = _spec(**fields)
    result = reproduce.reproduce_one(enc.pages[ENTRY], spec, index, fake_torch, env)
    assert len(result.problems) == len(expected), result.problems
    for problem, wanted in zip(result.problems, expected, strict=True):
        assert wanted in problem
    assert result.status == ("failed" if expected else "passed")
    assert result.digest == reproduced.digest(spec)
    if not expected:
        assert result.signatures == ("Expected more than 1 value per channel when training",)
        assert result.failing.exit_code == 1 and ITS_ERROR in result.failing.output
        assert result.fixed.exit_code == 0 and result.fixed.output == "ok"


def _state(stat: Path) -> str | None:
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return None


def test_time_limit_stops_the_script_and_what_it_started(
    enc: Encyclopedia, index: diagnose.Index, fake_torch: str, tmp_path: Path
) -> None:
    pid_file = tmp_path / "child.pid"
    failing = textwrap.dedent(f"""
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        open({str(pid_file)!r}, "w").write(str(child.pid))
        print("started", flush=True)
        time.sleep(120)
    """)
    spec = _spec(failing=failing, timeout=5)
    env = reproduce.environment(fake_torch)
    result = reproduce.reproduce_one(enc.pages[ENTRY], spec, index, fake_torch, env)
    assert result.failing.exit_code is None
    assert result.failing.output == "started"
    assert 5 <= result.failing.seconds < 30
    assert "past its 5 s limit" in result.problems[0]
    # The grandchild was killed with the script's session: gone, or a zombie nobody reaped yet.
    stat = Path(f"/proc/{int(pid_file.read_text())}/stat")
    deadline = time.monotonic() + 5
    while _state(stat) not in (None, "Z"):
        assert time.monotonic() < deadline, "the script's child outlived its time limit"
        time.sleep(0.1)


def test_output_is_text_a_page_can_show() -> None:
    raw = b"\x1b[1mbold\x1b[0m and \xff\r\nnext\x07 line\tend\n"
    assert reproduce.clean_output(raw) == "bold and \ufffd\nnext\\x07 line\tend\n"


def test_the_end_of_a_long_output_is_kept(fake_torch: str) -> None:
    code = "for i in range(100):\n    print('line', i)\n"
    run, whole = reproduce.run_script(fake_torch, code, _spec())
    assert whole.count("\n") == 100
    assert run.cut_lines == 100 - reproduce.KEPT_LINES
    assert run.output.splitlines()[0] == f"line {100 - reproduce.KEPT_LINES}"
    assert run.output.splitlines()[-1] == "line 99"


def _result(entry_id: str, status: reproduced.Status = "passed") -> reproduced.Reproduction:
    run = reproduced.Run(1, 1.5, "out")
    return reproduced.Reproduction(
        entry_id,
        "0" * 16,
        status,
        (),
        run,
        run,
        entry_id,
        (),
        "2.14.1",
        "3.11.7",
        "Linux",
        "2026-12-01",
    )


def test_results_file_round_trip_and_merge(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    reproduced.write_results(path, [_result("a"), _result("b")], merge=True)
    reproduced.write_results(path, [_result("b", "failed")], merge=True)
    results, problems = reproduced.read_results(path)
    assert problems == []
    assert results == {"a": _result("a"), "b": _result("b", "failed")}
    reproduced.write_results(path, [_result("c")], merge=False)
    assert list(reproduced.read_results(path)[0]) == ["c"]
    assert not list(tmp_path.glob("*.tmp"))


def _entry_page(enc: Encyclopedia, results: dict[str, reproduced.Reproduction]) -> str:
    pages = render_site(dataclasses.replace(enc, reproduced=results), None, ROOT / "nowhere")
    return next(p.markdown for p in pages if p.src_uri == f"data/{ENTRY}.md")


def test_page_says_when_and_with_what_it_was_reproduced(enc: Encyclopedia) -> None:
    spec = enc.pages[ENTRY].entry.reproduce
    assert spec is not None
    current = dataclasses.replace(_result(ENTRY), digest=reproduced.digest(spec))
    page = _entry_page(enc, {ENTRY: current})
    assert "## Reproduce it" in page
    assert "Reproduced with PyTorch 2.14.1</strong>" in page.replace("&#46;", ".")
    failed = dataclasses.replace(current, status="failed", problems=("the fixed script failed",))
    assert "Did not reproduce" in _entry_page(enc, {ENTRY: failed})
    # A result of other scripts than the entry holds now is not claimed.
    stale = _entry_page(enc, {ENTRY: _result(ENTRY)})
    assert "Reproduced with" not in stale and "Not run yet in this form" in stale


def test_shipped_results_are_current_and_passing(enc: Encyclopedia) -> None:
    """The site says "reproduced with PyTorch X on DATE" from entries/_reproduced.json: every CPU
    reproducer must have a passing result of its current scripts (`make reproduce` writes it)."""
    stale = []
    for page in enc.pages.values():
        spec = page.entry.reproduce
        if spec is None or spec.needs != "cpu":
            continue
        result = enc.reproduced.get(page.id)
        if result is None or not result.current(spec) or result.status != "passed":
            stale.append(page.id)
    assert stale == [], "run `make reproduce` and commit entries/_reproduced.json"
    assert sum(1 for p in enc.pages.values() if p.entry.reproduce) >= 12


def _entries_with_stand_in_scripts(tmp_path: Path) -> Path:
    entries = tmp_path / "entries"
    shutil.copytree(ROOT / "entries", entries)
    (entries / reproduced.RESULTS_FILE).unlink()
    path = entries / "data" / f"{ENTRY}.yaml"
    text = path.read_text()
    start = text.index("\nreproduce:\n") + 1
    end = text.index("\nreferences:", start) + 1
    section = (
        "reproduce:\n  about: stand-in\n  failing: |\n"
        + textwrap.indent(_prints(ITS_ERROR, 1), "    ")
        + "  fixed: |\n    print('ok')\n"
    )
    path.write_text(text[:start] + section + text[end:])
    return entries


def test_cli_runs_writes_results_and_exits_by_outcome(fake_torch: str, tmp_path: Path) -> None:
    entries = _entries_with_stand_in_scripts(tmp_path)
    out = tmp_path / "results.json"
    args = [
        "reproduce",
        ENTRY,
        "--python",
        fake_torch,
        "--entries",
        str(entries),
        "--out",
        str(out),
    ]
    passed = CliRunner().invoke(main, [*args, "--color", "never"])
    assert passed.exit_code == 0, passed.output
    assert f"pass {ENTRY}" in passed.output
    assert "1 of 1 reproducers passed (PyTorch 9.9.9+stand-in" in passed.output
    assert reproduced.read_results(out)[0][ENTRY].status == "passed"
    # The shipped script needs the real torch: with the stand-in it fails, and says why.
    failed = CliRunner().invoke(
        main, ["reproduce", ENTRY, "--python", fake_torch, "--color", "never"]
    )
    assert failed.exit_code == 1
    assert f"FAIL {ENTRY}" in failed.output
    assert "output of the failing script (exit code 1):" in failed.output
    assert "ImportError: cannot import name 'nn' from 'torch'" in failed.output


def test_cli_refuses_what_it_cannot_run(tmp_path: Path) -> None:
    unknown = CliRunner().invoke(main, ["reproduce", "no-such-entry"])
    assert unknown.exit_code == 2 and "no entry `no-such-entry`" in unknown.output
    none = CliRunner().invoke(main, ["reproduce", "nccl-timeout"])
    assert none.exit_code == 2 and "has no `reproduce` section" in none.output
    if importlib.util.find_spec("torch") is not None:
        pytest.skip("the test environment has torch: no Python without it to try")
    no_torch = CliRunner().invoke(main, ["reproduce", ENTRY, "--python", sys.executable])
    assert no_torch.exit_code == 2 and "cannot import torch" in no_torch.output
    missing = CliRunner().invoke(main, ["reproduce", ENTRY, "--python", str(tmp_path / "py")])
    assert missing.exit_code == 2 and "no Python at" in missing.output
