"""Time `mkdocs build` of the shipped entries and of N synthetic entries; print figures.

Usage: python scripts/bench_build.py [N]   (default 1000)

The synthetic entries are copies of every shipped entry under new ids (related links kept
inside each copy set), so the build does the same work per page as for real content.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def build(entries: Path, site: Path) -> float:
    env = {**os.environ, "ENCYCLOPEDIA_ENTRIES": str(entries), "NO_MKDOCS_2_WARNING": "1"}
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
        cwd=ROOT,
        env=env,
        check=True,
    )
    return time.perf_counter() - start


def synthetic(target: Path, count: int) -> int:
    shipped = sorted(p for p in (ROOT / "entries").glob("*/*.yaml") if p.name != "_category.yaml")
    for category in (ROOT / "entries").glob("*/_category.yaml"):
        (target / category.parent.name).mkdir(parents=True, exist_ok=True)
        shutil.copy(category, target / category.parent.name / "_category.yaml")
    made, copy = 0, 0
    while made < count:
        for path in shipped:
            if made >= count:
                break
            data = yaml.safe_load(path.read_text())
            suffix = f"-copy{copy}"
            data["title"] = f"{data['title']} (copy {copy})"
            data["related"] = [{**r, "id": r["id"] + suffix} for r in data.get("related", [])]
            data.pop("aliases", None)
            # A signature may not be claimed by two unrelated entries: make each copy's unique.
            data["signatures"] = [
                s + suffix if isinstance(s, str) else {**s, "text": s["text"] + suffix}
                for s in data["signatures"]
            ]
            out = target / path.parent.name / f"{path.stem}{suffix}.yaml"
            out.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False))
            made += 1
        copy += 1
    # Links to ids of a copy set that was cut short would dangle: drop them.
    ids = {p.stem for p in target.glob("*/*.yaml")}
    for path in target.glob("*/*.yaml"):
        if path.name == "_category.yaml":
            continue
        data = yaml.safe_load(path.read_text())
        kept = [r for r in data.get("related", []) if r["id"] in ids]
        if kept != data.get("related", []):
            data["related"] = kept
            path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False))
    return made


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        seconds = build(ROOT / "entries", tmp / "shipped")
        shipped = len(
            [p for p in (ROOT / "entries").glob("*/*.yaml") if p.name != "_category.yaml"]
        )
        print(f"shipped site, {shipped} entries: {seconds:.1f} s")
        made = synthetic(tmp / "entries", count)
        seconds = build(tmp / "entries", tmp / "big")
        pages = list((tmp / "big").rglob("index.html"))
        sizes = sorted(p.stat().st_size for p in pages)
        print(
            f"{made} synthetic entries: {seconds:.1f} s, {len(pages)} pages, median page "
            f"{sizes[len(sizes) // 2] / 1024:.0f} KiB, largest {sizes[-1] / 1024:.0f} KiB"
        )


if __name__ == "__main__":
    main()
