"""Reproducers: run an entry's failing and fixed scripts against a real PyTorch and check that the
failure is the one the entry describes. Every script runs in a box (`sandbox.py`): contributor
code sees none of the runner's environment, files or network.

For each entry with a `reproduce` section: the failing script must exit non-zero within its time
limit, its output fed to the matcher must rank this entry first with one of its primary
signatures matched, and the fixed script must exit 0 (its output must not match the entry's
primary signatures). Results are plain records, written to a JSON file the site renders.
"""

from __future__ import annotations

import io
import os
import platform
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from . import diagnose, exports, sandbox
from .link import Encyclopedia, Page
from .model import Reproduce
from .reproduced import Reproduction, Run, digest
from .text import normalize_newlines, visible

# The page and the results file keep the end of an output, where the error is.
KEPT_LINES = 60
KEPT_CHARS = 12_000
PROBE_SECONDS = 120  # importing torch on a cold cache


def clean_output(raw: bytes) -> str:
    """Output as text a page or terminal can show: UTF-8 (invalid bytes replaced), terminal
    colour codes removed, one kind of line break, other control characters made visible."""
    text = diagnose.strip_ansi(raw).decode("utf-8", errors="replace")
    return visible(normalize_newlines(text), lines=True)


def _kept(text: str) -> tuple[str, int]:
    lines = text.rstrip("\n").split("\n")
    cut = max(0, len(lines) - KEPT_LINES)
    kept = "\n".join(lines[cut:])
    if len(kept) > KEPT_CHARS:
        kept = kept[-KEPT_CHARS:].split("\n", 1)[-1]
        cut = len(lines) - kept.count("\n") - 1
    return kept, cut


def run_script(box: sandbox.Box, code: str, reproduce: Reproduce) -> tuple[Run, str]:
    """Run `code` as script.py in the box; return the run and the whole (bounded) output."""
    extra = {"PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    if reproduce.needs == "cpu":
        extra["CUDA_VISIBLE_DEVICES"] = ""  # the same run on a machine that has a GPU
    outcome = box.run(
        [box.python, "script.py"], reproduce.timeout, extra, files={"script.py": code}
    )
    text = clean_output(outcome.output)
    kept, cut = _kept(text)
    return Run(outcome.exit_code, outcome.seconds, kept, cut), text


def _primary_matches(index: diagnose.Index, page: Page, output: str) -> tuple[str | None, set[str]]:
    found = diagnose.diagnose(index, io.BytesIO(output.encode())).matches
    primary = {s.text for s in page.entry.signatures if not s.context}
    first = found[0].id if found else None
    mine = next((m for m in found if m.id == page.id), None)
    matched = {e.signature for e in mine.evidence} & primary if mine else set()
    return first, matched


@dataclass(frozen=True)
class Environment:
    python: str
    torch: str
    platform: str


def environment(box: sandbox.Box) -> Environment:
    """The versions the reproducers run against, as the box sees them; a Python without torch
    is refused."""
    versions = "import platform, torch; print(platform.python_version(), torch.__version__)"
    probe = box.run([box.python, "-c", versions], PROBE_SECONDS, {"CUDA_VISIBLE_DEVICES": ""})
    text = probe.output.decode(errors="replace").strip()
    if probe.exit_code != 0:
        raise ReproduceError(
            f"{box.python} cannot import torch in the box ({text.splitlines()[-1:]}); "
            "install it there, e.g. `make reproduce` makes .venv-torch"
        )
    py, torch = text.split()[-2:]
    return Environment(py, torch, f"{platform.system()} {platform.machine()}")


def _absolute(python: str) -> str:
    """The interpreter as an absolute path, since scripts run in their own folder. A venv's
    python is a symlink: made absolute, not resolved, so it stays the venv's."""
    found = shutil.which(python) if os.sep not in python else python
    if found is None or not os.path.exists(found):
        raise ReproduceError(f"no Python at {python}; pass --python, or run `make reproduce`")
    return os.path.abspath(found)


class ReproduceError(Exception):
    """The reproducers cannot run at all (no torch, an unknown id)."""


def _missing_packages(box: sandbox.Box, packages: Iterable[str]) -> list[str]:
    missing = []
    for name in packages:
        if box.run([box.python, "-c", f"import {name}"], PROBE_SECONDS).exit_code != 0:
            missing.append(name)
    return missing


def reproduce_one(
    page: Page, reproduce: Reproduce, index: diagnose.Index, box: sandbox.Box, env: Environment
) -> Reproduction:
    """Run one entry's scripts in the box and judge them."""
    problems: list[str] = []
    missing = _missing_packages(box, reproduce.packages)
    if missing:
        problems.append(f"the reproducer Python lacks {', '.join(missing)}: install it")
    failing, failing_text = run_script(box, reproduce.failing, reproduce)
    if failing.exit_code is None:
        problems.append(f"the failing script ran past its {reproduce.timeout} s limit")
    elif failing.exit_code == 0:
        problems.append("the failing script succeeded: the failure did not happen")
    first, matched = _primary_matches(index, page, failing_text)
    if first != page.id:
        problems.append(
            f"its output diagnoses to {first} first, not to this entry"
            if first
            else "its output matches no entry: the message may have changed upstream"
        )
    elif not matched:
        problems.append("its output matches only context or symptom lines, no primary signature")
    fixed, fixed_text = run_script(box, reproduce.fixed, reproduce)
    if fixed.exit_code is None:
        problems.append(f"the fixed script ran past its {reproduce.timeout} s limit")
    elif fixed.exit_code != 0:
        problems.append(f"the fixed script failed (exit code {fixed.exit_code})")
    elif _primary_matches(index, page, fixed_text)[1]:
        problems.append("the fixed script still prints this entry's error")
    return Reproduction(
        id=page.id,
        digest=digest(reproduce),
        status="failed" if problems else "passed",
        problems=tuple(problems),
        failing=failing,
        fixed=fixed,
        diagnosed_first=first,
        signatures=tuple(sorted(matched)),
        torch=env.torch,
        python=env.python,
        platform=env.platform,
        date=date.today().isoformat(),
    )


def selected(
    enc: Encyclopedia, ids: Iterable[str], gpu: bool
) -> tuple[list[tuple[Page, Reproduce]], list[str]]:
    """The entries to run, and the ids skipped because they need a GPU. Unknown ids, or ids
    without a reproducer, are refused."""
    wanted = list(ids)
    for entry_id in wanted:
        page = enc.pages.get(entry_id)
        if page is None:
            raise ReproduceError(f"no entry `{entry_id}`")
        if page.entry.reproduce is None:
            raise ReproduceError(f"entry `{entry_id}` has no `reproduce` section")
    chosen, skipped = [], []
    for page in enc.pages.values():
        spec = page.entry.reproduce
        if spec is None or (wanted and page.id not in wanted):
            continue
        if spec.needs == "cuda" and not gpu:
            skipped.append(page.id)
        else:
            chosen.append((page, spec))
    return chosen, skipped


def boxed(python: str, checkout: Path, gpu: bool = False) -> sandbox.Box:
    """The box for the interpreter `python`, hiding `checkout` and the runner's own folders."""
    try:
        return sandbox.make_box(_absolute(python), [checkout], gpu)
    except sandbox.BoxError as err:
        raise ReproduceError(str(err)) from None


def reproduce_all(
    enc: Encyclopedia,
    python: str,
    checkout: Path,
    ids: Iterable[str] = (),
    gpu: bool = False,
    progress: Callable[[Reproduction], None] = lambda r: None,
) -> tuple[list[Reproduction], list[str]]:
    """Run the selected reproducers one after another (gloo reproducers use both cores), each
    in a box that hides `checkout`."""
    chosen, skipped = selected(enc, ids, gpu)
    box = boxed(python, checkout, gpu)
    env = environment(box)
    index = diagnose.Index.from_export(exports.signature_index(enc, "/"))
    results = []
    for page, spec in chosen:
        result = reproduce_one(page, spec, index, box, env)
        progress(result)
        results.append(result)
    return results, skipped
