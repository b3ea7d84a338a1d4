"""Where each service spends its CPU under load (`make profile`, after `make serve`): py-spy samples
every supervised service process while fused answers are asked over gRPC at concurrency 8 (half
of them first-sight questions, as in bench-quick), then writes one flame graph per service,
bench/results/flame-<service>.svg, and prints each service's CPU share and its hottest functions
(own time, from the same samples).

    make profile                                   # PROFILE_SECONDS=20
    .venv/bin/python -m bench.profile_services --seconds 30
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import grpc
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from bench.bench_fusion import ensure_indexed
from bench.bench_quick import CORPUS, TOP_K, Phase, questions, run_phase
from bench.click_corpus import default_root
from bench.server_cpu import service_of
from evaluation import REPO_ROOT
from tribrid.config import load_config
from tribrid.v1 import common_pb2, fusion_pb2_grpc

RESULTS = REPO_ROOT / "bench" / "results"
console = Console(width=max(Console().width, 120))
# Two recorders per service (a flame graph, and the stacks counted here) at half the usual rate
# each; never pausing the service.
RECORD = ("--rate", "50", "--nonblocking")


def services(supervisor: int) -> dict[str, int]:
    """The supervised services' process ids, by service name (the children of supervisord)."""
    children = Path(f"/proc/{supervisor}/task/{supervisor}/children").read_text().split()
    found = {}
    for pid in map(int, children):
        if (name := service_of(pid)) is not None:
            found[name] = pid
    return found


def hottest(collapsed: Path, top: int) -> tuple[int, list[tuple[str, float]]]:
    """Samples, and the functions with the most own time (the leaf frame of a stack) as shares."""
    own: collections.Counter[str] = collections.Counter()
    total = 0
    for line in collapsed.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        leaf = stack.rsplit(";", 1)[-1]
        own[re.sub(r" \((.*/)?", " (", leaf)] += int(count)
        total += int(count)
    return total, [(name, n / total) for name, n in own.most_common(top)] if total else []


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--top", type=int, default=6, help="hottest functions listed per service")
    args = parser.parse_args()
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    cfg = load_config()
    pid_file = cfg.state_dir / "services.pid"
    if not pid_file.is_file():
        raise SystemExit("services are not running: make serve first")
    pids = services(int(pid_file.read_text()))
    if not pids:
        raise SystemExit("no supervised services found (tribrid serve all --single-process is not profiled)")
    RESULTS.mkdir(parents=True, exist_ok=True)
    # Indexed before the recorders start, so a first run profiles the searches, not the indexing.
    asyncio.run(ensure_indexed(cfg, CORPUS, default_root(), reindex=False))
    recorders = {}
    for name, pid in pids.items():
        for fmt, suffix in (("flamegraph", "svg"), ("raw", "txt")):
            out = RESULTS / f"flame-{name}.{suffix}"
            recorders[(name, fmt)] = subprocess.Popen(
                [
                    py_spy,
                    "record",
                    "--pid",
                    str(pid),
                    "--duration",
                    str(int(args.seconds)),
                    *RECORD,
                    "--format",
                    fmt,
                    "--output",
                    str(out),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
    phase = asyncio.run(_load(args.seconds))
    for recorder in recorders.values():
        recorder.wait(timeout=args.seconds + 60)
    console.print(
        f"load: {phase.answers_per_s:.1f} answers/s, p50 {phase.p50_ms:.1f} ms, p99 {phase.p99_ms:.1f} ms,"
        f" server CPU {phase.cpu_ms_per_answer:.1f} ms per answer"
    )
    table = Table("service", "samples", "share of samples", "hottest functions (own time)")
    counted = {name: hottest(RESULTS / f"flame-{name}.txt", args.top) for name in pids}
    everything = sum(total for total, _ in counted.values()) or 1
    for name, (total, hot) in sorted(counted.items(), key=lambda item: -item[1][0]):
        listed = "\n".join(f"{share:5.1%} {function}" for function, share in hot)
        table.add_row(name, str(total), f"{total / everything:.0%}", listed)
    console.print(table)
    console.print(f"flame graphs: {RESULTS}/flame-<service>.svg")


async def _load(seconds: float) -> Phase:
    cfg = load_config()
    mix = questions(default_root())
    first_sight_from = random.SystemRandom().getrandbits(24) << 20
    async with grpc.aio.insecure_channel(cfg.services.address("fusion")) as channel:
        stub = fusion_pb2_grpc.FusionStub(channel)

        async def ask(query: str) -> object:
            request = common_pb2.SearchRequest(corpus_id=CORPUS, query=query, top_k=TOP_K)
            return await stub.Search(request, timeout=30)

        columns = (TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn())
        with Progress(*columns, console=console, transient=True) as progress:
            return await run_phase(cfg, Phase("gRPC", 8), ask, mix, seconds, first_sight_from, progress)


if __name__ == "__main__":
    main()
