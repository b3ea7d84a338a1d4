"""Where a benchmark's numbers go: a JSON file and a PNG beside it, under one name."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from rich.console import Console

Result = TypeVar("Result")


def write_report(
    out_dir: Path, stem: str, result: Result, plot: Callable[[Result, Path], None], console: Console
) -> None:
    """<out_dir>/<stem>.json (the result) and <stem>.png (its plot), and a line saying so."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{stem}.json").write_text(json.dumps(result, indent=1) + "\n")
    plot(result, out_dir / f"{stem}.png")
    console.print(f"wrote {out_dir / stem}.json and {stem}.png")


def percentile(values: list[float], q: float) -> float:
    """The value at quantile `q` (0..1) of `values`, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]
