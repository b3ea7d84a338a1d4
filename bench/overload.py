"""Overload: the gateway's Search driven at 4x its saturation concurrency, with and without the
in-flight bound (`services.max_in_flight`), on a stack of its own (bench/procstack.py).

1. Saturation: closed-loop load at concurrency 1, 2, 4, ... for --step-s each, every service
   unbounded; the saturation concurrency is the last before throughput stops rising (less than
   --rise more than the step before).
2. 4x saturation, unbounded: requests queue in the services.
3. Every service restarted with max_in_flight = the saturation concurrency (or --limit), then 4x
   saturation again: a call beyond the bound is answered RESOURCE_EXHAUSTED at once; a worker
   whose call was refused waits --backoff-ms before its next, as a client retrying would.

For each 4x run: the shed fraction (RESOURCE_EXHAUSTED answers of all), p50/p99 of the accepted
requests, and the resident memory (VmRSS) of each service process before and after. Every query
carries a new word (no answer from caches alone). Prints tables and writes
bench/results/overload.json and overload.png.

    make overload [OVERLOAD_STEP_S=6]
    .venv/bin/python -m bench.overload --step-s 6 --run-s 20
"""

from __future__ import annotations

import argparse
import asyncio
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench import click_corpus
from bench.faults import CORPUS, GatewayLoad
from bench.load import percentile
from bench.procstack import SERVICE_NAMES, ProcessStack, process_rss_mb, stack_config
from bench.report import write_report
from evaluation import REPO_ROOT

RESULTS = REPO_ROOT / "bench" / "results"
console = Console(width=max(Console().width, 140))


async def drive(
    stack: ProcessStack, concurrency: int, seconds: float, args: argparse.Namespace
) -> dict[str, Any]:
    """`concurrency` workers on the gateway for `seconds`: counts, accepted latencies, RSS."""
    rss_before = {name: round(process_rss_mb(proc.pid), 1) for name, proc in stack.procs.items()}
    load = GatewayLoad(
        stack.address("fusion"), concurrency, args.deadline_s, corpus=CORPUS, backoff_s=args.backoff_ms / 1000
    )
    async with load:
        await asyncio.sleep(seconds)
    answers = load.answers
    accepted = sorted(1000 * a.elapsed_s for a in answers if a.code == "OK")
    codes = Counter(a.code for a in answers)
    return {
        "concurrency": concurrency,
        "seconds": seconds,
        "requests": len(answers),
        "ok_per_s": round(len(accepted) / seconds, 1),
        "codes": dict(codes),
        "shed_fraction": round(codes["RESOURCE_EXHAUSTED"] / len(answers), 4) if answers else 0.0,
        "partial": sum(1 for a in answers if a.code == "OK" and a.partial),
        "accepted_ms": {
            "p50": round(percentile(accepted, 50), 1),
            "p99": round(percentile(accepted, 99), 1),
            "max": round(accepted[-1], 1) if accepted else 0.0,
        },
        "rss_mb_before": rss_before,
        "rss_mb_after": {name: round(process_rss_mb(proc.pid), 1) for name, proc in stack.procs.items()},
    }


async def restart_all(stack: ProcessStack, max_in_flight: int) -> None:
    stack.stop_all()
    stack.env["TRIBRID_SERVICES__MAX_IN_FLIGHT"] = str(max_in_flight)
    await stack.start_all()


async def run(args: argparse.Namespace) -> dict[str, Any]:
    cfg = stack_config(Path(args.state_dir), "tribrid_overload", "tribrid_overload_")
    stack = ProcessStack(cfg, env={"TRIBRID_SERVICES__MAX_IN_FLIGHT": "0"})
    stack.stores_up()
    try:
        await stack.start_all()
        indexed = await stack.index(CORPUS, Path(args.path))
        if indexed.done:
            console.print(f"indexed {args.path}: {indexed.chunks_total} chunks in {indexed.elapsed_s:.1f} s")
        await drive(stack, 2, 3, args)  # warm: model, connections, plans
        steps: list[dict[str, Any]] = []
        saturation = 1
        concurrency = 1
        while concurrency <= args.max_concurrency:
            step = await drive(stack, concurrency, args.step_s, args)
            steps.append(step)
            console.print(
                f"concurrency {concurrency}: {step['ok_per_s']} answers/s,"
                f" p99 {step['accepted_ms']['p99']} ms"
            )
            if len(steps) > 1 and step["ok_per_s"] < steps[-2]["ok_per_s"] * (1 + args.rise):
                break
            saturation = concurrency
            concurrency *= 2
        overload = 4 * saturation
        limit = args.limit or saturation
        unbounded = await drive(stack, overload, args.run_s, args)
        await restart_all(stack, limit)
        await drive(stack, 2, 3, args)
        bounded = await drive(stack, overload, args.run_s, args)
    finally:
        stack.stop_all()
        stack.stores_down()
    return {
        "created": datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ"),
        "corpus": str(args.path),
        "deadline_ms": round(1000 * args.deadline_s),
        "backoff_ms": args.backoff_ms,
        "saturation_steps": steps,
        "saturation_concurrency": saturation,
        "overload_concurrency": overload,
        "max_in_flight": limit,
        "runs": {"unbounded": unbounded, f"max_in_flight={limit}": bounded},
    }


def show(result: dict[str, Any]) -> None:
    steps = Table(title="finding saturation (every service unbounded)")
    for col in ("concurrency", "answers/s", "p50 ms", "p99 ms"):
        steps.add_column(col, justify="right")
    for step in result["saturation_steps"]:
        lat = step["accepted_ms"]
        steps.add_row(
            str(step["concurrency"]), f"{step['ok_per_s']:.1f}", f"{lat['p50']:.0f}", f"{lat['p99']:.0f}"
        )
    console.print(steps)
    runs = Table(
        title=f"gateway Search at 4x saturation ({result['overload_concurrency']} workers; saturation "
        f"{result['saturation_concurrency']}), deadline {result['deadline_ms']} ms"
    )
    for col in (
        "services",
        "requests",
        "answers/s",
        "shed",
        "partial",
        "p50 ms",
        "p99 ms",
        "max ms",
        "other codes",
    ):
        runs.add_column(col, justify="left" if col in ("services", "other codes") else "right")
    for name, run_result in result["runs"].items():
        lat = run_result["accepted_ms"]
        other = {k: v for k, v in run_result["codes"].items() if k not in ("OK", "RESOURCE_EXHAUSTED")}
        runs.add_row(
            name,
            str(run_result["requests"]),
            f"{run_result['ok_per_s']:.1f}",
            f"{100 * run_result['shed_fraction']:.1f} %",
            str(run_result["partial"]),
            f"{lat['p50']:.0f}",
            f"{lat['p99']:.0f}",
            f"{lat['max']:.0f}",
            " ".join(f"{k}={v}" for k, v in sorted(other.items())) or "-",
        )
    console.print(runs)
    rss = Table(title="resident memory of each service process, MiB: before -> after the 4x run")
    rss.add_column("services")
    for name in SERVICE_NAMES:
        rss.add_column(name, justify="right")
    for name, run_result in result["runs"].items():
        rss.add_row(
            name,
            *(
                f"{run_result['rss_mb_before'][s]:.0f} -> {run_result['rss_mb_after'][s]:.0f}"
                for s in SERVICE_NAMES
            ),
        )
    console.print(rss)


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    steps = result["saturation_steps"]
    axes[0].plot([s["concurrency"] for s in steps], [s["ok_per_s"] for s in steps], marker="o")
    axes[0].axvline(result["saturation_concurrency"], color="red", linestyle="--", label="saturation")
    axes[0].set_xscale("log", base=2)
    axes[0].set_xlabel("concurrency")
    axes[0].set_ylabel("answers/s")
    axes[0].legend()
    names = list(result["runs"])
    axes[1].bar(names, [result["runs"][n]["accepted_ms"]["p99"] for n in names], label="p99 of accepted")
    for i, name in enumerate(names):
        axes[1].annotate(
            f"shed {100 * result['runs'][name]['shed_fraction']:.0f} %", (i, 0), ha="center", va="bottom"
        )
    axes[1].set_ylabel("ms")
    axes[1].set_title(f"4x saturation ({result['overload_concurrency']} workers)")
    axes[1].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    default_path = click_corpus.default_root()
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--path", default=str(default_path), help="directory to index (default: click)")
    parser.add_argument("--step-s", type=float, default=6.0, help="seconds per saturation step")
    parser.add_argument("--run-s", type=float, default=20.0, help="seconds of each 4x run")
    parser.add_argument("--rise", type=float, default=0.1, help="a step must raise throughput this much")
    parser.add_argument("--max-concurrency", type=int, default=64)
    parser.add_argument("--limit", type=int, default=0, help="max_in_flight (default: the saturation)")
    parser.add_argument("--deadline-s", type=float, default=5.0)
    parser.add_argument("--backoff-ms", type=float, default=50.0, help="a refused worker's pause")
    parser.add_argument("--state-dir", default="/tmp/tribrid-bench-overload", help="the stores' data")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    result = asyncio.run(run(args))
    show(result)
    write_report(args.out, "overload", result, plot, console)


if __name__ == "__main__":
    main()
