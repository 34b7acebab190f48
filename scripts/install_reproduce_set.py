"""Install one set of other releases for the reproducers: the pins of a
scripts/reproduce-sets/NAME.txt file and whatever they need that the current set lacks or has
at another version, into a folder that comes first on the scripts' import path.

Usage: python scripts/install_reproduce_set.py SET_FILE TARGET_DIR  (run with the torch venv's
Python; `make reproduce` does it). pip resolves the set against the installed current set
(`--dry-run --report`), so torch and everything that already fits stay shared; only the
distributions it would change are installed, without dependencies, into TARGET_DIR."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def changed_pins(set_file: Path) -> list[str]:
    """`name==version` for each distribution pip would install to satisfy `set_file` here."""
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report.json"
        pip = [sys.executable, "-m", "pip", "install", "--quiet", "--dry-run"]
        subprocess.run([*pip, "--report", str(report), "-r", str(set_file)], check=True)
        planned = json.loads(report.read_text(encoding="utf-8"))["install"]
    return [f"{p['metadata']['name']}=={p['metadata']['version']}" for p in planned]


def main() -> None:
    set_file, target = Path(sys.argv[1]), Path(sys.argv[2])
    pins = changed_pins(set_file)
    shutil.rmtree(target, ignore_errors=True)
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target"]
    subprocess.run([*pip, str(target), *pins], check=True)
    print(f"{set_file.stem}: {len(pins)} distributions over the current set: {' '.join(pins)}")


if __name__ == "__main__":
    main()
