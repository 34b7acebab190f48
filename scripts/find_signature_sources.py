"""Find where each unproven primary signature is printed from, and say so in its entry.

A primary signature that no example log of its entry holds must name its `source` (see
`encyclopedia check`). This script downloads the current release of each package below (through
`generator.prove.releases`, cached), looks in every file of it for the literal pieces of each such
signature with the same test `encyclopedia verify` applies, and writes
`source: {package, version, file}` into the entry for the first package that holds it (a package
the entry's `affects` names first). What it cannot find is listed: those need a real log.

    .venv/bin/python scripts/find_signature_sources.py [--write] [PACKAGE==VERSION ...]
"""

from __future__ import annotations

import argparse
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import ahocorasick_rs
from packaging.version import InvalidVersion, Version

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from generator.diagnose import pieces  # noqa: E402
from generator.prove.releases import IndexUnreachable, PackageIndex  # noqa: E402
from generator.prove.verify import text_in  # noqa: E402
from generator.read.load import Loaded, load_all  # noqa: E402
from generator.read.rules import all_signatures, unproven_signatures  # noqa: E402

# Searched in this order. torch is the release this machine kind installs (the reproducers' pin).
PACKAGES = [
    "torch==2.14.1",
    "transformers",
    "peft",
    "trl",
    "accelerate",
    "datasets",
    "tokenizers",
    "safetensors",
    "huggingface-hub",
    "deepspeed",
    "bitsandbytes",
    "xformers",
    "triton",
    "lightning",
    "vllm",
    "nvidia-nccl-cu12",
    "nvidia-cuda-runtime-cu12",
    "cuda-bindings",
    "sentence-transformers",
    "optimum",
    "torchao",
    "webdataset",
    "gptqmodel",
    "llmcompressor",
]
SKIP_SUFFIXES = (".pyc", ".png", ".jpg", ".gif", ".svg", ".ttf", ".woff", ".woff2", ".pdf")
MAX_MEMBER = 3 * 1024**3


@dataclass(frozen=True)
class Wanted:
    loaded: Loaded
    path: tuple[str | int, ...]
    text: str


def newest(index: PackageIndex, package: str) -> str | None:
    best: Version | None = None
    for raw in index.releases(package):
        try:
            version = Version(raw)
        except InvalidVersion:
            continue
        if not version.is_prerelease and (best is None or version > best):
            best = version
    return str(best) if best else None


def files(archive: Path):  # type: ignore[no-untyped-def]
    """(name, bytes) of every file in a wheel or an sdist, names as `member` takes them."""
    if archive.name.endswith((".whl", ".zip")):
        with zipfile.ZipFile(archive) as zipped:
            for info in zipped.infolist():
                small = not info.is_dir() and info.file_size < MAX_MEMBER
                if small and not info.filename.endswith(SKIP_SUFFIXES):
                    yield info.filename, zipped.read(info)
        return
    with tarfile.open(archive) as tar:
        for member in tar:
            if member.isfile() and not member.name.endswith(SKIP_SUFFIXES):
                extracted = tar.extractfile(member)
                if extracted is not None:
                    yield member.name.split("/", 1)[-1], extracted.read()


def search(archive: Path, wanted: list[Wanted]) -> dict[int, str]:
    """Index in `wanted` -> the first file of the archive that holds that signature."""
    # Bytes with ASCII lower-cased, as `data.lower()` gives: a piece outside Latin-1 never
    # occurs there, so it is left out (its signature cannot be found, as before).
    latin = sorted({p for w in wanted for p in pieces(w.text) if all(ord(c) < 256 for c in p)})
    automaton = ahocorasick_rs.BytesAhoCorasick([p.encode("latin-1") for p in latin])
    found: dict[int, str] = {}
    for name, data in files(archive):
        matches = automaton.find_matches_as_indexes(data.lower(), overlapping=True)
        hits = {latin[which] for which, _, _ in matches}
        if not hits:
            continue
        for n, item in enumerate(wanted):
            if n not in found and set(pieces(item.text)) <= hits and text_in(item.text, data):
                found[n] = name
    return found


def insert_source(path: Path, loaded: Loaded, sig_path: tuple[str | int, ...], src: str) -> bool:
    """Write `source:` into the entry file under the signature; False when its form is not the
    simple one (a one-line text) this script edits."""
    lines = path.read_text(encoding="utf-8").split("\n")
    line, col = loaded.source.position((*sig_path, "text"))
    key_line, key_col = loaded.source.position((*sig_path, "text"), key=True)
    if (key_line, key_col) != (line, col):  # a mapping: `- text: "..."`
        indent = " " * (key_col - 1)
        lines.insert(key_line, f"{indent}source: {src}")
    else:  # a plain item: `- "..."`
        item_line, item_col = loaded.source.position(sig_path)
        text = lines[item_line - 1]
        dash = text.rfind("- ", 0, item_col - 1)
        if dash < 0:
            return False
        indent = text[:dash]
        lines[item_line - 1] = f"{indent}- text: {text[item_col - 1 :]}"
        lines.insert(item_line, f"{indent}  source: {src}")
    path.write_text("\n".join(lines), encoding="utf-8")
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="edit the entry files")
    parser.add_argument("packages", nargs="*", help="PACKAGE or PACKAGE==VERSION (default: all)")
    args = parser.parse_args()
    result = load_all(ROOT / "entries")
    wanted: list[Wanted] = []
    unproven = {(p.path, p.line, p.col) for p in unproven_signatures(result.entries)}
    for loaded in result.entries:
        for sig_path, sig in all_signatures(loaded.entry):
            if (loaded.path, *loaded.source.position(sig_path)) in unproven:
                wanted.append(Wanted(loaded, sig_path, sig.text))
    print(f"{len(wanted)} unproven signatures in {len({w.loaded.id for w in wanted})} entries")
    index = PackageIndex()
    chosen: dict[int, tuple[str, str, str]] = {}
    for spec in args.packages or PACKAGES:
        package, _, version = spec.partition("==")
        version = version or newest(index, package) or ""
        if not version:
            print(f"{package}: no release found")
            continue
        left = [n for n in range(len(wanted)) if n not in chosen]
        try:
            archive = index.archive(package, version)
        except IndexUnreachable as err:
            print(f"{package}=={version}: skipped ({str(err)[:120]})")
            continue
        found = search(archive, [wanted[n] for n in left])
        for k, name in found.items():
            n = left[k]
            affects = " ".join(wanted[n].loaded.entry.affects).lower()
            earlier = chosen.get(n)
            if earlier is None or (package.split("-")[0] in affects and earlier[0] not in affects):
                chosen[n] = (package, version, name)
        print(f"{package}=={version}: {len(found)} found; {len(wanted) - len(chosen)} left")
    for n, item in enumerate(wanted):
        if n not in chosen:
            print(f"  not found: {item.loaded.path}: {item.text}")
    if args.write:
        # Bottom-up within each file, so earlier line numbers stay right.
        order = sorted(
            chosen,
            key=lambda n: (
                wanted[n].loaded.path,
                -wanted[n].loaded.source.position(wanted[n].path)[0],
            ),
        )
        skipped = 0
        for n in order:
            package, version, name = chosen[n]
            src = f'{{package: {package}, version: "{version}", file: {name}}}'
            if not insert_source(
                ROOT / wanted[n].loaded.path, wanted[n].loaded, wanted[n].path, src
            ):
                skipped += 1
        print(f"wrote {len(chosen) - skipped} sources; {skipped} left for a hand edit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
