"""The `encyclopedia` command: new, check (text, github, json), explain, export."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from jsonschema import Draft202012Validator

from generator.terminal.cli import main
from tests.conftest import FIXTURE_ENTRIES
from tests.support import ROOT


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(FIXTURE_ENTRIES, tmp_path / "entries")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def fill(text: str) -> str:
    """Fill the template's placeholders the way a contributor would."""
    text = text.replace("tags: [todo]", "tags: [oom]")
    text = text.replace(
        "https://github.com/TODO/TODO/issues/TODO", "https://github.com/pytorch/pytorch/issues/1"
    )
    text = text.replace("https://TODO.invalid/TODO", "https://pytorch.org/docs/stable/")
    text = text.replace('"TODO exact error message"', '"gamma exploded while allocating"')
    text = text.replace('"TODO_function_in_traceback"', '"gamma_kernel"')
    text = text.replace(
        "    log: |\n      TODO\n", "    log: |\n      gamma exploded while allocating 2 GiB\n"
    )
    return re.sub(r"TODO[^\n]*", "Filled in with real text.", text)


def test_new_writes_a_template_that_validates_once_filled(project: Path) -> None:
    result = run("new", "gamma-explodes", "--category", "memory", "--title", "Gamma explodes")
    assert result.exit_code == 0, result.output
    path = project / "entries" / "memory" / "gamma-explodes.yaml"
    text = path.read_text()
    assert text.startswith("# yaml-language-server: $schema=../../schema/entry.schema.json\n")
    assert 'title: "Gamma explodes"' in text
    unfilled = run("check")
    assert unfilled.exit_code == 1
    assert "entries/memory/gamma-explodes.yaml:6:" in unfilled.stdout
    assert all("placeholder" in line for line in unfilled.stdout.splitlines())
    path.write_text(fill(text))
    filled = run("check")
    assert filled.exit_code == 0, filled.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["new", "Bad_Id", "--category", "memory"], "is not a valid id"),
        (
            ["new", "new-one", "--category", "memroy"],
            "did you mean `memory`? known categories: kernels, memory",
        ),
        (["new", "alpha-oom", "--category", "kernels"], "already exists"),
        (["new", "new-one"], "Missing option '--category'"),
        (
            ["new", "new-one", "--category", "memory", "--title", "x\x1b]0;pwn\x07"],
            "invisible character",
        ),
        (["new", "new-one", "--category", "memory", "--title", "two\nlines"], "line break"),
        (["new", "a" * 81, "--category", "memory"], "is not a valid id"),
    ],
)
def test_new_refuses_bad_requests(project: Path, args: list[str], message: str) -> None:
    result = run(*args)
    assert result.exit_code == 2
    assert message in result.output
    assert not (project / "entries" / "memory" / "new-one.yaml").exists()


def test_check_formats(project: Path) -> None:
    bad = project / "entries" / "memory" / "alpha-oom.yaml"
    bad.write_text(bad.read_text().replace("severity: high", "severity: hgih"))
    text = run("check")
    assert text.exit_code == 1
    line = (
        "entries/memory/alpha-oom.yaml:3:11: `hgih` is not a valid value for `severity`; "
        "did you mean `high`? use one of: low, medium, high, critical"
    )
    assert text.stdout.splitlines() == [line]
    github = run("check", "--format", "github")
    assert github.stdout.splitlines() == [
        "::error file=entries/memory/alpha-oom.yaml,line=3,col=11::`hgih` is not a valid value "
        "for `severity`; did you mean `high`? use one of: low, medium, high, critical"
    ]
    data = json.loads(run("check", "--format", "json").stdout)
    assert data == [
        {
            "path": "entries/memory/alpha-oom.yaml",
            "line": 3,
            "col": 11,
            "message": "`hgih` is not a valid value for `severity`",
            "fix": "did you mean `high`? use one of: low, medium, high, critical",
        }
    ]
    assert run("check", "--format", "xml").exit_code == 2


def test_check_clean_exits_zero(project: Path) -> None:
    result = run("check")
    assert result.exit_code == 0
    assert "checked every entry: no problems." in result.output


def test_check_reports_only_on_the_given_paths(project: Path) -> None:
    beta = project / "entries" / "kernels" / "beta-illegal-access.yaml"
    beta.write_text(beta.read_text().replace("severity: critical", "severity: grave"))
    alpha = run("check", "entries/memory/alpha-oom.yaml")
    assert alpha.exit_code == 0, alpha.output
    both = run("check", "entries/memory/alpha-oom.yaml", "entries/kernels/beta-illegal-access.yaml")
    assert both.exit_code == 1
    assert both.stdout.startswith("entries/kernels/beta-illegal-access.yaml:3:11:")
    assert run("check", "entries/memory/absent.yaml").exit_code == 2


def test_check_refuses_a_file_outside_the_entries_folder(project: Path, tmp_path: Path) -> None:
    stray = tmp_path / "memory" / "stray.yaml"
    stray.parent.mkdir()
    stray.write_text("id: stray\n  broken: [\n")
    result = run("check", str(stray))
    assert result.exit_code == 2
    assert "is not inside the entries folder entries; pass" in result.output
    assert "--entries DIR" in result.output


def test_explain_prints_the_answer_offline(project: Path) -> None:
    result = run("explain", "alpha-oom")
    assert result.exit_code == 0
    out = result.stdout
    assert out.startswith("Alpha out of memory  [alpha-oom, high]")
    for part in [
        "Quick answer",
        "How to fix it",
        "  1. Halve the batch size.",
        "How to confirm (cheapest first)",
        "  [ ] Run one step with batch size 1.",
        "alpha ran out of memory while allocating",
    ]:
        assert part in out
    assert out.index("Quick answer") < out.index("How to fix it") < out.index("How to confirm")


def test_explain_follows_aliases_and_suggests(project: Path) -> None:
    assert run("explain", "alpha-old").stdout.startswith("Alpha out of memory")
    missing = run("explain", "alpha-oon")
    assert missing.exit_code == 1
    assert "no entry `alpha-oon`; did you mean: alpha-oom?" in missing.output


def test_export_writes_every_file(project: Path) -> None:
    result = run("export", "out", "--base-url", "https://example.org/enc/")
    assert result.exit_code == 0
    names = sorted(p.name for p in (project / "out").iterdir())
    assert names == [
        "categories.json",
        "entries.json",
        "schema.json",
        "signatures.json",
        "tags.json",
    ]
    entries = json.loads((project / "out" / "entries.json").read_text())
    assert entries[0]["url"] == "https://example.org/enc/memory/alpha-oom/"
    tags = json.loads((project / "out" / "tags.json").read_text())
    assert tags["oom"] == {"about": "Running out of memory.", "entries": ["alpha-oom"]}
    assert tags["kernel"]["entries"] == ["beta-illegal-access", "gamma-retired", "tricky-text"]


def test_new_puts_the_title_in_as_written(project: Path) -> None:
    result = run("new", "new-one", "--category", "memory", "--title", "Keeps {id} and {title}")
    assert result.exit_code == 0, result.output
    text = (project / "entries" / "memory" / "new-one.yaml").read_text()
    assert 'title: "Keeps {id} and {title}"' in text


def test_new_never_writes_through_a_link(project: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    (project / "entries" / "memory" / "new-one.yaml").symlink_to(victim)
    result = run("new", "new-one", "--category", "memory")
    assert result.exit_code == 2
    assert victim.read_text() == "untouched"


def test_export_under_a_file_is_a_clean_error(project: Path) -> None:
    (project / "a-file").write_text("x")
    result = run("export", "a-file/out")
    assert result.exit_code == 2
    assert "cannot write to a-file/out" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_terminal_output_shows_escapes_instead_of_obeying_them(project: Path) -> None:
    log = project / "train.log"
    log.write_bytes(
        b"\x1b]0;pwned\x07RuntimeError: alpha ran out of memory while allocating "
        b"\x07\x08\xc2\x9b2J\n"
    )
    result = run("diagnose", str(log))
    assert result.exit_code == 0, result.output
    assert not [c for c in result.output if c in "\x1b\x07\x08\x9b"]
    assert "allocating \\x07\\x08\\x9b2J" in result.output


def test_diagnose_says_what_to_do_before_the_evidence(project: Path) -> None:
    log = project / "train.log"
    log.write_text(
        "RuntimeError: alpha ran out of memory while allocating 2 GiB\n"
        "CUDA error: an illegal memory access in beta_kernel\n"
    )
    result = run("diagnose", str(log))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    answer = lines.index("   The alpha allocator runs out of device memory. Lower the batch size.")
    step = next(i for i, line in enumerate(lines) if line.startswith("   First step: "))
    evidence = next(i for i, line in enumerate(lines) if line.startswith("   line 1: "))
    assert lines[0].startswith("1. Alpha out of memory") and answer < step < evidence
    assert lines[step] == "   First step: Halve the batch size."
    # A collateral failure is listed after its cause without advice of its own.
    collateral = next(i for i, line in enumerate(lines) if "caused by alpha-oom" in line)
    assert not any(line.startswith("   First step: ") for line in lines[collateral:])


def test_broken_entries_are_an_error_on_standard_error(project: Path) -> None:
    """The user commands exit 2 on broken entries (1 means nothing matched), with the problems
    on standard error; `diagnose --json` still prints a result, with the problems in it."""
    entry = project / "entries" / "memory" / "alpha-oom.yaml"
    entry.write_text(entry.read_text().replace("severity: high", "severity: hihg"))
    log = project / "train.log"
    log.write_text("RuntimeError: alpha ran out of memory while allocating 2 GiB\n")
    for args in (["diagnose", str(log)], ["explain", "alpha-oom"], ["run", "--", "false"]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2, (args, result.output)
        assert result.stdout == "", args
        assert "alpha-oom.yaml:" in result.stderr and "`hihg`" in result.stderr
    as_json = CliRunner().invoke(main, ["diagnose", str(log), "--json"])
    assert as_json.exit_code == 2
    printed = json.loads(as_json.stdout)
    assert printed["matches"] == [] and "hihg" in printed["problems"][0]["message"]
    schema = json.loads((ROOT / "schema" / "diagnose.schema.json").read_text())
    Draft202012Validator(schema).validate(printed)


def test_diagnose_with_no_match_names_the_closest_pages_apart_from_a_diagnosis(
    project: Path,
) -> None:
    log = project / "train.log"
    log.write_text("step 1\nTraceback (most recent call last):\nValueError: alpha memory gone\n")
    result = run("diagnose", str(log))
    assert result.exit_code == 1  # nothing matched, whatever the closest pages are
    lines = result.output.splitlines()
    assert "not a diagnosis" in lines[0]
    assert "   ValueError: alpha memory gone" in lines
    assert any(line.startswith("1. Alpha out of memory [alpha-oom]") for line in lines)
    assert "confidence" not in result.output and "First step" not in result.output
    as_json = run("diagnose", str(log), "--json")
    printed = json.loads(as_json.stdout)
    assert printed["matches"] == []
    assert printed["closest"]["line"] == "ValueError: alpha memory gone"
    assert printed["closest"]["pages"][0]["id"] == "alpha-oom"
    schema = json.loads((ROOT / "schema" / "diagnose.schema.json").read_text())
    Draft202012Validator(schema).validate(printed)
    # A log with no word any page holds gets the plain answer, not pages picked at random.
    log.write_text("step 1\nqwertyuiop failed\n")
    assert "closest" not in json.loads(run("diagnose", str(log), "--json").stdout)


def test_run_names_the_closest_pages_when_a_failed_command_matched_nothing(project: Path) -> None:
    script = "import sys; sys.stderr.write('ValueError: alpha memory gone\\n'); sys.exit(3)"
    result = subprocess.run(
        [sys.executable, "-m", "generator.terminal.cli", "run", "--", sys.executable, "-c", script],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 3, result.stderr
    assert "not a diagnosis" in result.stderr and "[alpha-oom]" in result.stderr


def test_search_ranks_error_matches_then_descriptions(project: Path) -> None:
    pasted = run("search", "alpha ran out of memory while allocating 2 GiB", "--json")
    assert pasted.exit_code == 0
    found = json.loads(pasted.stdout)
    assert found["errors"][0]["id"] == "alpha-oom"
    described = json.loads(run("search", "beta illegal acess", "--json").stdout)
    assert found["errors"] and described["errors"] == []  # a typo: no signature matches
    assert described["described"][0]["id"] == "beta-illegal-access"
    text = run("search", "beta", "illegal", "access")
    assert text.exit_code == 0 and text.stdout.startswith(
        "1. Beta illegal access [beta-illegal-access]"
    )
    nothing = run("search", "qwertyuiop")
    assert nothing.exit_code == 1 and "No entry matches these words." in nothing.stdout


def test_explain_suggests_entries_by_their_words_when_the_id_is_unknown(project: Path) -> None:
    missing = run("explain", "alpha-memory")
    assert missing.exit_code == 1
    assert "did you mean: alpha-oom" in missing.stderr
    nothing = run("explain", "zzzz")
    assert "`encyclopedia search WORDS` finds entries by what you saw" in nothing.stderr


def test_the_site_url_given_at_build_time_is_the_links_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from generator.terminal import cli, sources

    monkeypatch.setenv("ENCYCLOPEDIA_SITE_URL", "https://failures.example.org/")
    written = sources.write_shipped(FIXTURE_ENTRIES, tmp_path)
    assert tmp_path / "site.json" in written
    assert sources.built_site_url(tmp_path) == "https://failures.example.org/"
    monkeypatch.delenv("ENCYCLOPEDIA_SITE_URL")
    assert sources.built_site_url(tmp_path / "absent") is None
    monkeypatch.setattr(sources, "built_site_url", lambda: "https://built.example.org")
    assert cli._site_url(None) == "https://built.example.org/"
    monkeypatch.setenv("ENCYCLOPEDIA_SITE_URL", "https://env.example.org")
    assert cli._site_url(None) == "https://env.example.org/"  # the environment first
    assert cli._site_url("https://flag.example.org") == "https://flag.example.org/"


def test_an_entries_folder_is_read_once_until_a_file_changes(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI keeps a folder's records between calls (recordcache.py): a second call builds
    nothing, an edit is read at once, and a broken folder is never kept (exit 2 every time)."""
    from generator import pipeline

    monkeypatch.setenv("ENCYCLOPEDIA_CACHE", str(project / "cache"))
    builds: list[Path] = []
    real = pipeline.build_encyclopedia

    def counted(folder: Path) -> object:
        builds.append(folder)
        return real(folder)

    monkeypatch.setattr(pipeline, "build_encyclopedia", counted)
    log = project / "train.log"
    log.write_text("RuntimeError: alpha ran out of memory while allocating 2 GiB\n")
    first = run("diagnose", str(log), "--json")
    second = run("diagnose", str(log), "--json")
    assert first.output == second.output and len(builds) == 1
    entry = project / "entries" / "memory" / "alpha-oom.yaml"
    entry.write_text(entry.read_text().replace("title: Alpha out of memory", "title: Alpha edited"))
    assert "Alpha edited" in run("diagnose", str(log), "--json").output and len(builds) == 2
    entry.write_text(entry.read_text().replace("severity: high", "severity: hihg"))
    for _ in range(2):
        assert run("diagnose", str(log)).exit_code == 2
    assert len(builds) == 4
