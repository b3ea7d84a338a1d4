"""Hedged leg calls: the gateway's p50/p99 with a leg on two replicas, both healthy and with one
slowed by 200 ms, hedging off and on, and how many more leg calls hedging costs.

Self-contained: embedded PostgreSQL and FalkorDB on free ports under --state-dir, every service in
this process on ephemeral ports, the installed `click` package indexed there. The vector leg gets
two replicas, each a real gRPC server forwarding to the vector service (tests/slow_replica.py), one
of them after --slow-ms. Queries run one at a time, the configurations alternating; the first
--warm queries of each configuration fill the latency windows (min_samples per endpoint: about 2 x 20 calls
for two replicas) and are not counted.

Prints a table and writes bench/results/bench_hedging.json and bench_hedging.png.

    make bench-hedging
    .venv/bin/python -m bench.bench_hedging --rounds 13 --warm 50 --slow-ms 200
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench import click_corpus
from bench.click_corpus import index_once
from bench.procstack import in_process_stack
from bench.report import percentile, write_report
from evaluation import REPO_ROOT
from services.fusion.gateway import Gateway, LegClient
from tests.slow_replica import SlowReplica, slow_replica
from tribrid.legs import BY_NAME, LEGS
from tribrid.v1 import common_pb2, legs_pb2

RESULTS = REPO_ROOT / "bench" / "results"
CORPUS = "bench-techniques"  # the same indexed click as bench_techniques, when its state dir is shared
console = Console(width=max(Console().width, 120))
CASES = ("healthy", "one slow")


async def _run_case(
    gateway: Gateway, replicas: tuple[SlowReplica, SlowReplica], hedge: bool, queries: list[str], warm: int
) -> dict[str, Any]:
    took: list[float] = []
    hedged = 0
    before = sum(r.calls for r in replicas)
    for i, query in enumerate(queries):
        request = common_pb2.SearchRequest(corpus_id=CORPUS, query=query, top_k=10)
        request.options.fusion.enable_hedging = hedge
        started = time.perf_counter()
        reply = await gateway.search(request, remaining_s=30)
        if i >= warm:
            took.append((time.perf_counter() - started) * 1000)
            hedged += any(r.hedged for r in reply.legs if r.leg == legs_pb2.LEG_VECTOR)
    calls = sum(r.calls for r in replicas) - before
    return {
        "n": len(took),
        "p50_ms": statistics.median(took),
        "p99_ms": percentile(took, 0.99),
        "max_ms": max(took),
        "hedged": hedged,
        "vector_calls_per_answer": calls / len(queries),
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    vector = BY_NAME["vector"]
    queries = [q for _ in range(args.rounds) for q in click_corpus.QUERIES]
    results: dict[str, dict[str, Any]] = {}
    async with in_process_stack(Path(args.state_dir), "tribrid_bench_techniques", "tribrid_bt_") as (
        cfg,
        resources,
        servers,
    ):
        await index_once(servers["indexer"].port, Path(args.path), CORPUS, console)
        pool = await resources.pool()
        target = f"127.0.0.1:{servers['vector'].port}"
        async with (
            slow_replica(vector.service, target, 0.0) as a,
            slow_replica(vector.service, target, 0.0) as b,
        ):
            for case in CASES:
                b.delay_s = args.slow_ms / 1000 if case == "one slow" else 0.0
                for hedge in (False, True):
                    # a fresh gateway per configuration: its latency windows start empty
                    legs = {
                        leg.name: LegClient(
                            leg,
                            f"ipv4:{a.address},{b.address}"
                            if leg.name == "vector"
                            else f"127.0.0.1:{servers[leg.name].port}",
                            hedging=cfg.fusion.hedging,
                        )
                        for leg in LEGS
                    }
                    gateway = Gateway(cfg.fusion, cfg.limits, legs, pool)
                    label = f"{case}, hedging {'on' if hedge else 'off'}"
                    with console.status(label):
                        results[label] = await _run_case(gateway, (a, b), hedge, queries, args.warm)
                    await gateway.close()
    healthy_p99 = results["healthy, hedging on"]["p99_ms"]
    return {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "slow_ms": args.slow_ms,
        "percentile": cfg.fusion.hedging.percentile,
        "queries": len(queries),
        "warm": args.warm,
        "results": results,
        "p99_slow_over_healthy": results["one slow, hedging on"]["p99_ms"] / healthy_p99,
        "extra_calls_healthy": results["healthy, hedging on"]["vector_calls_per_answer"]
        / results["healthy, hedging off"]["vector_calls_per_answer"]
        - 1,
    }


def show(result: dict[str, Any]) -> None:
    table = Table(title=f"vector leg on two replicas, one slowed by {result['slow_ms']} ms in 'one slow'")
    for col in ("configuration", "n", "p50 ms", "p99 ms", "max ms", "hedged", "vector calls / answer"):
        table.add_column(col, justify="left" if col == "configuration" else "right")
    for label, row in result["results"].items():
        table.add_row(
            label,
            str(row["n"]),
            f"{row['p50_ms']:.1f}",
            f"{row['p99_ms']:.1f}",
            f"{row['max_ms']:.1f}",
            str(row["hedged"]),
            f"{row['vector_calls_per_answer']:.3f}",
        )
    console.print(table)
    console.print(
        f"p99 one slow / healthy, hedging on: {result['p99_slow_over_healthy']:.2f}x; "
        f"extra vector calls when healthy: {result['extra_calls_healthy']:+.1%}"
    )


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = list(result["results"])
    fig, ax = plt.subplots(figsize=(9, 4))
    ax.bar(labels, [result["results"][x]["p50_ms"] for x in labels], label="p50")
    ax.scatter(labels, [result["results"][x]["p99_ms"] for x in labels], color="black", label="p99", zorder=3)
    ax.set_ylabel("fused answer, ms")
    ax.set_title(f"hedged leg calls: one of two vector replicas slowed by {result['slow_ms']} ms")
    ax.tick_params(axis="x", labelrotation=10)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--path", default=str(click_corpus.default_root()), help="directory to index (default: click)"
    )
    parser.add_argument("--rounds", type=int, default=13, help="rounds over the queries per configuration")
    parser.add_argument("--warm", type=int, default=50, help="first queries per configuration not counted")
    parser.add_argument("--slow-ms", type=int, default=200, help="the slow replica's added latency")
    parser.add_argument(
        "--state-dir",
        default="/tmp/tribrid-bench-techniques",
        help="stores' data (shared with bench-techniques)",
    )
    args = parser.parse_args()
    result = asyncio.run(run(args))
    show(result)
    write_report(RESULTS, "bench_hedging", result, plot, console)


if __name__ == "__main__":
    main()
