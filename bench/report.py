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


def grouped_bars(
    groups: dict[str, dict[str, float]], path: Path, title: str, ylabel: str = "nDCG@10"
) -> None:
    """A PNG of one bar per series within each group (group -> series -> value, the same series in
    each), on a 0..1 axis."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = list(next(iter(groups.values())))
    fig, ax = plt.subplots(figsize=(10, 4))
    width = 0.8 / len(series)
    for i, name in enumerate(series):
        heights = [values[name] for values in groups.values()]
        ax.bar([j + i * width for j in range(len(groups))], heights, width, label=name)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(groups))], list(groups), fontsize=7, rotation=20)
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7, ncol=4)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
