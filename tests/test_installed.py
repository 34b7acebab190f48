"""The `encyclopedia` command as a user installs it: a wheel built from this repository,
installed into a temporary folder and run from a directory outside the repository, where only
the entries packaged at build time are there to read."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from generator.pages import exports
from generator.pipeline import build_encyclopedia
from tests.support import ROOT

ENC = build_encyclopedia(ROOT / "entries")
# A real multi-rank failure (ms-swift#6301): six ranks' NCCL watchdog timeouts.
MULTIRANK = ENC.pages["nccl-timeout"].entry.examples[2].log


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package as `pip install` puts it: built into a wheel, installed into a folder."""
    tmp = tmp_path_factory.mktemp("installed")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
    subprocess.run([*pip, "wheel", "--no-deps", "-w", str(tmp / "wheel"), str(ROOT)], check=True)
    wheel = next((tmp / "wheel").glob("*.whl"))
    target = tmp / "lib"
    subprocess.run([*pip, "install", "--no-deps", "--target", str(target), str(wheel)], check=True)
    return target


@pytest.fixture()
def elsewhere(tmp_path: Path) -> Path:
    """A working directory outside the repository, with no entries folder."""
    work = tmp_path / "work"
    work.mkdir()
    return work


def command(installed: Path) -> list[str]:
    return [sys.executable, "-m", "generator.terminal.cli"]


def env(installed: Path, **extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if k not in ("ENCYCLOPEDIA_SITE_URL", "NO_COLOR")}
    return {**base, "PYTHONPATH": str(installed), **extra}


def cli(installed: Path, cwd: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*command(installed), *args],
        cwd=cwd,
        env=env(installed, **extra),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_installed_package_is_the_one_run(installed: Path, elsewhere: Path) -> None:
    found = subprocess.run(
        [sys.executable, "-c", "import generator.terminal.sources as s; print(s.PACKAGE)"],
        cwd=elsewhere,
        env=env(installed),
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(found.stdout.strip()) == (installed / "generator").resolve()


def test_the_packaged_index_matches_a_fresh_build(installed: Path) -> None:
    fresh = exports.export_files(ENC, "/")
    for name in ("signatures.json", "entries.json"):
        packaged = (installed / "generator" / "shipped" / name).read_text(encoding="utf-8")
        assert json.loads(packaged) == json.loads(fresh[name]), name


def test_diagnose_works_outside_the_repository(installed: Path, elsewhere: Path) -> None:
    log = elsewhere / "train.log"
    log.write_text(MULTIRANK, encoding="utf-8")
    result = cli(installed, elsewhere, "diagnose", str(log), "--site-url", "https://x.test/enc")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("1. NCCL watchdog timeout")
    assert "https://x.test/enc/distributed/nccl-timeout/" in result.stdout
    assert "More: encyclopedia explain nccl-timeout" in result.stdout
    as_json = json.loads(cli(installed, elsewhere, "diagnose", str(log), "--json").stdout)
    assert as_json["matches"][0]["url"] == "/distributed/nccl-timeout/"


# What the site tools need and the user commands must not load into a training environment.
SITE_STACK = ("mkdocs", "material", "jinja2", "pydantic", "yaml", "markdown", "pygments")


def test_the_user_commands_load_none_of_the_site_stack(installed: Path, elsewhere: Path) -> None:
    """`run`, `diagnose` and `explain` work from the packaged exports with the core install
    (click, ahocorasick-rs); the site tools load only when one of them runs."""
    log = elsewhere / "train.log"
    log.write_text(MULTIRANK, encoding="utf-8")
    probe = textwrap.dedent(f"""
        import sys
        from generator.terminal import cli
        for args in (["diagnose", {str(log)!r}], ["explain", "nccl-timeout"],
                     ["run", "--", sys.executable, "-c", "pass"]):
            try:
                cli.main(args, standalone_mode=False)
            except SystemExit:
                pass
        loaded = [m for m in {SITE_STACK!r} if m in sys.modules]
        print("LOADED", loaded, "generator.terminal.cli_site" in sys.modules)
    """)
    found = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=elsewhere,
        env=env(installed),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "LOADED [] False" in found.stdout, found.stdout + found.stderr


def test_help_lists_the_user_commands_first_and_has_a_version(
    installed: Path, elsewhere: Path
) -> None:
    shown = cli(installed, elsewhere, "--help").stdout
    assert shown.index("Diagnose a failure") < shown.index("run ") < shown.index("Maintain")
    assert shown.index("diagnose ") < shown.index("check ")
    version = cli(installed, elsewhere, "--version")
    assert version.returncode == 0 and version.stdout.startswith("encyclopedia, version ")


def test_exit_codes_as_documented(installed: Path, elsewhere: Path) -> None:
    plain = elsewhere / "plain.log"
    plain.write_text("step 1 loss 2.3\nstep 2 loss 2.1\n")
    assert cli(installed, elsewhere, "diagnose", str(plain)).returncode == 1
    missing = cli(installed, elsewhere, "diagnose", str(elsewhere / "absent.log"))
    assert missing.returncode == 2 and "absent.log" in missing.stderr
    assert cli(installed, elsewhere, "explain", "no-such-entry").returncode == 1


def test_explain_works_outside_the_repository_and_shows_references(
    installed: Path, elsewhere: Path
) -> None:
    result = cli(installed, elsewhere, "explain", "nccl-timeout")
    assert result.returncode == 0, result.stderr
    assert "References" in result.stdout
    for ref in ENC.pages["nccl-timeout"].entry.references:
        assert ref.url in result.stdout


def test_colour_only_when_wanted_and_lines_fit_the_width(installed: Path, elsewhere: Path) -> None:
    log = elsewhere / "train.log"
    log.write_text(MULTIRANK, encoding="utf-8")
    piped = cli(installed, elsewhere, "diagnose", str(log))
    assert "\x1b[" not in piped.stdout  # not a terminal: no colour
    forced = cli(installed, elsewhere, "diagnose", str(log), "--color", "always")
    assert "\x1b[1m" in forced.stdout
    assert "\x1b[" not in cli(installed, elsewhere, "diagnose", str(log), NO_COLOR="1").stdout
    narrow = cli(installed, elsewhere, "diagnose", str(log), COLUMNS="60").stdout.splitlines()
    body = [line for line in narrow if not line[:1].isdigit()]  # headings are one line each
    assert body and max(len(line) for line in body) <= 60
    # Evidence is shown whole: every word of the first watchdog line is printed.
    first = MULTIRANK.splitlines()[0]
    assert first.split()[-1] in " ".join(narrow)


def test_a_folder_of_rank_logs_is_one_multi_rank_log(installed: Path, elsewhere: Path) -> None:
    logs = elsewhere / "logs"
    logs.mkdir()
    (logs / "rank0.log").write_text(MULTIRANK.splitlines()[0] + "\n", encoding="utf-8")
    # No prefix in the file: its name says it is rank 3.
    (logs / "rank3.log").write_text(
        "Traceback (most recent call last):\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
    )
    result = cli(installed, elsewhere, "diagnose", str(logs))
    assert result.returncode == 0, result.stderr
    assert "rank 3" in result.stdout.splitlines()[0] or "rank 3" in result.stdout
    assert "rank3.log:2:" in result.stdout


CHILD_FAILS = """
import sys
sys.stdout.write(open(sys.argv[1]).read())
sys.stdout.flush()
sys.exit(1)
"""
CHILD_KILLED = """
import os, signal, sys
print("[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB.", flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""
CHILD_WAITS = """
import signal, sys, time
def stop(signum, frame):
    print("child got", signal.Signals(signum).name, flush=True)
    sys.exit(3)
signal.signal(signal.SIGTERM, stop)
print("ready", flush=True)
time.sleep(60)
"""


def test_run_passes_output_through_and_diagnoses_a_failure(
    installed: Path, elsewhere: Path
) -> None:
    log = elsewhere / "real.log"
    log.write_text(MULTIRANK, encoding="utf-8")
    (elsewhere / "child.py").write_text(CHILD_FAILS)
    result = cli(installed, elsewhere, "run", "--", sys.executable, "child.py", str(log))
    assert result.returncode == 1
    assert result.stdout == MULTIRANK  # unchanged
    assert "encyclopedia: the command exited with status 1." in result.stderr
    assert "1. NCCL watchdog timeout" in result.stderr


def test_run_reports_a_child_killed_by_a_signal(installed: Path, elsewhere: Path) -> None:
    (elsewhere / "child.py").write_text(CHILD_KILLED)
    result = cli(installed, elsewhere, "run", "--", sys.executable, "child.py")
    assert result.returncode == 128 + signal.SIGKILL
    assert "killed by SIGKILL" in result.stderr
    assert "CUDA out of memory" in result.stderr.split("encyclopedia:")[1]


def test_run_stays_quiet_when_the_command_succeeds(installed: Path, elsewhere: Path) -> None:
    result = cli(installed, elsewhere, "run", "--", sys.executable, "-c", "print('done')")
    assert (result.returncode, result.stdout, result.stderr) == (0, "done\n", "")


@pytest.fixture()
def waiting(installed: Path, elsewhere: Path) -> Iterator[subprocess.Popen[str]]:
    (elsewhere / "child.py").write_text(CHILD_WAITS)
    proc = subprocess.Popen(
        [*command(installed), "run", "--", sys.executable, "child.py"],
        cwd=elsewhere,
        env=env(installed),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    yield proc
    proc.kill()
    proc.communicate()


def test_run_forwards_a_termination_signal_to_the_command(
    waiting: subprocess.Popen[str],
) -> None:
    assert waiting.stdout is not None
    assert waiting.stdout.readline() == "ready\n"
    time.sleep(0.2)
    waiting.send_signal(signal.SIGTERM)
    out, err = waiting.communicate(timeout=30)
    assert "child got SIGTERM" in out
    assert waiting.returncode == 3
    # Someone else stopped it: one line, and no "nothing matched" report under it.
    assert "encyclopedia: the command was stopped by SIGTERM from outside" in err
    assert "(exit status 3)." in err
    assert "No known failure" not in err and err.count("\n") <= 2


def test_a_rank_log_named_with_control_characters_is_shown_escaped(
    installed: Path, elsewhere: Path
) -> None:
    logs = elsewhere / "logs"
    logs.mkdir()
    (logs / "rank3\x1b[2J.log").write_text(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
    )
    result = cli(installed, elsewhere, "diagnose", str(logs))
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout and "rank3\\x1b[2J.log:1:" in result.stdout
