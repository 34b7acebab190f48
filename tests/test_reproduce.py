"""`encyclopedia reproduce`: the judge of a reproducer, its results file and the page it feeds.

The real reproducers need PyTorch and run in their own CI step (`make reproduce`). Here the
harness runs small Python scripts that print real error lines, with a stand-in `torch` module
on the path that only carries a version, so every way a reproducer can fail is exercised."""

from __future__ import annotations

import dataclasses
import html
import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator import diagnose
from generator.pages import exports
from generator.pages.render import render_site
from generator.pipeline import build_encyclopedia
from generator.prove import reproduce, sandbox
from generator.read import reproduced
from generator.read.link import Encyclopedia
from generator.read.model import Reproduce, SetRun
from generator.terminal.cli import main
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
    return exports.matcher(enc)


def _needs_the_box() -> None:
    """Reproducers run only in bubblewrap's box: without it this fails in CI, skips elsewhere."""
    why = sandbox.available()
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)


@pytest.fixture(scope="module")
def fake_torch(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A venv whose `torch` imports and has a version, and nothing else."""
    _needs_the_box()
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    ask = "import sysconfig; print(sysconfig.get_path('purelib'))"
    site = Path(subprocess.check_output([python, "-c", ask], text=True).strip())
    (site / "torch").mkdir()
    (site / "torch" / "__init__.py").write_text('__version__ = "9.9.9+stand-in"\n')
    return str(python)


@pytest.fixture(scope="module")
def box(fake_torch: str) -> sandbox.Box:
    return reproduce.boxed(fake_torch, ROOT)


def _spec(**fields: object) -> Reproduce:
    base: dict[str, object] = {
        "about": "test",
        "failing": _prints(ITS_ERROR, 1),
        "fixed": "print('ok')\n",
        "timeout": 30,
    }
    return Reproduce.model_validate({**base, **fields})


JUDGED = [
    # (case, spec fields, status, problems expected in order, what kept it from saying first;
    # empty: it passes)
    ("passes", {}, "passed", []),
    (
        "failing-script-succeeds",
        {"failing": "print('all good')\n"},
        "failed",
        ["the failing script succeeded", "matches no entry"],
    ),
    (
        "another-entrys-error",
        {"failing": _prints(NAN_ERROR, 1)},
        "failed",
        ["diagnoses to loss-nan first"],
    ),
    (
        "fixed-script-fails",
        {"fixed": "raise SystemExit(3)\n"},
        "failed",
        ["fixed script failed (exit code 3)"],
    ),
    ("fix-still-prints-the-error", {"fixed": _prints(ITS_ERROR, 0)}, "failed", ["still prints"]),
    # Runs that cannot say whether the entry is right: broken, never passed or failed.
    (
        "missing-package",
        {"packages": ["no_such_package_here"]},
        "broken",
        ["lack no_such_package_here (ModuleNotFoundError"],
    ),
    (
        "import-error",
        {"failing": "import no_such_module_either\n"},
        "broken",
        ["stopped at an import: ModuleNotFoundError", "matches no entry"],
    ),
    (
        "fixed-import-error",
        {"fixed": "from torch import nothing_like_this\n"},
        "broken",
        ["fixed script stopped at an import: ImportError", "fixed script failed (exit code 1)"],
    ),
    # A version boundary's other side: the failing script runs through on those releases.
    ("absent-as-expected", {"failing": "print('ok')\n", "expect": "runs"}, "passed", []),
    (
        "present-where-absent-expected",
        {"expect": "runs"},
        "failed",
        ["failing script failed (exit code 1), where", "printed this entry's error"],
    ),
]


@pytest.mark.parametrize(
    ("fields", "status", "expected"), [c[1:] for c in JUDGED], ids=[c[0] for c in JUDGED]
)
def test_judgement(
    enc: Encyclopedia,
    index: diagnose.Index,
    box: sandbox.Box,
    fields: dict[str, object],
    status: str,
    expected: list[str],
) -> None:
    expect = str(fields.pop("expect", "fails"))
    spec = _spec(**fields)
    env = reproduce.environment(box, reproduce.ReleaseSet("current"), spec.packages)
    assert env.versions[0] == "torch 9.9.9+stand-in"
    on = SetRun(set="current", expect=expect)
    result = reproduce.reproduce_one(enc.pages[ENTRY], spec, index, box, env, on)
    assert len(result.problems) == len(expected), result.problems
    for problem, wanted in zip(result.problems, expected, strict=True):
        assert wanted in problem, (wanted, result.problems)
    assert result.status == status
    assert (result.set, result.expect) == ("current", expect)
    assert result.digest == reproduced.digest(spec)
    if status == "passed" and expect == "fails":
        assert result.signatures == ("Expected more than 1 value per channel when training",)
        assert result.failing.exit_code == 1 and ITS_ERROR in result.failing.output
        assert result.fixed.exit_code == 0 and result.fixed.output == "ok"


def test_the_error_line_counts_after_many_context_lines(
    enc: Encyclopedia, index: diagnose.Index, box: sandbox.Box
) -> None:
    """A diagnosis keeps only its first few lines of evidence; a traceback whose frames (the
    entry's context signatures) come first still shows the entry's primary signature to the
    judge."""
    page = enc.pages["torch-compile-backend-compiler-failed"]
    context = [s.text for s in page.entry.signatures if s.context and "*" not in s.text]
    primary = next(s.text for s in page.entry.signatures if not s.context and "*" not in s.text)
    assert len(context) > diagnose.MAX_EVIDENCE
    text = "\n".join([*context, primary]) + "\n"
    code = f"import sys\nsys.stderr.write({text!r})\nsys.exit(1)\n"
    env = reproduce.environment(box, reproduce.ReleaseSet("current"))
    result = reproduce.reproduce_one(page, _spec(failing=code), index, box, env)
    assert result.status == "passed", result.problems
    assert primary in result.signatures


def test_a_symptom_rows_own_signature_identifies_a_silent_entry(
    enc: Encyclopedia, index: diagnose.Index, box: sandbox.Box
) -> None:
    """An entry without signatures of its own (a failure no one line names) is still shown by
    a reproducer whose output holds the primary signature of one of its symptom rows."""
    silent = enc.pages["peft-adapter-has-no-effect"]
    assert not silent.entry.signatures
    line = "UserWarning: Found missing adapter keys while loading the checkpoint: ['x.lora_A']"
    spec = _spec(failing=_prints(line, 1))
    env = reproduce.environment(box, reproduce.ReleaseSet("current"))
    result = reproduce.reproduce_one(silent, spec, index, box, env)
    assert result.status == "passed", result.problems
    assert result.signatures == ("Found missing adapter keys while loading the checkpoint",)


def test_a_set_of_other_releases_comes_first_on_the_path(
    enc: Encyclopedia, index: diagnose.Index, fake_torch: str, tmp_path: Path
) -> None:
    """An overlay folder (what `make reproduce` installs from reproduce-sets/NAME.txt) shadows
    the interpreter's own package; the versions on record are the overlay's."""
    sets = tmp_path / "sets"
    package = sets / "old" / "torch"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('__version__ = "1.0.0+old"\n')
    box = reproduce.boxed(fake_torch, ROOT, overlays=[sets / "old"])
    found = reproduce.release_sets(sets)
    assert list(found) == ["current", "old"]
    env = reproduce.environment(box, found["old"])
    assert env.versions == ("torch 1.0.0+old",)
    spec = _spec(failing="import torch\nprint(torch.__version__)\n")
    run, text = reproduce.run_script(box, spec.failing, spec, found["old"])
    assert run.exit_code == 0 and text.strip() == "1.0.0+old"
    assert reproduce.environment(box, found["current"]).versions == ("torch 9.9.9+stand-in",)


def _alive(marker: str) -> list[str]:
    """Processes on this machine whose command line holds `marker` (zombies aside)."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            running = " Z " not in (proc / "stat").read_text()
            if running and marker in (proc / "cmdline").read_text():
                found.append(proc.name)
        except OSError:
            continue
    return found


def _wait_gone(marker: str) -> None:
    deadline = time.monotonic() + 5
    while _alive(marker):
        assert time.monotonic() < deadline, f"a process of the script outlived it: {marker}"
        time.sleep(0.1)


# A child in a new session that double-forks: it escapes a process group, not the box.
ESCAPE = """
import os, subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)  # {marker}-child"])
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        daemon = "import time; time.sleep(120)  # {marker}-daemon"
        os.execv(sys.executable, [sys.executable, "-c", daemon])
    os._exit(0)
print("started", flush=True)
{tail}
"""


def test_time_limit_stops_the_script_and_what_it_started(
    enc: Encyclopedia, index: diagnose.Index, box: sandbox.Box
) -> None:
    marker = f"limit-{os.getpid()}-{time.monotonic_ns()}"
    spec = _spec(failing=ESCAPE.format(marker=marker, tail="time.sleep(120)"), timeout=5)
    env = reproduce.environment(box, reproduce.ReleaseSet("current"))
    result = reproduce.reproduce_one(enc.pages[ENTRY], spec, index, box, env)
    assert result.failing.exit_code is None
    assert result.failing.output == "started"
    assert 5 <= result.failing.seconds < 30
    assert "past its 5 s limit" in result.problems[0]
    assert result.status == "broken"  # a time limit says nothing about the entry
    _wait_gone(marker)


def test_nothing_a_script_started_survives_it(box: sandbox.Box) -> None:
    marker = f"exit-{os.getpid()}-{time.monotonic_ns()}"
    start = time.monotonic()
    run, _ = reproduce.run_script(box, ESCAPE.format(marker=marker, tail=""), _spec())
    # It returns when the script exits, not when the daemon holding its output does.
    assert run.exit_code == 0 and run.output == "started"
    assert time.monotonic() - start < 20
    _wait_gone(marker)


def test_output_is_text_a_page_can_show() -> None:
    raw = b"\x1b[1mbold\x1b[0m and \xff\r\nnext\x07 line\tend\n"
    assert reproduce.clean_output(raw) == "bold and \ufffd\nnext\\x07 line\tend\n"


def test_the_end_of_a_long_output_is_kept(box: sandbox.Box) -> None:
    code = "for i in range(100):\n    print('line', i)\n"
    run, whole = reproduce.run_script(box, code, _spec())
    assert whole.count("\n") == 100
    assert run.cut_lines == 100 - reproduce.KEPT_LINES
    assert run.output.splitlines()[0] == f"line {100 - reproduce.KEPT_LINES}"
    assert run.output.splitlines()[-1] == "line 99"


def _result(
    entry_id: str, status: reproduced.Status = "passed", on: str = "current"
) -> reproduced.Reproduction:
    run = reproduced.Run(1, 1.5, "out")
    return reproduced.Reproduction(
        entry_id,
        "0" * 16,
        on,
        "fails",
        ("torch 2.14.1", "transformers 5.24.0"),
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
    reproduced.write_results(path, [_result("b", "failed"), _result("b", "broken", "old")], True)
    results, problems = reproduced.read_results(path)
    assert problems == []
    assert results == {
        ("a", "current"): _result("a"),
        ("b", "current"): _result("b", "failed"),
        ("b", "old"): _result("b", "broken", "old"),
    }
    reproduced.write_results(path, [_result("c")], merge=False)
    assert list(reproduced.read_results(path)[0]) == [("c", "current")]
    assert not list(tmp_path.glob("*.tmp"))


def _entry_page(enc: Encyclopedia, *results: reproduced.Reproduction) -> str:
    by_key = {(r.id, r.set): r for r in results}
    pages = render_site(dataclasses.replace(enc, reproduced=by_key), None, ROOT / "nowhere")
    markdown = next(p.markdown for p in pages if p.src_uri == f"data/{ENTRY}.md")
    return html.unescape(markdown)  # the Markdown escapes of punctuation, undone


def test_page_says_when_and_with_what_it_was_reproduced(enc: Encyclopedia) -> None:
    spec = enc.pages[ENTRY].entry.reproduce
    assert spec is not None
    current = dataclasses.replace(_result(ENTRY), digest=reproduced.digest(spec))
    page = _entry_page(enc, current)
    assert "## Reproduce it" in page
    assert "<strong>Reproduced</strong> with torch 2.14.1, transformers 5.24.0 (Python" in page
    failed = dataclasses.replace(current, status="failed", problems=("the fixed script failed",))
    assert "Not as the entry says</strong> with torch 2.14.1" in _entry_page(enc, failed)
    broken = dataclasses.replace(current, status="broken", problems=("an import failed",))
    assert "Could not run</strong>" in _entry_page(enc, broken)
    # A result of other scripts than the entry holds now, or of a set it does not name, or of
    # another expectation, is not claimed.
    for other in (
        _result(ENTRY),
        dataclasses.replace(current, set="old"),
        dataclasses.replace(current, expect="runs"),
    ):
        stale = _entry_page(enc, other)
        assert "Reproduced</strong>" not in stale and "Not run yet in this form" in stale


def test_page_shows_each_side_of_a_version_boundary(tmp_path: Path) -> None:
    sets = "  sets:\n    - set: current\n    - set: old\n      expect: runs\n"
    sets += "      note: The old release has no such check.\n"
    enc = build_encyclopedia(_entries_with_stand_in_scripts(tmp_path, sets))
    spec = enc.pages[ENTRY].entry.reproduce
    assert spec is not None and [r.set for r in spec.runs] == ["current", "old"]
    now = dataclasses.replace(_result(ENTRY), digest=reproduced.digest(spec))
    before = dataclasses.replace(
        now, set="old", expect="runs", versions=("torch 2.14.1", "transformers 4.45.2")
    )
    text = _entry_page(enc, now, before)
    assert "<strong>Reproduced</strong> with torch 2.14.1, transformers 5.24.0" in text
    assert (
        "<strong>Absent, as the entry says</strong>, with torch 2.14.1, transformers 4.45.2" in text
    )
    assert "The old release has no such check." in text
    assert text.count("Output of the failing script with ") == 2
    assert "Not run yet in this form on the <code>old</code> releases" in _entry_page(enc, now)


def test_shipped_results_are_current_and_passing(enc: Encyclopedia) -> None:
    """The site says "reproduced with PyTorch X on DATE" from entries/_reproduced.json: every CPU
    reproducer must have a passing result of its current scripts (`make reproduce` writes it)."""
    stale = []
    for page in enc.pages.values():
        spec = page.entry.reproduce
        if spec is None or spec.needs != "cpu":
            continue
        for run_on, result in reproduced.runs_of(enc.reproduced, page.id, spec):
            if result is None or result.status != "passed":
                stale.append(f"{page.id} on {run_on.set}")
    assert stale == [], "run `make reproduce` and commit entries/_reproduced.json"
    assert sum(1 for p in enc.pages.values() if p.entry.reproduce) >= 12


def _entries_with_stand_in_scripts(tmp_path: Path, more: str = "") -> Path:
    """A copy of the shipped entries whose ENTRY reproducer prints its error without torch,
    with `more` (YAML lines) added to its section."""
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
        + more
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
    assert f"pass {ENTRY} on current (torch 9.9.9+stand-in;" in passed.output
    assert "1 of 1 reproducer runs passed" in passed.output
    assert reproduced.read_results(out)[0][ENTRY, "current"].status == "passed"
    # The shipped script needs the real torch: with the stand-in it fails, and says why.
    failed = CliRunner().invoke(
        main, ["reproduce", ENTRY, "--python", fake_torch, "--color", "never"]
    )
    assert failed.exit_code == 4  # broken, not failed: the entry is not shown wrong
    assert f"BROKEN {ENTRY} on current" in failed.output
    assert "output of the failing script (exit code 1):" in failed.output
    assert "ImportError: cannot import name 'nn' from 'torch'" in failed.output
    assert f"broken: {ENTRY} on current" in failed.output


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


def _boxed(box: sandbox.Box, code: str) -> str:
    run, whole = reproduce.run_script(box, code, _spec())
    assert run.exit_code == 0, whole
    return whole


def test_a_script_sees_no_secret_of_the_runner(
    box: sandbox.Box, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_runner_secret_0123456789")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-runner-secret-9876543210")
    output = _boxed(box, "import os\nprint(sorted(os.environ.items()))\n")
    assert "HF_TOKEN" not in output and "runner_secret" not in output
    assert "AWS_SECRET" not in output and "runner-secret" not in output
    assert "'HOME', '/tmp/home'" in output


def test_a_runner_value_printed_by_chance_is_withheld(
    box: sandbox.Box, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI_JOB_TOKEN", "glcbt-0123456789abcdef")
    assert _boxed(box, "print('token: glcbt-0123456789abcdef')\n") == "token: [withheld]\n"


def test_a_script_cannot_read_the_checkout_or_the_runners_files(
    box: sandbox.Box, tmp_path: Path
) -> None:
    private = tmp_path / "private.txt"
    private.write_text("runner's file")
    code = textwrap.dedent(f"""
        import os
        for path in [{str(ROOT / "README.md")!r}, {str(private)!r}, os.path.expanduser("~/.netrc")]:
            try:
                open(path).read()
                print("read", path)
            except OSError as err:
                print("refused", type(err).__name__)
        print("cwd", os.getcwd(), "home", os.listdir(os.path.expanduser("~")))
    """)
    output = _boxed(box, code)
    assert "read " not in output
    assert output.count("refused") == 3
    assert "cwd /tmp/work home []" in output


def test_a_script_writes_only_inside_its_box(box: sandbox.Box, tmp_path: Path) -> None:
    targets = [tmp_path / "planted", ROOT / "planted-by-a-reproducer", Path("/etc/planted")]
    code = textwrap.dedent(f"""
        for path in {[str(t) for t in targets]!r}:
            try:
                open(path, "w").write("x")
                print("wrote", path)
            except OSError as err:
                print("refused", type(err).__name__)
        open("in-its-folder.txt", "w").write("fine")
    """)
    _boxed(box, code)
    assert not any(t.exists() for t in targets)


def test_a_script_has_no_network(box: sandbox.Box) -> None:
    import socket

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(0.5)
        port = server.getsockname()[1]
        code = textwrap.dedent(f"""
            import socket
            try:
                socket.create_connection(("127.0.0.1", {port}), timeout=3)
                print("connected")
            except OSError as err:
                print("refused", type(err).__name__)
        """)
        output = _boxed(box, code)
        assert "refused" in output and "connected" not in output
        with pytest.raises(TimeoutError):
            server.accept()


def test_a_flood_of_output_is_held_to_a_bound(box: sandbox.Box) -> None:
    code = "import sys\nfor i in range(400_000):\n    sys.stdout.write(f'{i:050d}\\n')\n"
    outcome = box.run([box.python, "-c", code], 60)
    assert outcome.exit_code == 0
    assert len(outcome.output) == sandbox.CAPTURE_BYTES
    assert outcome.output.endswith(b"%050d\n" % 399_999)


def test_the_box_never_covers_the_system(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir("/")
    hidden = sandbox.hidden_folders([Path("/usr"), Path("/"), tmp_path])
    assert "/" not in hidden and "/usr" not in hidden
    assert "/tmp" in hidden and str(tmp_path.resolve()) in hidden


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("seconds", "fast", "`seconds` is str"),
        ("exit_code", True, "`exit_code` is bool"),
        ("problems", "none", "`problems` is str"),
        ("status", "maybe", "`status` is 'maybe'"),
    ],
)
def test_a_wrongly_typed_results_file_is_a_problem_not_a_crash(
    tmp_path: Path, field: str, value: object, said: str
) -> None:
    import json

    path = tmp_path / "results.json"
    reproduced.write_results(path, [_result("a")], merge=False)
    data = json.loads(path.read_text())
    record = data["reproductions"][0]
    (record["failing"] if field in ("seconds", "exit_code") else record)[field] = value
    path.write_text(json.dumps(data))
    results, problems = reproduced.read_results(path)
    assert results == {}
    assert len(problems) == 1 and said in problems[0].message
