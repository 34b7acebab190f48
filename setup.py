"""Packaging: the wheel carries the shipped entries' exports (generator/shipped/), built here
from entries/ so that an installed `encyclopedia` works outside the repository."""

from __future__ import annotations

import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


class BuildWithShippedEntries(build_py):
    def run(self) -> None:
        super().run()
        sys.path.insert(0, str(HERE))
        from generator.terminal.sources import write_shipped

        for path in write_shipped(HERE / "entries", Path(self.build_lib) / "generator" / "shipped"):
            self.announce(f"wrote {path}", level=2)


setup(cmdclass={"build_py": BuildWithShippedEntries})
