"""Fusion gateway benchmark: fused latency/QPS under concurrency, each leg called directly, the
gateway's own overhead, and the time to answer when a leg hangs.

Assumes the services run (`make serve`, which `make bench` runs first) at the configured addresses.
Indexes the corpus if the indexer does not list it yet: by default the installed `networkx`, `rich`
and `click` packages, about 10,100 chunks (copied under bench/out/fusion-corpus-10k; the first
index takes ~7 minutes here), or any directory with --path (e.g. a CPython stdlib subset).
Then, at --concurrency (16), with every other question in a spelling never sent before (its
embedding and reading cached nowhere: the issue's targets count first-sight questions; --seen-only
for the repeated questions alone, as this bench measured before 2026-12-02):

- fused p50/p99, QPS and server CPU per answer through the gateway (client-side latency): the
  medians of --fused-runs (3) runs back to back, each run's figures printed too, next to the
  machine's speed at the time (`server_cpu.reference_ms`),
- each leg's p50/p99 called directly (same queries, same concurrency),
- gateway overhead = per request, the gateway's took_ms minus its slowest leg's latency (p50/p99),
- time to answer with a hanging vector leg (an in-process fake that never answers) against the
  configured leg timeout (an in-process Gateway over the real sparse and graph legs).

Prints a table and writes bench/results/bench_fusion.json and bench_fusion.png.

    make bench [PATH_TO_INDEX=/usr/lib/python3.11] [BENCH_CONCURRENCY=16] [BENCH_RUNS=3]
    .venv/bin/python -m bench.bench_fusion --path ~/src/cpython/Lib --corpus stdlib
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import random
import shutil
import statistics
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from bench.load import half_first_sight, respellable
from bench.report import write_report
from bench.server_cpu import cpu_by_process, machine_notes, reference_ms, server_roots, statement_costs
from evaluation import REPO_ROOT
from services.fusion.gateway import Gateway, LegClient
from tribrid.config import TriBridConfig, load_config
from tribrid.legs import LEGS
from tribrid.server import ServiceSpec, start_server
from tribrid.stores.postgres import create_pool
from tribrid.v1 import (
    common_pb2,
    fusion_pb2,
    fusion_pb2_grpc,
    graph_pb2_grpc,
    indexer_pb2,
    indexer_pb2_grpc,
    sparse_pb2_grpc,
    vector_pb2_grpc,
)

RESULTS = REPO_ROOT / "bench" / "results"
# A leg's Search RPC on its channel.
LegSearch = grpc.aio.UnaryUnaryMultiCallable[common_pb2.SearchRequest, common_pb2.SearchResponse]
CORPUS_COPY = REPO_ROOT / "bench" / "out" / "fusion-corpus-10k"
console = Console(width=max(Console().width, 120))

QUERIES = [
    "parse command line options",
    "how are environment variables read for options",
    "progress bar rendering",
    "render a table with borders",
    "syntax highlighting of source code",
    "prompt the user for confirmation",
    "format a traceback",
    "BadParameter",
    "get_terminal_size",
    "who calls echo",
    "markup escape square brackets",
    "open a file lazily",
    "Console.print",
    "shell completion for bash",
    "wrap text to a width",
    "convert a value to an integer type",
    "live display refresh",
    "style parsing colors",
    "Context.invoke",
    "measure the width of a renderable",
]


def default_sources() -> list[Path]:
    sources = []
    for name in ("networkx", "rich", "click"):  # ~10.1k chunks together
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            raise SystemExit(f"{name} is not installed; pass --path")
        sources.append(Path(next(iter(spec.submodule_search_locations))))
    return sources


def prepare_corpus_dir(path: Path | None) -> Path:
    if path is not None:
        return path.resolve()
    CORPUS_COPY.mkdir(parents=True, exist_ok=True)
    for source in default_sources():
        target = CORPUS_COPY / source.name
        if not target.exists():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return CORPUS_COPY


async def ensure_indexed(cfg: TriBridConfig, corpus: str, path: Path, reindex: bool) -> dict[str, Any]:
    async with grpc.aio.insecure_channel(cfg.services.address("indexer")) as channel:
        stub = indexer_pb2_grpc.IndexerStub(channel)
        listed = {c.corpus_id: c for c in (await stub.ListCorpora(indexer_pb2.ListCorporaRequest())).corpora}
        if corpus in listed and not reindex:
            info = listed[corpus]
            console.print(f"corpus {corpus}: already indexed ({info.chunks} chunks, {info.files} files)")
            return {"chunks": info.chunks, "files": info.files, "indexed_now": False}
        with Progress(
            TextColumn("indexing {task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
        ) as progress:
            task = progress.add_task(f"{corpus} ({path})", total=None)
            last = indexer_pb2.IndexProgress()
            async for event in stub.IndexCorpus(
                indexer_pb2.IndexCorpusRequest(corpus_id=corpus, path=str(path))
            ):
                last = event
                progress.update(task, total=event.chunks_to_embed or None, completed=event.chunks_embedded)
        console.print(
            f"corpus {corpus}: {last.chunks_total} chunks, {last.files_seen} files in {last.elapsed_s:.0f}s"
        )
        return {"chunks": last.chunks_total, "files": last.files_seen, "indexed_now": True}


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


async def run_load(
    label: str,
    call: Callable[[str], Awaitable[Any]],
    requests: int,
    concurrency: int,
    progress: Progress,
    first_sight_from: int | None = None,
) -> tuple[list[float], list[Any], float, int]:
    """`requests` calls over `concurrency` workers; (latencies ms, replies, wall seconds, errors).
    `first_sight_from`: every other question in a spelling never sent before, numbered from it."""
    task = progress.add_task(label, total=requests)
    latencies: list[float] = []
    replies: list[Any] = []
    errors = 0
    counter = iter(range(requests))
    respelled = respellable(QUERIES)

    async def worker() -> None:
        nonlocal errors
        for i in counter:
            if first_sight_from is None:
                query = QUERIES[i % len(QUERIES)]
            else:
                query = half_first_sight(QUERIES, respelled, i, first_sight_from)
            started = time.perf_counter()
            try:
                replies.append(await call(query))
                latencies.append((time.perf_counter() - started) * 1000)
            except grpc.aio.AioRpcError:
                errors += 1
            progress.advance(task)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies, replies, time.perf_counter() - started, errors


class HangingVector(vector_pb2_grpc.VectorSearchServicer):
    async def Search(
        self,
        request: common_pb2.SearchRequest,
        context: grpc.aio.ServicerContext[common_pb2.SearchRequest, common_pb2.SearchResponse],
    ) -> common_pb2.SearchResponse:
        await asyncio.sleep(3600)
        return common_pb2.SearchResponse()


async def hanging_leg(cfg: TriBridConfig, corpus: str, samples: int, progress: Progress) -> dict[str, Any]:
    servicer = HangingVector()
    spec = ServiceSpec(
        "tribrid.v1.VectorSearch", lambda s: vector_pb2_grpc.add_VectorSearchServicer_to_server(servicer, s)
    )
    server = await start_server([spec], "127.0.0.1", 0)
    # the vector leg hangs; the others are the running services
    addresses = {leg.name: cfg.services.address(leg.name) for leg in LEGS} | {
        "vector": f"127.0.0.1:{server.port}"
    }
    legs = {leg.name: LegClient(leg, addresses[leg.name]) for leg in LEGS}
    pool = await create_pool(cfg.postgres, cfg.embedding.dim, cfg.vector, max_size=2)
    gateway = Gateway(cfg.fusion, cfg.limits, legs, pool)
    times: list[float] = []
    task = progress.add_task("hanging vector leg", total=samples)
    try:
        for i in range(samples):
            started = time.perf_counter()
            reply = await gateway.search(
                common_pb2.SearchRequest(corpus_id=corpus, query=QUERIES[i % len(QUERIES)]),
                remaining_s=cfg.fusion.default_deadline_ms / 1000,
            )
            times.append((time.perf_counter() - started) * 1000)
            assert reply.partial
            progress.advance(task)
    finally:
        await gateway.close()
        await pool.close()
        await server.stop(0)
    return {
        "leg_timeout_ms": cfg.fusion.leg_timeout_ms,
        "time_to_answer_p50_ms": pct(times, 50),
        "time_to_answer_p99_ms": pct(times, 99),
        "over_timeout_p50_ms": pct(times, 50) - cfg.fusion.leg_timeout_ms,
        "samples": len(times),
    }


# The spellings one fused run may send (half of its requests): the next run starts past them.
_RUN_SPELLINGS = 10**5
# Each direct leg's spellings start at a multiple of this, past every fused run's.
_LEG_SPELLINGS = 10**6


def fused_run(
    lat: list[float],
    replies: list[Any],
    wall: float,
    errors: int,
    cpu_before: dict[str, float],
    cpu_after: dict[str, float],
) -> dict[str, Any]:
    """One fused run's figures. CPU by process too: on a machine whose speed moves between runs,
    the processes a change does not touch are the control to compare the others with."""
    cpu_ms = {
        kind: 1000 * (cpu_after[kind] - cpu_before.get(kind, 0.0)) / max(len(lat), 1) for kind in cpu_after
    }
    return {
        "p50_ms": pct(lat, 50),
        "p99_ms": pct(lat, 99),
        "qps": len(lat) / wall,
        "errors": errors,
        "partial": sum(r.partial for r in replies),
        # services + PostgreSQL + FalkorDB, per answered request (the load client excluded)
        "server_cpu_ms_per_query": sum(cpu_ms.values()),
        "server_cpu_ms_by_process": dict(sorted(cpu_ms.items(), key=lambda kv: -kv[1])),
    }


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each figure's median over the runs back to back (how the issue's targets are counted);
    errors and partial answers summed."""
    processes = {kind for run in runs for kind in run["server_cpu_ms_by_process"]}
    by_process = {
        kind: statistics.median(run["server_cpu_ms_by_process"].get(kind, 0.0) for run in runs)
        for kind in processes
    }
    return {
        **{
            key: statistics.median(run[key] for run in runs)
            for key in ("p50_ms", "p99_ms", "qps", "server_cpu_ms_per_query")
        },
        "errors": sum(run["errors"] for run in runs),
        "partial": sum(run["partial"] for run in runs),
        "server_cpu_ms_by_process": dict(sorted(by_process.items(), key=lambda kv: -kv[1])),
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    cfg = load_config()
    path = prepare_corpus_dir(args.path)
    corpus_info = await ensure_indexed(cfg, args.corpus, path, args.reindex)
    timeout = 30.0
    channels = {
        name: grpc.aio.insecure_channel(cfg.services.address(name))
        for name in ("fusion", "vector", "sparse", "graph")
    }
    fusion = fusion_pb2_grpc.FusionStub(channels["fusion"])
    leg_searches: dict[str, LegSearch] = {
        "vector": vector_pb2_grpc.VectorSearchStub(channels["vector"]).Search,
        "sparse": sparse_pb2_grpc.SparseSearchStub(channels["sparse"]).Search,
        "graph": graph_pb2_grpc.GraphSearchStub(channels["graph"]).Search,
    }

    def request(query: str, top_k: int | None = None) -> common_pb2.SearchRequest:
        req = common_pb2.SearchRequest(corpus_id=args.corpus, query=query)
        if top_k is not None:
            req.top_k = top_k
        return req

    # the gateway asks each leg for this many candidates: call the legs directly the same way
    leg_top_k = min(max(cfg.fusion.final_k, cfg.fusion.candidates_per_leg), cfg.limits.max_top_k)
    # a number no earlier run started from, so no spelling is cached from one
    first_sight_from = None if args.seen_only else random.SystemRandom().getrandbits(24) << 20
    result: dict[str, Any] = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "corpus": args.corpus,
        "path": str(path),
        **corpus_info,
        "concurrency": args.concurrency,
        "requests": args.requests,
        "first_sight_share": 0.0 if args.seen_only else 0.5,
    }
    try:
        with Progress(
            TextColumn("{task.description:<22}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
        ) as progress:
            # warm-up: query embeddings cached, connections and plans ready
            await run_load(
                "warm-up", lambda q: fusion.Search(request(q), timeout=timeout), len(QUERIES), 4, progress
            )
            roots = server_roots(cfg)
            result["reference_ms"] = reference_ms()
            runs: list[dict[str, Any]] = []
            replies: list[Any] = []
            for number in range(args.fused_runs):
                cpu_before = cpu_by_process(roots)
                lat, run_replies, wall, errors = await run_load(
                    f"fused {number + 1}/{args.fused_runs}",
                    lambda q: fusion.Search(request(q), timeout=timeout),
                    args.requests,
                    args.concurrency,
                    progress,
                    # new spellings in each run: each of them counts first sights
                    None if first_sight_from is None else first_sight_from + number * _RUN_SPELLINGS,
                )
                cpu_after = cpu_by_process(roots)
                runs.append(fused_run(lat, run_replies, wall, errors, cpu_before, cpu_after))
                replies += run_replies
            overhead = [
                r.took_ms
                - max(
                    (leg.latency_ms for leg in r.legs if leg.status == fusion_pb2.LEG_STATUS_OK), default=0.0
                )
                for r in replies
            ]
            result["fused"] = {
                **median_run(runs),
                "gateway_took_p50_ms": pct([r.took_ms for r in replies], 50),
                "reply_bytes_mean": sum(r.ByteSize() for r in replies) / max(len(replies), 1),
                "runs": runs,
            }
            result["postgresql_statement_costs"] = await statement_costs(cfg)
            result["gateway_overhead"] = {"p50_ms": pct(overhead, 50), "p99_ms": pct(overhead, 99)}
            result["legs_in_gateway_p50_ms"] = {
                leg.name: pct(
                    [report.latency_ms for r in replies for report in r.legs if report.leg == leg.value], 50
                )
                for leg in LEGS
            }
            result["legs_direct"] = {}
            for leg_number, (name, search) in enumerate(leg_searches.items(), start=1):

                def direct(q: str, search: LegSearch = search) -> Awaitable[common_pb2.SearchResponse]:
                    return search(request(q, leg_top_k), timeout=timeout)

                lat, _, wall, errors = await run_load(
                    f"{name} (direct)",
                    direct,
                    args.requests,
                    args.concurrency,
                    progress,
                    None if first_sight_from is None else first_sight_from + leg_number * _LEG_SPELLINGS,
                )
                result["legs_direct"][name] = {
                    "p50_ms": pct(lat, 50),
                    "p99_ms": pct(lat, 99),
                    "qps": len(lat) / wall,
                    "errors": errors,
                }
            result["hanging_leg"] = await hanging_leg(cfg, args.corpus, args.hang_samples, progress)
    finally:
        for channel in channels.values():
            await channel.close()
    return result


def show(result: dict[str, Any]) -> None:
    table = Table(
        title=f"fusion bench: corpus {result['corpus']} ({result['chunks']} chunks), "
        f"concurrency {result['concurrency']}, {result['requests']} requests each, "
        f"{result['first_sight_share']:.0%} of the questions seen for the first time"
    )
    for col in ("what", "p50 ms", "p99 ms", "QPS", "errors"):
        table.add_column(col, justify="left" if col == "what" else "right")
    fused = result["fused"]
    runs = fused.get("runs", [])
    table.add_row(
        f"fused (client), median of {len(runs)}" if len(runs) > 1 else "fused (client)",
        f"{fused['p50_ms']:.1f}",
        f"{fused['p99_ms']:.1f}",
        f"{fused['qps']:.0f}",
        str(fused["errors"]),
    )
    for name, leg in result["legs_direct"].items():
        table.add_row(
            f"{name} direct",
            f"{leg['p50_ms']:.1f}",
            f"{leg['p99_ms']:.1f}",
            f"{leg['qps']:.0f}",
            str(leg["errors"]),
        )
    over = result["gateway_overhead"]
    table.add_row("gateway overhead", f"{over['p50_ms']:.2f}", f"{over['p99_ms']:.2f}", "", "")
    hang = result["hanging_leg"]
    table.add_row(
        f"hanging leg (timeout {hang['leg_timeout_ms']} ms)",
        f"{hang['time_to_answer_p50_ms']:.0f}",
        f"{hang['time_to_answer_p99_ms']:.0f}",
        "",
        "",
    )
    console.print(table)
    median = "median " if len(runs) > 1 else ""
    console.print(
        f"server CPU per fused query: {median}{fused['server_cpu_ms_per_query']:.2f} ms "
        "(services + PostgreSQL + FalkorDB; the load client excluded); by process: "
        + ", ".join(f"{k} {v:.2f}" for k, v in fused["server_cpu_ms_by_process"].items() if v >= 0.01)
    )
    if len(runs) > 1:  # each run, to paste into a closing note with the medians
        console.print(
            "fused runs back to back: p50 "
            + " / ".join(f"{run['p50_ms']:.1f}" for run in runs)
            + " ms, p99 "
            + " / ".join(f"{run['p99_ms']:.1f}" for run in runs)
            + " ms, QPS "
            + " / ".join(f"{run['qps']:.0f}" for run in runs)
            + ", CPU "
            + " / ".join(f"{run['server_cpu_ms_per_query']:.2f}" for run in runs)
            + " ms per answer"
        )
    for note in machine_notes(result):
        console.print(note)
    console.print(
        f"partial fused answers under load: {fused['partial']}; legs inside the gateway p50 ms: "
        + ", ".join(f"{k} {v:.1f}" for k, v in result["legs_in_gateway_p50_ms"].items())
    )


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = ["fused", *result["legs_direct"]]
    p50 = [result["fused"]["p50_ms"], *(leg["p50_ms"] for leg in result["legs_direct"].values())]
    p99 = [result["fused"]["p99_ms"], *(leg["p99_ms"] for leg in result["legs_direct"].values())]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    xs = range(len(names))
    ax1.bar([x - 0.2 for x in xs], p50, width=0.4, label="p50")
    ax1.bar([x + 0.2 for x in xs], p99, width=0.4, label="p99")
    ax1.set_xticks(list(xs), names)
    ax1.set_ylabel("ms")
    ax1.set_title(f"latency at concurrency {result['concurrency']}")
    ax1.legend()
    hang = result["hanging_leg"]
    ax2.bar(
        ["leg timeout", "answer p50", "answer p99"],
        [hang["leg_timeout_ms"], hang["time_to_answer_p50_ms"], hang["time_to_answer_p99_ms"]],
        color=["grey", "tab:blue", "tab:orange"],
    )
    ax2.set_ylabel("ms")
    ax2.set_title("time to answer with a hanging leg")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--path", type=Path, default=None, help="directory to index (default: installed click + rich)"
    )
    parser.add_argument("--corpus", default="bench-fusion-10k")
    parser.add_argument("--reindex", action="store_true", help="index even if the corpus is listed")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--requests", type=int, default=800, help="requests per measurement")
    parser.add_argument(
        "--fused-runs",
        type=int,
        default=3,
        choices=range(1, 10),
        metavar="1-9",
        help="fused runs back to back; the table gives their medians (3: as the targets count)",
    )
    parser.add_argument("--hang-samples", type=int, default=10)
    parser.add_argument(
        "--seen-only", action="store_true", help="repeated questions only (no first-sight spellings)"
    )
    args = parser.parse_args()
    if args.requests > _RUN_SPELLINGS:  # the next run's spellings would repeat this one's
        parser.error(f"--requests: at most {_RUN_SPELLINGS}")
    result = asyncio.run(run(args))
    show(result)
    write_report(RESULTS, "bench_fusion", result, plot, console)


if __name__ == "__main__":
    main()
