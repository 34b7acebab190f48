"""`encyclopedia verify`: what the package index can prove about the entries.

- A signature with a `source` is found in that file of that release: the release is downloaded
  (cached) and the signature's literal pieces are looked for in the file, in order and close
  together (a binary file: each piece anywhere in it, since a library's strings are laid out
  as the compiler likes).
- Every version an entry's `applies_to` names after a package the index holds (`PyTorch 2.5`,
  `Accelerate 1.9.0 and later`, `flash-attn 2.x`) is a release or a series of releases of it.
- A `raised` rule's `source` is a file of that release that defines the rule's function.
- Every pin of the reproducers' requirements file, and of each set of other releases beside it, is a
  release.

`check` (offline) makes sure each primary signature can be proven at all: by an example log
that holds it, or by a `source` that this command then confirms.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..read.load import Loaded
from ..read.model import Signature, SignatureSource
from ..read.pattern import normalise, pieces
from ..read.problems import Problem
from ..read.rules import all_signatures, problem_at
from .releases import IndexUnreachable, PackageIndex, member

# The pieces of a message must lie this close together in a text file.
WINDOW = 4000
# Names an `applies_to` line gives a package by, and the package's name on the index.
PACKAGES = {
    "pytorch": "torch",
    "torch": "torch",
    "transformers": "transformers",
    "peft": "peft",
    "trl": "trl",
    "accelerate": "accelerate",
    "deepspeed": "deepspeed",
    "bitsandbytes": "bitsandbytes",
    "datasets": "datasets",
    "tokenizers": "tokenizers",
    "safetensors": "safetensors",
    "vllm": "vllm",
    "lightning": "lightning",
    "pytorch lightning": "pytorch-lightning",
    "flash-attn": "flash-attn",
    "flash_attn": "flash-attn",
    "xformers": "xformers",
    "triton": "triton",
    "huggingface_hub": "huggingface-hub",
    "huggingface-hub": "huggingface-hub",
    "numpy": "numpy",
    "torchao": "torchao",
    "optimum": "optimum",
    "torchvision": "torchvision",
    "torchaudio": "torchaudio",
    "protobuf": "protobuf",
}
# Names whose versions the index does not hold: a version after one is not checked.
OTHERS = (
    "cuda",
    "cudnn",
    "python",
    "nccl",
    "driver",
    "rocm",
    "nvidia-smi",
    "macos",
    "ubuntu",
    "windows",
    "gcc",
    "glibc",
    "flashattention",
    "xla",
    "jax",
    "slurm",
)
_NAMES = sorted([*PACKAGES, *OTHERS], key=len, reverse=True)
_NAME = re.compile(
    r"(?<![\w.-])(" + "|".join(re.escape(n) for n in _NAMES) + r")(?![\w-]|\.[A-Za-z_])",
    re.IGNORECASE,
)
_VERSION = re.compile(
    r"(?<![\w.#/+-])v?(\d+(?:\.(?:\d+|x))+(?:(?:rc|a|b|\.post|\.dev)\d+)?)(?!\.?\w)"
)
_PIN = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([0-9][0-9A-Za-z.+!-]*)\s*(#.*)?$")


@dataclass(frozen=True)
class Mention:
    package: str  # the index's name of the package named last before the version
    version: str
    start: int  # where the version is in the line
    leading: str | None = None  # the package the line starts with (`transformers: ...`)

    @property
    def packages(self) -> tuple[str, ...]:
        """The packages the version may be of: a line such as `transformers: torch.load needs
        torch 2.6 from 4.52` gives its own package's versions after naming another."""
        if self.leading is None or self.leading == self.package:
            return (self.package,)
        return (self.package, self.leading)


def mentions(line: str) -> Iterator[Mention]:
    """The versions a line names, each with the package named last before it (none after a
    name the index does not hold, such as CUDA)."""
    events = [(m.start(), "name", m.group(1).lower()) for m in _NAME.finditer(line)]
    events += [(m.start(1), "version", m.group(1)) for m in _VERSION.finditer(line)]
    current: str | None = None
    leading: str | None = None
    for n, (start, kind, text) in enumerate(sorted(events)):
        if kind == "name":
            current = PACKAGES.get(text)
            if n == 0:
                leading = current
        elif current is not None:
            yield Mention(current, text, start, leading)


def text_in(signature: str, data: bytes) -> bool:
    """True when the signature's literal pieces are in the file (see the module docstring)."""
    wanted = pieces(signature)
    if not wanted:
        return False
    if b"\0" in data[:8192]:
        lowered = data.lower()
        return all(p.encode() in lowered for p in wanted)
    text = data.decode("utf-8", errors="replace")
    # Python and C split a long message into adjacent literals: read them joined as well.
    joined = re.sub(r"""(["'])\s*\\?\s*\n\s*[rbfuRBFU]{0,2}(["'])""", "", text)
    return any(_in_order(wanted, normalise(view)) for view in (text, joined))


def _in_order(wanted: Sequence[str], text: str) -> bool:
    start = text.find(wanted[0])
    while start >= 0:
        pos = start + len(wanted[0])
        for piece in wanted[1:]:
            pos = text.find(piece, pos)
            if pos < 0 or pos - start > WINDOW:
                break
            pos += len(piece)
        else:
            return True
        start = text.find(wanted[0], start + 1)
    return False


def _release_file(where: SignatureSource, index: PackageIndex) -> bytes | str:
    """The file a source names, read from its release, or why it cannot be."""
    spec = f"{where.package}=={where.version}"
    if not index.has(where.package, where.version):
        return f"{spec} is not a release on the package index"
    data = member(index.archive(where.package, where.version, where.platform), where.file)
    return f"{spec} has no file {where.file}" if data is None else data


def source_problem(sig: Signature, where: SignatureSource, index: PackageIndex) -> str | None:
    """Why the source does not hold the signature, or None when it does."""
    data = _release_file(where, index)
    if isinstance(data, str):
        return data
    if not text_in(sig.text, data):
        return (
            f"the text of this signature is not in {where.file} of {where.package}=={where.version}"
        )
    return None


def frame_problem(function: str | None, where: SignatureSource, index: PackageIndex) -> str | None:
    """Why the source does not hold a `raised` rule's frame (the file, defining the function),
    or None when it does."""
    data = _release_file(where, index)
    if isinstance(data, str):
        return data
    if (
        function is not None
        and re.search(rb"\bdef %s\(" % re.escape(function.encode()), data) is None
    ):
        return f"{where.file} of {where.package}=={where.version} defines no function `{function}`"
    return None


def entry_problems(loaded: Loaded, index: PackageIndex) -> list[Problem]:
    """What the index disproves of one entry. IndexUnreachable propagates."""
    problems = []
    for path, sig in all_signatures(loaded.entry):
        if sig.source is not None and (wrong := source_problem(sig, sig.source, index)):
            fix = "copy the text from that file as it is, or name the release and file it is in"
            problems.append(problem_at(loaded, (*path, "source"), wrong, fix))
    for n, rule in enumerate(loaded.entry.raised):
        if wrong := frame_problem(rule.function, rule.source, index):
            fix = "name the release whose file defines the function, or correct the function"
            problems.append(problem_at(loaded, ("raised", n, "source"), wrong, fix))
    applies = loaded.entry.applies_to
    if applies is not None:
        lines: list[tuple[tuple[str | int, ...], str]] = [
            (("applies_to", "versions", n), v) for n, v in enumerate(applies.versions)
        ]
        if applies.fixed_in:
            lines.append((("applies_to", "fixed_in"), applies.fixed_in))
        for path, line in lines:
            for found in mentions(line):
                if not any(index.has(p, found.version) for p in found.packages):
                    named = " nor ".join(found.packages)
                    problems.append(
                        problem_at(
                            loaded,
                            path,
                            f"`{found.version}` is not a release of {named} on the package index"
                            if len(found.packages) == 1
                            else f"`{found.version}` is a release of neither {named}",
                            "correct the version (`pip index versions "
                            f"{found.package}` lists them), or leave it out",
                        )
                    )
    return problems


def pin_problems(requirements: Path, index: PackageIndex) -> list[Problem]:
    """Every `name==version` line of a requirements file is a release."""
    if not requirements.is_file():
        return []
    problems = []
    for number, line in enumerate(requirements.read_text(encoding="utf-8").splitlines(), 1):
        pin = _PIN.match(line)
        if pin and not index.has(pin[1], pin[2]):
            problems.append(
                Problem(
                    str(requirements),
                    number,
                    1,
                    f"`{pin[2]}` is not a release of {pin[1]} on the package index",
                    f"pin a release (`pip index versions {pin[1]}` lists them)",
                )
            )
    return problems


def pin_files(requirements: Path) -> list[Path]:
    """The reproducers' requirements file and the sets of other releases beside it
    (`reproduce-sets/NAME.txt`)."""
    return [requirements, *sorted((requirements.parent / "reproduce-sets").glob("*.txt"))]


def verify(
    entries: Iterable[Loaded], index: PackageIndex, requirements: Path | None = None
) -> list[Problem]:
    """Every entry's index-backed claims, then the pins of the reproducers' sets of releases."""
    problems: list[Problem] = []
    for loaded in entries:
        problems += entry_problems(loaded, index)
    for pins in pin_files(requirements) if requirements is not None else []:
        problems += pin_problems(pins, index)
    return problems


__all__ = ["IndexUnreachable", "Mention", "mentions", "text_in", "verify"]
