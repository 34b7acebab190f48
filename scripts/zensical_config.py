"""Write zensical.yml from mkdocs.yml, so that the two builders' settings have one source.

Zensical builds the folder `encyclopedia render` writes (it runs no MkDocs plugins), with
Material's classic look and one style sheet of its own; everything else is mkdocs.yml's, comments
included. `make zensical.yml` runs this; tests/test_hosts.py checks that the file is up to date.

Usage: python scripts/zensical_config.py [--check]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEADER = (
    "# Made from mkdocs.yml by scripts/zensical_config.py (`make zensical.yml`): edit mkdocs.yml,\n"
    "# not this file. Zensical builds the folder `encyclopedia render build/rendered` writes.\n"
)
# (line of mkdocs.yml, what Zensical's file has instead)
REPLACED = {
    "docs_dir: site_assets": "docs_dir: build/rendered",
    "site_dir: site": "site_dir: build/site-zensical",
    "  name: material": (
        "  name: material\n"
        "  # The look of Material for MkDocs, whose header and search box the overrides and CSS"
        " target.\n"
        "  variant: classic"
    ),
    "  - css/encyclopedia.css": (
        "  - css/encyclopedia.css\n"
        "  - css/zensical.css  # Zensical only: the header search box (Material's CSS styles it"
        " otherwise)"
    ),
}
DROPPED_BLOCK = "plugins:"  # the encyclopedia plugin is MkDocs' only: Zensical reads its output


def zensical_config(mkdocs_yml: str) -> str:
    """zensical.yml's text for the given mkdocs.yml text. Raises ValueError when a line this
    rewrites is missing (mkdocs.yml changed shape: update REPLACED)."""
    lines = mkdocs_yml.split("\n")
    missing = [line for line in (*REPLACED, DROPPED_BLOCK) if line not in lines]
    if missing:
        raise ValueError(f"mkdocs.yml has no line {missing[0]!r}; update {Path(__file__).name}")
    out: list[str] = []
    dropping = False
    for line in lines:
        if line == DROPPED_BLOCK:
            dropping = True
            continue
        if dropping:
            if line.startswith((" ", "#")):
                continue
            dropping = False
            if not line:
                continue  # the blank line that ended the block
        out.append(REPLACED.get(line, line))
    return HEADER + "\n".join(out)


def main() -> int:
    wanted = zensical_config((ROOT / "mkdocs.yml").read_text())
    target = ROOT / "zensical.yml"
    if "--check" in sys.argv[1:]:
        if target.read_text() != wanted:
            print("zensical.yml is out of date with mkdocs.yml: run `make zensical.yml`")
            return 1
        return 0
    target.write_text(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main())
