"""The guard against the next slowdown (`make bench-quick`, a few minutes): fused answers over gRPC
and over the HTTP bridge, one at a time and eight at a time, on the `click` package the install
brings, with half the questions seen for the first time (a new spelling of a question of several
words: its embedding and its reading are not cached anywhere; until 2026-12-02 a one-word question,
a quarter of the mix, was asked again instead). Each phase reports answers/s, p50 and p99, and
the server's CPU per answer: every service process, PostgreSQL and FalkorDB, read from /proc (the
load generator's own CPU is not in it). HTTP is asked with urllib3 (blocking, a kept-alive connection
per worker thread), so the bridge's overhead is the bridge's and not an async client's (httpx costs
about 2 ms more per call on these cores). The four phases run in turn, --rounds times
back to back, and each figure is the median of its rounds: on a shared machine one round can be
slowed by another job. The bridge's overhead is measured in each round on its own (`bridge_overhead`).
Before each round, the CPU time of a fixed pure-Python workload (`reference_ms`) says how fast the
machine ran then: on these shared cores it changed by half within an hour, every process alike, so
two runs compare through their CPU per answer over their reference.

Writes bench/results/bench-quick.{json,png} and the README's performance table (between its
`bench-quick` markers), so the table always shows the last run.

    make bench-quick                      # after make serve (it indexes click once)
    .venv/bin/python -m bench.bench_quick --seconds 10 --rounds 3
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import json
import random
import re
import statistics
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
import urllib3
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from bench.bench_fusion import ensure_indexed
from bench.click_corpus import default_root
from bench.load import half_first_sight, respellable
from bench.report import write_report
from bench.server_cpu import (
    cpu_by_process,
    machine_notes,
    reference_ms,
    server_roots,
    statement_costs,
    statement_costs_note,
)
from evaluation import REPO_ROOT
from tribrid.config import TriBridConfig, load_config
from tribrid.v1 import common_pb2, fusion_pb2_grpc

CORPUS = "bench-quick"
RESULTS = REPO_ROOT / "bench" / "results"
README = REPO_ROOT / "README.md"
MARKERS = ("<!-- bench-quick -->", "<!-- /bench-quick -->")
TOP_K = 10
QUESTIONS = 240
console = Console(width=max(Console().width, 120))


def questions(root: Path, count: int = QUESTIONS) -> list[str]:
    """Questions about the corpus's own code, every kind: a name alone, who calls it or what
    extends it, its docstring's first line, and prose around the name; shuffled with a fixed seed."""
    out: list[str] = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.ClassDef) or node.name.startswith("_"):
                continue
            out.append(node.name)
            kind = "subclasses of" if isinstance(node, ast.ClassDef) else "who calls"
            out.append(f"{kind} {node.name}")
            out.append(f"how does {node.name} work")
            lines = (ast.get_docstring(node) or "").strip().splitlines()
            if lines and len(lines[0]) > 20:  # a blank docstring has no first line
                out.append(lines[0])
    unique = list(dict.fromkeys(out))
    random.Random(31).shuffle(unique)
    return unique[:count]


@dataclass
class Phase:
    transport: str
    concurrency: int
    answers: int = 0
    errors: int = 0
    seconds: float = 0.0
    answers_per_s: float = 0.0
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    cpu_ms_per_answer: float = 0.0
    first_sight: float = 0.5
    # the same, by process: each service, "postgresql", "falkordb"
    cpu_ms_by_process: dict[str, float] = field(default_factory=dict)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))] if ordered else 0.0


async def run_phase(
    cfg: TriBridConfig,
    phase: Phase,
    ask: Callable[[str], Awaitable[object]],
    mix: list[str],
    seconds: float,
    first_sight_from: int,
    progress: Progress,
) -> Phase:
    """Ask for `seconds`: request i asks mix[i], every other one in a spelling never sent before."""
    latencies: list[float] = []
    counter = iter(range(10**9))
    respelled = respellable(mix)
    roots = server_roots(cfg)
    stop_at = time.perf_counter() + seconds
    task = progress.add_task(f"{phase.transport} x{phase.concurrency}", total=seconds)

    async def worker() -> None:
        while time.perf_counter() < stop_at:
            i = next(counter)
            query = half_first_sight(mix, respelled, i, first_sight_from)
            started = time.perf_counter()
            try:
                await ask(query)
                latencies.append((time.perf_counter() - started) * 1000)
            except (grpc.aio.AioRpcError, urllib3.exceptions.HTTPError):
                phase.errors += 1

    cpu_before = cpu_by_process(roots)
    started = time.perf_counter()
    workers = asyncio.gather(*(worker() for _ in range(phase.concurrency)))
    while not workers.done():
        await asyncio.wait([workers], timeout=0.25)
        progress.update(task, completed=min(seconds, time.perf_counter() - started))
    await workers
    phase.seconds = time.perf_counter() - started
    cpu_after = cpu_by_process(roots)
    phase.answers = len(latencies)
    phase.answers_per_s = phase.answers / phase.seconds
    phase.p50_ms, phase.p99_ms = pct(latencies, 50), pct(latencies, 99)
    per_answer = 1000 / max(phase.answers, 1)
    used = {kind: cpu_after[kind] - cpu_before.get(kind, 0.0) for kind in cpu_after}
    phase.cpu_ms_per_answer = sum(used.values()) * per_answer
    phase.cpu_ms_by_process = {  # the largest first
        kind: seconds * per_answer
        for kind, seconds in sorted(used.items(), key=lambda item: -item[1])
        if kind != "other" and seconds > 0
    }
    return phase


class BlockingHttp:
    """POST /v1/search with urllib3 from worker threads: a pool of kept-alive connections, one per
    worker, and a connection the server closed while idle (uvicorn, after 5 s: during a gRPC phase)
    replaced and the request sent again."""

    def __init__(self, address: str, workers: int) -> None:
        host, port = address.rsplit(":", 1)
        self._http = urllib3.HTTPConnectionPool(
            host, int(port), maxsize=workers, block=True, timeout=30.0, retries=urllib3.Retry(1)
        )
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="http")

    def _post(self, body: bytes) -> None:
        reply = self._http.request(
            "POST", "/v1/search", body=body, headers={"Content-Type": "application/json"}
        )
        if reply.status != 200:
            raise urllib3.exceptions.HTTPError(f"HTTP {reply.status}")

    async def search(self, query: str) -> None:
        await asyncio.get_running_loop().run_in_executor(self._pool, self._post, self._body(query))

    async def search_here(self, query: str) -> None:
        """On the caller's thread: one request at a time, without the hop to a worker thread."""
        self._post(self._body(query))

    @staticmethod
    def _body(query: str) -> bytes:
        return json.dumps({"corpusId": CORPUS, "query": query, "topK": TOP_K}).encode()

    def close(self) -> None:
        self._pool.shutdown()
        self._http.close()


async def run(args: argparse.Namespace) -> dict[str, Any]:
    cfg = load_config()
    root = default_root()
    corpus = await ensure_indexed(cfg, CORPUS, root, reindex=False)
    mix = questions(root)
    # spellings no earlier run has sent: no cache anywhere holds them
    first_sight_from = random.SystemRandom().getrandbits(24) << 20
    columns = (TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn())
    http = BlockingHttp(cfg.services.address("bridge"), workers=8)
    async with grpc.aio.insecure_channel(cfg.services.address("fusion")) as channel:
        stub = fusion_pb2_grpc.FusionStub(channel)

        async def over_grpc(query: str) -> object:
            request = common_pb2.SearchRequest(corpus_id=CORPUS, query=query, top_k=TOP_K)
            return await stub.Search(request, timeout=30)

        async def over_http(query: str) -> object:
            await http.search(query)
            return None

        await over_grpc("warm up the connection")
        await over_http("warm up the connection")
        with Progress(*columns, console=console, transient=True) as progress:
            # not measured: a service that has just started runs its first calls slower (pools,
            # thread pools, the model's first passes); a new spelling still costs what it costs
            warm = Phase("warm-up", 2)
            await run_phase(
                cfg, warm, over_grpc, mix, args.warmup_seconds, first_sight_from - 10**6, progress
            )
            rounds: list[list[Phase]] = []
            overheads: list[float] = []
            references: list[float] = []
            for _ in range(args.rounds):
                references.append(reference_ms())
                measured: list[Phase] = []
                for concurrency in (1, 8):
                    for transport, ask in (("gRPC", over_grpc), ("HTTP", over_http)):
                        phase = Phase(transport, concurrency)
                        measured.append(
                            await run_phase(cfg, phase, ask, mix, args.seconds, first_sight_from, progress)
                        )
                        first_sight_from += 10**6
                rounds.append(measured)
                pairs = args.overhead_pairs
                overheads.append(await bridge_overhead(over_grpc, http.search_here, mix[:40], pairs))
    http.close()
    return {
        "created": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "corpus": {"name": CORPUS, "root": str(root), **corpus},
        "questions": len(mix),
        "seconds_per_phase": args.seconds,
        "rounds": len(rounds),
        "phases": [asdict(p) for p in medians(rounds)],
        "bridge_overhead_p50_ms": statistics.median(overheads),
        "bridge_overhead_each_round_ms": overheads,
        "reference_ms": statistics.median(references),
        "reference_each_round_ms": references,
        "postgresql_statement_costs": await statement_costs(cfg),
        "each_round": [[asdict(p) for p in measured] for measured in rounds],
    }


def medians(rounds: list[list[Phase]]) -> list[Phase]:
    """Each phase's median figures over the rounds (answers and errors: their sums)."""
    out = []
    for same in zip(*rounds, strict=True):
        first = same[0]
        out.append(
            Phase(
                first.transport,
                first.concurrency,
                answers=sum(p.answers for p in same),
                errors=sum(p.errors for p in same),
                seconds=sum(p.seconds for p in same),
                answers_per_s=statistics.median(p.answers_per_s for p in same),
                p50_ms=statistics.median(p.p50_ms for p in same),
                p99_ms=statistics.median(p.p99_ms for p in same),
                cpu_ms_per_answer=statistics.median(p.cpu_ms_per_answer for p in same),
                first_sight=first.first_sight,
                cpu_ms_by_process={
                    kind: statistics.median(p.cpu_ms_by_process.get(kind, 0.0) for p in same)
                    for kind in first.cpu_ms_by_process
                },
            )
        )
    return out


async def bridge_overhead(
    over_grpc: Callable[[str], Awaitable[object]],
    over_http: Callable[[str], Awaitable[object]],
    seen: list[str],
    pairs: int,
) -> float:
    """What the bridge adds, p50: the same questions, already seen (their cost does not depend on
    the transport), asked one at a time over gRPC and over HTTP in pairs, each pair in a random
    order, so a slower moment of the machine falls on both transports alike. HTTP is asked on this
    thread: the hop to a worker thread is the load generator's cost, not the bridge's."""
    for query in seen:
        await over_grpc(query)
    rng = random.Random(7)
    latencies: dict[str, list[float]] = {"gRPC": [], "HTTP": []}
    for i in range(pairs):
        order = [("gRPC", over_grpc), ("HTTP", over_http)]
        rng.shuffle(order)
        for transport, ask in order:
            started = time.perf_counter()
            await ask(seen[i % len(seen)])
            latencies[transport].append((time.perf_counter() - started) * 1000)
    return overhead_ms(latencies["gRPC"], latencies["HTTP"])


def overhead_ms(grpc_ms: list[float], http_ms: list[float]) -> float:
    return statistics.median(http_ms) - statistics.median(grpc_ms)


def table_lines(result: dict[str, Any]) -> list[str]:
    """The README's performance table."""
    chunks = result["corpus"].get("chunks", "?")
    lines = [
        f"`make bench-quick`, {result['created']}: fused answers (top {TOP_K}) on `click` ({chunks} chunks),",
        "half of the questions seen for the first time; server CPU = every service process and both stores;",
        "HTTP through urllib3;",
        f"medians of {result.get('rounds', 1)} rounds back to back.",
        "",
        "| transport | concurrency | answers/s | p50 ms | p99 ms | server CPU ms per answer |",
        "|---|---|---|---|---|---|",
    ]
    for p in result["phases"]:
        lines.append(
            f"| {p['transport']} | {p['concurrency']} | {p['answers_per_s']:.1f} | {p['p50_ms']:.1f}"
            f" | {p['p99_ms']:.1f} | {p['cpu_ms_per_answer']:.1f} |"
        )
    lines += ["", f"HTTP bridge overhead, p50 at concurrency 1: {result['bridge_overhead_p50_ms']:.1f} ms."]
    return [*lines, *machine_notes(result)]


def update_readme(result: dict[str, Any], readme: Path = README) -> bool:
    """Replace the text between the README's markers with the table; False when it has none."""
    text = readme.read_text(encoding="utf-8")
    start, end = (re.escape(m) for m in MARKERS)
    block = "\n".join([MARKERS[0], *table_lines(result), MARKERS[1]])
    updated, found = re.subn(f"{start}.*?{end}", lambda _: block, text, flags=re.DOTALL)
    if found:
        readme.write_text(updated, encoding="utf-8")
    return bool(found)


def show(result: dict[str, Any]) -> None:
    table = Table(
        "transport", "concurrency", "answers", "errors", "answers/s", "p50 ms", "p99 ms", "CPU ms/answer"
    )
    for p in result["phases"]:
        table.add_row(
            p["transport"],
            str(p["concurrency"]),
            str(p["answers"]),
            str(p["errors"]),
            f"{p['answers_per_s']:.1f}",
            f"{p['p50_ms']:.1f}",
            f"{p['p99_ms']:.1f}",
            f"{p['cpu_ms_per_answer']:.1f}",
        )
    console.print(table)
    console.print(
        f"bridge overhead p50 (HTTP - gRPC, concurrency 1): {result['bridge_overhead_p50_ms']:.1f} ms"
    )
    console.print(
        f"machine reference: {result['reference_ms']:.0f} ms CPU for the reference loop"
        f" (each round: {', '.join(f'{ms:.0f}' for ms in result['reference_each_round_ms'])})"
    )
    if note := statement_costs_note(result.get("postgresql_statement_costs", [])):
        console.print(f"[yellow]{note}[/]")
    for p in result["phases"]:  # one line each, to paste into a closing note
        console.print(
            f"bench-quick {p['transport']} c={p['concurrency']}: {p['answers_per_s']:.1f} answers/s,"
            f" p50 {p['p50_ms']:.1f} ms, p99 {p['p99_ms']:.1f} ms, CPU {p['cpu_ms_per_answer']:.1f} ms/answer"
        )
    for p in result["phases"]:
        split = ", ".join(
            f"{kind} {ms:.1f}" for kind, ms in p.get("cpu_ms_by_process", {}).items() if ms >= 0.05
        )
        console.print(
            f"  CPU ms/answer by process, {p['transport']} c={p['concurrency']}: {split}", soft_wrap=True
        )


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{p['transport']} x{p['concurrency']}" for p in result["phases"]]
    fig, (lat, cpu) = plt.subplots(1, 2, figsize=(10, 4))
    x = range(len(labels))
    lat.bar([i - 0.2 for i in x], [p["p50_ms"] for p in result["phases"]], width=0.4, label="p50")
    lat.bar([i + 0.2 for i in x], [p["p99_ms"] for p in result["phases"]], width=0.4, label="p99")
    lat.set_xticks(list(x), labels)
    lat.set_ylabel("ms")
    lat.legend()
    lat.set_title("fused answer latency")
    cpu.bar(labels, [p["cpu_ms_per_answer"] for p in result["phases"]])
    cpu.set_ylabel("server CPU ms per answer")
    cpu.set_title("cost")
    fig.suptitle(f"make bench-quick, {result['created']}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=12.0, help="length of each phase in a round")
    parser.add_argument(
        "--rounds", type=int, default=3, help="rounds of the four phases; figures are medians"
    )
    parser.add_argument(
        "--overhead-pairs", type=int, default=200, help="gRPC/HTTP pairs per round for the bridge's overhead"
    )
    parser.add_argument("--warmup-seconds", type=float, default=5.0, help="unmeasured questions first")
    parser.add_argument("--no-readme", action="store_true", help="leave README.md as it is")
    args = parser.parse_args()
    result = asyncio.run(run(args))
    show(result)
    write_report(RESULTS, "bench-quick", result, plot, console)
    if not args.no_readme:
        updated = update_readme(result)
        console.print(
            "README.md's performance table updated" if updated else "README.md has no bench-quick markers"
        )


if __name__ == "__main__":
    main()
