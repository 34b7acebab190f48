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
import json
import os
import platform
import re
import shutil
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from .. import diagnose
from ..diagnose.from_entries import signature_record
from ..pages import exports
from ..read.link import Encyclopedia, Page
from ..read.model import CURRENT_SET, Reproduce, SetRun, is_slug
from ..read.reproduced import Reproduction, Run, Status, digest
from ..read.text import normalize_newlines, visible
from . import sandbox

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


def run_script(
    box: sandbox.Box, code: str, reproduce: Reproduce, release: ReleaseSet | None = None
) -> tuple[Run, str]:
    """Run `code` as script.py in the box, on `release` (default: the interpreter's own);
    return the run and the whole (bounded) output."""
    extra = {"PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    extra.update(release.variables() if release else {})
    if reproduce.needs == "cpu":
        extra["CUDA_VISIBLE_DEVICES"] = ""  # the same run on a machine that has a GPU
    outcome = box.run(
        [box.python, "script.py"], reproduce.timeout, extra, files={"script.py": code}
    )
    text = clean_output(outcome.output)
    kept, cut = _kept(text)
    return Run(outcome.exit_code, outcome.seconds, kept, cut), text


def _primary_index(page: Page) -> diagnose.Index:
    """An index of this entry's primary signatures (its own and its symptom rows') alone, to ask
    which of them an output holds: a diagnosis keeps only the first few lines of evidence, and a
    traceback's context lines can come before the error line."""
    record = signature_record(page, "/")
    primary = [s for s in record["signatures"] if not s["context"]]
    return diagnose.Index.from_export([{**record, "causes": [], "signatures": primary}])


@dataclass(frozen=True)
class _Outcome:
    run: Run
    first: str | None  # the entry the output diagnoses to first
    matched: frozenset[str]  # the entry's primary signatures the output holds


def _outcome(run: Run, output: str, index: diagnose.Index, primary: diagnose.Index) -> _Outcome:
    found = diagnose.diagnose(index, io.BytesIO(output.encode())).matches
    mine = diagnose.diagnose(primary, io.BytesIO(output.encode())).matches
    matched = frozenset(e.signature for m in mine for e in m.evidence)
    return _Outcome(run, found[0].id if found else None, matched)


@dataclass(frozen=True)
class ReleaseSet:
    """A set of releases the reproducers run on: the interpreter's own (`current`), or a folder
    of other releases installed over it, which comes first on the import path."""

    name: str
    overlay: Path | None = None

    def variables(self) -> dict[str, str]:
        return {"PYTHONPATH": str(self.overlay.resolve())} if self.overlay else {}


def release_sets(folder: Path | None) -> dict[str, ReleaseSet]:
    """`current` and one set per subfolder of `folder` (`make reproduce` installs each from
    scripts/reproduce-sets/NAME.txt into the torch venv's sets/NAME)."""
    sets = {CURRENT_SET: ReleaseSet(CURRENT_SET)}
    if folder is not None and folder.is_dir():
        for sub in sorted(folder.iterdir()):
            if sub.is_dir() and is_slug(sub.name) and sub.name != CURRENT_SET:
                sets[sub.name] = ReleaseSet(sub.name, sub)
    return sets


@dataclass(frozen=True)
class Environment:
    """What one set of releases gives the scripts of one reproducer, as the box sees it."""

    python: str
    versions: tuple[str, ...]  # "torch 2.14.1", then the distributions of each package imported
    platform: str
    missing: tuple[str, ...]  # packages that did not import, with the error


# Imports torch and each package named on the command line; prints one JSON line.
PROBE = """
import importlib, importlib.metadata as md, json, platform, sys
import torch
found, missing = ["torch " + torch.__version__], []
owners = md.packages_distributions()
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except Exception as err:
        missing.append(f"{name} ({type(err).__name__}: {str(err)[:200]})")
        continue
    for dist in dict.fromkeys(owners.get(name, [name])):
        try:
            found.append(f"{dist} {md.version(dist)}")
        except md.PackageNotFoundError:
            pass
print(json.dumps([platform.python_version(), found, missing]))
"""


def environment(box: sandbox.Box, release: ReleaseSet, packages: Iterable[str] = ()) -> Environment:
    """The versions a reproducer runs against on `release`; a Python without torch is refused."""
    variables = {"CUDA_VISIBLE_DEVICES": "", **release.variables()}
    argv = [box.python, "-c", PROBE, *packages]
    probe = box.run(argv, PROBE_SECONDS, variables)
    text = probe.output.decode(errors="replace").strip()
    if probe.exit_code != 0:
        raise ReproduceError(
            f"{box.python} cannot import torch in the box with the {release.name} releases "
            f"({text.splitlines()[-1:]}); install it there, e.g. `make reproduce` makes .venv-torch"
        )
    py, versions, missing = json.loads(text.splitlines()[-1])
    where = f"{platform.system()} {platform.machine()}"
    return Environment(py, tuple(versions), where, tuple(missing))


def _absolute(python: str) -> str:
    """The interpreter as an absolute path, since scripts run in their own folder. A venv's
    python is a symlink: made absolute, not resolved, so it stays the venv's."""
    found = shutil.which(python) if os.sep not in python else python
    if found is None or not os.path.exists(found):
        raise ReproduceError(f"no Python at {python}; pass --python, or run `make reproduce`")
    return os.path.abspath(found)


class ReproduceError(Exception):
    """The reproducers cannot run at all (no torch, an unknown id)."""


def _import_error(run: Run) -> str | None:
    """The import error a script that exited non-zero stopped with, if any: a reason of the
    environment's, not of the failure the entry describes."""
    if run.exit_code in (0, None):
        return None
    lines = [line for line in run.output.splitlines() if _IMPORT_ERROR.match(line)]
    return lines[-1].strip() if lines else None


_IMPORT_ERROR = re.compile(r"^\s*(ModuleNotFoundError|ImportError): ")


def _judged(
    page: Page, expect: str, outcomes: tuple[_Outcome, _Outcome], timeout: int
) -> tuple[list[str], list[str]]:
    """What went wrong (`problems`: the entry may be wrong) and what kept the run from saying
    (`broken`), for the failing and the fixed run."""
    failing, first, matched = outcomes[0].run, outcomes[0].first, outcomes[0].matched
    fixed, fixed_matched = outcomes[1].run, outcomes[1].matched
    problems: list[str] = []
    broken: list[str] = []
    for name, run in (("failing", failing), ("fixed", fixed)):
        if run.exit_code is None:
            broken.append(f"the {name} script ran past its {timeout} s limit")
    if expect == "fails":
        if failing.exit_code == 0:
            problems.append("the failing script succeeded: the failure did not happen")
        if first != page.id:
            problems.append(
                f"its output diagnoses to {first} first, not to this entry"
                if first
                else "its output matches no entry: the message may have changed upstream"
            )
        elif not matched:
            problems.append(
                "its output matches only context or symptom lines, no primary signature"
            )
    else:
        if failing.exit_code not in (0, None):
            problems.append(
                f"the failing script failed (exit code {failing.exit_code}), where the entry "
                "says these releases run it"
            )
        if matched:
            problems.append(
                "the failing script printed this entry's error, which the entry says these "
                "releases do not"
            )
    if fixed.exit_code not in (0, None):
        problems.append(f"the fixed script failed (exit code {fixed.exit_code})")
    elif fixed_matched:
        problems.append("the fixed script still prints this entry's error")
    for name, run, mine in (("failing", failing, matched), ("fixed", fixed, fixed_matched)):
        stopped = _import_error(run)
        if stopped and not mine:
            broken.append(f"the {name} script stopped at an import: {stopped}")
    return problems, broken


def reproduce_one(
    page: Page,
    reproduce: Reproduce,
    index: diagnose.Index,
    box: sandbox.Box,
    env: Environment,
    run_on: SetRun | None = None,
    release: ReleaseSet | None = None,
) -> Reproduction:
    """Run one entry's scripts on one set of releases in the box and judge them."""
    run_on = run_on or reproduce.runs[0]
    release = release or ReleaseSet(CURRENT_SET)
    primary = _primary_index(page)
    failing, fixed = (
        _outcome(*run_script(box, code, reproduce, release), index, primary)
        for code in (reproduce.failing, reproduce.fixed)
    )
    problems, broken = _judged(page, run_on.expect, (failing, fixed), reproduce.timeout)
    if env.missing:
        broken.insert(0, f"the {release.name} releases lack {'; '.join(env.missing)}: install them")
    status: Status = "broken" if broken else "failed" if problems else "passed"
    return Reproduction(
        id=page.id,
        digest=digest(reproduce),
        set=release.name,
        expect=run_on.expect,
        versions=env.versions,
        status=status,
        problems=tuple(broken + problems),
        failing=failing.run,
        fixed=fixed.run,
        diagnosed_first=failing.first,
        signatures=tuple(sorted(failing.matched)),
        torch=env.versions[0].split()[-1],
        python=env.python,
        platform=env.platform,
        date=date.today().isoformat(),
    )


def not_installed(page: Page, reproduce: Reproduce, run_on: SetRun) -> Reproduction:
    """The result for a set of releases that is not installed here: broken, nothing ran."""
    nothing = Run(None, 0.0, "")
    return Reproduction(
        id=page.id,
        digest=digest(reproduce),
        set=run_on.set,
        expect=run_on.expect,
        versions=(),
        status="broken",
        problems=(
            f"the {run_on.set} releases are not installed: `make reproduce` installs "
            f"scripts/reproduce-sets/{run_on.set}.txt",
        ),
        failing=nothing,
        fixed=nothing,
        diagnosed_first=None,
        signatures=(),
        torch="",
        python="",
        platform="",
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


def boxed(
    python: str, checkout: Path, gpu: bool = False, overlays: Iterable[Path] = ()
) -> sandbox.Box:
    """The box for the interpreter `python`, hiding `checkout` and the runner's own folders and
    showing the `overlays` of other releases."""
    try:
        return sandbox.make_box(_absolute(python), [checkout], gpu, overlays)
    except sandbox.BoxError as err:
        raise ReproduceError(str(err)) from None


Task = tuple[Page, Reproduce, SetRun]


def reproduce_all(
    enc: Encyclopedia,
    python: str,
    checkout: Path,
    ids: Iterable[str] = (),
    gpu: bool = False,
    progress: Callable[[Reproduction], None] = lambda r: None,
    sets_folder: Path | None = None,
    jobs: int = 1,
) -> tuple[list[Reproduction], list[str]]:
    """Run the selected reproducers on each set of releases they name, each in a box that
    hides `checkout`: `jobs` at a time, except those that start several processes (gloo
    ranks), which run alone so that their ranks have the cores."""
    chosen, skipped = selected(enc, ids, gpu)
    sets = release_sets(sets_folder)
    overlays = [r.overlay for r in sets.values() if r.overlay is not None]
    box = boxed(python, checkout, gpu, overlays)
    environment(box, sets[CURRENT_SET])  # refuses a Python without torch before anything runs
    index = exports.matcher(enc)
    tasks = [(page, spec, run) for page, spec in chosen for run in spec.runs]
    probes: dict[tuple[str, tuple[str, ...]], Environment] = {}
    lock = threading.Lock()

    def one(task: Task) -> Reproduction:
        page, spec, run_on = task
        release = sets.get(run_on.set)
        if release is None:
            result = not_installed(page, spec, run_on)
        else:
            key = (release.name, spec.packages)
            if key not in probes:  # two threads may both probe once; the answer is the same
                probes[key] = environment(box, release, spec.packages)
            result = reproduce_one(page, spec, index, box, probes[key], run_on, release)
        with lock:
            progress(result)
        return result

    alone = [t for t in tasks if t[1].processes > 1]
    shared = [t for t in tasks if t[1].processes == 1]
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        results = list(pool.map(one, shared))
    results += [one(task) for task in alone]
    return results, skipped
