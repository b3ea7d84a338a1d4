"""Two `make eval` results side by side: every set, leg and metric that moved, the largest change,
and the fused nDCG@10 of each set before and after (a markdown table).

    .venv/bin/python -m evaluation.compare before/eval-latest.json evals/results/eval-latest.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

LEGS = ("vector", "sparse", "graph", "fusion")
METRICS = ("ndcg10", "recall10")


def moved(
    before: dict[str, Any], after: dict[str, Any], tolerance: float
) -> list[tuple[str, str, str, float, float]]:
    """(set, leg, metric, before, after) for every figure that moved by more than `tolerance`."""
    rows = []
    for name in sorted(before.keys() & after.keys()):
        for leg in LEGS:
            if leg in before[name] and leg in after[name]:
                for metric in METRICS:
                    x, y = before[name][leg][metric], after[name][leg][metric]
                    if abs(y - x) > tolerance:
                        rows.append((name, leg, metric, x, y))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--tolerance", type=float, default=0.0005)
    args = parser.parse_args()
    before = json.loads(args.before.read_text())["summary"]
    after = json.loads(args.after.read_text())["summary"]
    rows = moved(before, after, args.tolerance)
    print(
        f"{len(before.keys() & after.keys())} sets; {len(rows)} figures moved by more than {args.tolerance}"
    )
    for name, leg, metric, x, y in rows:
        print(f"  {name:40s} {leg:7s} {metric:8s} {x:.3f} -> {y:.3f} ({y - x:+.3f})")
    print("\n| set | fused nDCG@10 before | after |\n|---|---|---|")
    for name in sorted(before.keys() & after.keys()):
        if "fusion" in before[name] and "fusion" in after[name]:
            print(
                f"| {name} | {before[name]['fusion']['ndcg10']:.3f} | {after[name]['fusion']['ndcg10']:.3f} |"
            )


if __name__ == "__main__":
    main()
