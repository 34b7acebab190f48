"""`encyclopedia verify` and the `check` rule behind it: a primary signature is proven by an
example log or by the release file it names, and every version an entry names is a release.

These run against a cache made here (a release list and a small wheel), offline, so the suite
needs no network; CI's own step runs `encyclopedia verify` on the shipped entries against the
real index."""

from __future__ import annotations

import json
import shutil
import time
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.prove import releases, verify
from generator.read.load import load_all
from generator.terminal.cli import main
from generator.terminal.cli_common import UNREACHABLE
from tests.support import ROOT

MESSAGE = "RuntimeError: stand-in kernel refused a tensor of {} elements"


def _cache(root: Path) -> Path:
    """A cache holding `standin` 1.0.0 and 1.1.0, and the 1.1.0 wheel."""
    (root / "releases").mkdir(parents=True)
    listed = {"versions": ["1.0.0", "1.1.0"], "fetched": time.time()}
    (root / "releases" / "standin.json").write_text(json.dumps(listed))
    (root / "releases" / "torch.json").write_text(json.dumps({**listed, "versions": ["2.5.1"]}))
    wheel = root / "archives" / "standin-1.1.0" / "standin-1.1.0-py3-none-any.whl"
    wheel.parent.mkdir(parents=True)
    code = (
        "def refuse(n):\n"
        "    raise RuntimeError(\n"
        '        f"stand-in kernel refused "\n'
        '        f"a tensor of {n} elements"\n'
        "    )\n"
    )
    with zipfile.ZipFile(wheel, "w") as zipped:
        zipped.writestr("standin/kernel.py", code)
        zipped.writestr("standin/_native.so", b"\x7fELF\0\0junk\0Stand-In Native Refusal\0")
    return root


SIGNATURE_CASES = [
    # (case, signature text, source file, version, problem expected or None)
    (
        "found-across-joined-literals",
        "stand-in kernel refused a tensor of * elements",
        "standin/kernel.py",
        "1.1.0",
        None,
    ),
    ("found-in-a-binary", "stand-in native refusal", "standin/_native.so", "1.1.0", None),
    (
        "planted-fake-text",
        "stand-in kernel exploded",
        "standin/kernel.py",
        "1.1.0",
        "is not in standin/kernel.py",
    ),
    (
        "no-such-file",
        "stand-in kernel refused",
        "standin/other.py",
        "1.1.0",
        "has no file standin/other.py",
    ),
    (
        "no-such-release",
        "stand-in kernel refused",
        "standin/kernel.py",
        "9.9.9",
        "standin==9.9.9 is not a release",
    ),
]


FIXTURE = ROOT / "tests" / "fixtures" / "site" / "entries"
ALPHA = "entries/memory/alpha-oom.yaml"


def _alpha(tmp_path: Path) -> tuple[Path, Path, str]:
    """A copy of the fixture entries, its alpha-oom entry file and that file's text."""
    entries = tmp_path / "entries"
    shutil.copytree(FIXTURE, entries)
    path = entries / "memory" / "alpha-oom.yaml"
    return entries, path, path.read_text()


def _entries(tmp_path: Path, signature: str, file: str, version: str, applies: str) -> Path:
    """The fixture entries with a sourced signature and an `applies_to` line added to one."""
    entries, path, text = _alpha(tmp_path)
    sourced = (
        f'  - text: "{signature}"\n'
        f'    source: {{package: standin, version: "{version}", file: {file}}}\n'
    )
    text = text.replace("\nsignatures:\n", "\nsignatures:\n" + sourced, 1)
    applies_to = f'applies_to:\n  versions:\n    - "{applies}"\n'
    path.write_text(text.replace("\nreferences:\n", "\n" + applies_to + "references:\n", 1))
    return entries


def _verify(entries: Path, cache: Path, *extra: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        main,
        ["verify", "--entries", str(entries), "--offline", "--requirements", "none.txt", *extra],
        env={"ENCYCLOPEDIA_CACHE": str(cache)},
    )
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("text", "file", "version", "expected"),
    [c[1:] for c in SIGNATURE_CASES],
    ids=[c[0] for c in SIGNATURE_CASES],
)
def test_a_signature_is_found_in_the_release_it_names(
    tmp_path: Path, text: str, file: str, version: str, expected: str | None
) -> None:
    cache = _cache(tmp_path / "cache")
    code, output = _verify(_entries(tmp_path, text, file, version, "PyTorch 2.5"), cache)
    if expected is None:
        assert code == 0, output
        assert "no problems" in output
    else:
        assert code == 1, output
        assert f"{ALPHA}:21:13: " in output and expected in output
        assert "; copy the text from that file as it is" in output


def test_a_version_the_index_lacks_fails_with_the_fix(tmp_path: Path) -> None:
    cache = _cache(tmp_path / "cache")
    entries = _entries(
        tmp_path,
        "stand-in native refusal",
        "standin/_native.so",
        "1.1.0",
        "PyTorch 2.5 and later; PyTorch 2.7.3 changed it",
    )
    code, output = _verify(entries, cache)
    assert code == 1, output
    assert "`2.7.3` is not a release of torch on the package index" in output
    assert "2.5`" not in output
    assert "pip index versions torch" in output


def test_an_uncached_answer_offline_is_its_own_exit_code(tmp_path: Path) -> None:
    cache = tmp_path / "empty-cache"
    entries = _entries(
        tmp_path, "stand-in native refusal", "standin/_native.so", "1.1.0", "PyTorch 2.5"
    )
    code, output = _verify(entries, cache)
    assert code == UNREACHABLE, output
    assert "not in the cache (offline)" in output or "no cached release list" in output


def test_check_asks_each_primary_signature_for_a_log_or_a_source(tmp_path: Path) -> None:
    entries, path, text = _alpha(tmp_path)
    unproven = '  - "an error no log of this entry holds"\n'
    path.write_text(text.replace("\nsignatures:\n", "\nsignatures:\n" + unproven, 1))
    result = CliRunner().invoke(main, ["check", "--entries", str(entries)])
    assert result.exit_code == 1
    assert (
        f"{ALPHA}:20:5: no example log holds this signature and it names no `source`"
        in result.output
    ), result.output
    assert result.output.count("no example log holds") == 1


MENTION_CASES = [
    ("Accelerate 0.22.0 and later raise this", [("accelerate", "0.22.0")]),
    (
        "bitsandbytes 0.43.1 and later: binary selected from torch.version.cuda; 0.46 and later",
        [("bitsandbytes", "0.43.1"), ("bitsandbytes", "0.46")],
    ),
    ("CUDA 11 and later: minimum Linux driver 450 for 11.x, 525 for 12.x", []),
    ("PyTorch 2.0.x and earlier; Python 3.12 prints it", [("torch", "2.0.x")]),
    ("flash-attn 2.5.5 for head dim 256 (PR 3656, pytorch#105309)", [("flash-attn", "2.5.5")]),
    ("sm_100 with CUDA 12.8; PyTorch Lightning 2.4", [("pytorch-lightning", "2.4")]),
    (
        "torchvision 0.22.1 requires `torch==2.7.1`, torchaudio 2.5.1 `torch==2.5.1`",
        [
            ("torchvision", "0.22.1"),
            ("torch", "2.7.1"),
            ("torchaudio", "2.5.1"),
            ("torch", "2.5.1"),
        ],
    ),
]


@pytest.mark.parametrize(
    ("line", "expected"), MENTION_CASES, ids=[c[0][:30] for c in MENTION_CASES]
)
def test_versions_are_read_with_the_package_named_before_them(
    line: str, expected: list[tuple[str, str]]
) -> None:
    assert [(m.package, m.version) for m in verify.mentions(line)] == expected


def test_series_and_releases() -> None:
    listed = ("2.5.0", "2.5.1", "2.10.0")
    assert releases.has_release(listed, "2.5") and releases.has_release(listed, "2.5.x")
    assert releases.has_release(listed, "2.10.0")
    assert not releases.has_release(listed, "2.1") and not releases.has_release(listed, "2.5.2")


def test_shipped_entries_prove_every_primary_signature() -> None:
    from generator.read.rules import unproven_signatures

    assert unproven_signatures(load_all(ROOT / "entries").entries) == []


def test_a_signature_shared_with_a_related_entry_is_proven_by_its_log(tmp_path: Path) -> None:
    """Two related entries may share a signature (shared_signatures requires the link); the
    log of one proves it for both, since each example must diagnose to its own entry."""
    entries = tmp_path / "entries"
    shutil.copytree(FIXTURE, entries)
    beta = entries / "kernels" / "beta-illegal-access.yaml"
    shared = '  - "alpha ran out of memory while allocating"\n'
    text = beta.read_text().replace("\nsignatures:\n", "\nsignatures:\n" + shared, 1)
    beta.write_text(text)
    result = CliRunner().invoke(main, ["check", "--entries", str(entries)])
    assert "no example log holds" not in result.output, result.output


def test_check_warns_of_long_prose_without_failing(tmp_path: Path) -> None:
    entries, path, text = _alpha(tmp_path)
    long_summary = "summary: " + " ".join(["word"] * 90) + "\n"
    path.write_text(text.replace(text.split("\n")[1] + "\n", long_summary, 1))
    named = CliRunner().invoke(main, ["check", "--entries", str(entries), str(path)])
    assert named.exit_code == 0, named.output
    assert f"{ALPHA}:2:10: warning: the summary is 90 words; keep it to about 80" in named.output
    whole = CliRunner().invoke(main, ["check", "--entries", str(entries)])
    assert whole.exit_code == 0 and "1 length warning(s) in 1 entries" in whole.output
    assert "warning: the summary is" not in whole.output


def test_check_warns_of_a_faq_answer_of_more_than_two_sentences(tmp_path: Path) -> None:
    """Abbreviations and version numbers do not end a sentence; a third sentence warns."""
    entries, path, text = _alpha(tmp_path)
    answer = "    a: It lowers the peak; check `max_memory_allocated` after the change.\n"
    assert answer in text
    two = "    a: It lowers the peak in 2.4, e.g. for bf16. Check it after the change.\n"
    path.write_text(text.replace(answer, two))
    quiet = CliRunner().invoke(main, ["check", "--entries", str(entries), str(path)])
    assert "FAQ answer" not in quiet.output, quiet.output
    three = "    a: It lowers the peak. Check it after the change! Does it hold? Yes.\n"
    path.write_text(text.replace(answer, three))
    named = CliRunner().invoke(main, ["check", "--entries", str(entries), str(path)])
    assert named.exit_code == 0, named.output
    assert "warning: this FAQ answer is 4 sentences; answer in at most 2" in named.output


@pytest.mark.parametrize(
    ("function", "file", "expected"),
    [
        ("refuse", "standin/kernel.py", None),
        (None, "standin/kernel.py", None),
        ("accept", "standin/kernel.py", "standin/kernel.py of standin==1.1.0 defines no function"),
        ("refuse", "standin/other.py", "standin==1.1.0 has no file standin/other.py"),
    ],
    ids=["defines-it", "any-function", "no-such-function", "no-such-file"],
)
def test_a_raised_rule_names_a_file_of_the_release_that_defines_its_function(
    tmp_path: Path, function: str | None, file: str, expected: str | None
) -> None:
    cache = _cache(tmp_path / "cache")
    found = SIGNATURE_CASES[0][1]  # a signature the release holds: only the rule is at stake
    entries = _entries(tmp_path, found, "standin/kernel.py", "1.1.0", "PyTorch 2.5")
    path = entries / "memory" / "alpha-oom.yaml"
    folder = file.rsplit("/", 1)[0] + "/"
    rule = (
        f"raised:\n  - exception: RuntimeError\n    frame: {folder}\n"
        + (f"    function: {function}\n" if function else "")
        + f'    source: {{package: standin, version: "1.1.0", file: {file}}}\n'
    )
    path.write_text(path.read_text().replace("\nreferences:\n", "\n" + rule + "references:\n", 1))
    code, output = _verify(entries, cache)
    if expected is None:
        assert code == 0, output
    else:
        assert code == 1 and expected in output, output
        assert "name the release whose file defines the function" in output
