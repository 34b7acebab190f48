"""Print the diagnose matcher's recall on the corpus of real logs in tests/recall/: top-1 and
top-3 over the in-scope cases, and how many out-of-scope logs get a confident answer.

Usage: python scripts/recall.py [--entries DIR] [--cases DIR] [--misses]"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the corpus loader is the tests' (tests/recall_cases.py)

from generator.pages import exports  # noqa: E402
from generator.pipeline import build_encyclopedia  # noqa: E402
from tests.recall_cases import load_cases, run  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=Path, default=ROOT / "entries")
    parser.add_argument("--cases", type=Path, default=ROOT / "tests" / "recall")
    parser.add_argument("--misses", action="store_true", help="list every miss")
    args = parser.parse_args()
    enc = build_encyclopedia(args.entries)
    index = exports.matcher(enc)
    outcomes = [run(index, case) for case in load_cases(args.cases)]
    scope = [o for o in outcomes if o.case.expect]
    out = [o for o in outcomes if not o.case.expect]
    top1 = sum(o.top1 for o in scope)
    top3 = sum(o.top3 for o in scope)
    print(f"in scope: {len(scope)} logs from {len({o.case.source for o in scope})} threads")
    print(f"  right entry first:  {top1} ({100 * top1 / len(scope):.1f}%)")
    print(f"  right entry top 3:  {top3} ({100 * top3 / len(scope):.1f}%)")
    print(f"  nothing matched:    {sum(not o.ids for o in scope)}")
    print(f"  wrong entry first:  {sum(bool(o.ids) and not o.top1 for o in scope)}")
    print(
        "  marked as a miss (decisive line not in the log): "
        f"{sum(bool(o.case.miss) for o in scope)}"
    )
    print(
        f"out of scope: {len(out)} logs; confident answer: {sum(o.confident for o in out)}, "
        f"any answer: {sum(bool(o.ids) for o in out)}"
    )
    if args.misses:
        for o in scope:
            if not o.top1:
                print(f"  MISS {o.case.name}: got {list(o.ids[:3]) or 'nothing'}")
        for o in out:
            if o.ids:
                print(f"  OUT {o.case.name}: got {list(o.ids[:3])} confident={o.confident}")


if __name__ == "__main__":
    main()
