"""What the shape of a fused answer costs with no work in it: the floor under `make bench-quick`.

A fused answer is four gRPC calls between Python processes: the client asks the gateway, which
asks the three legs side by side. This bench runs that shape and nothing else: four processes on
grpc.aio and uvloop, as the services run, each answering at once with bytes captured from the
running stack (each leg's real answer to a question, and the gateway's), so the messages are the
real ones, parsed and serialized as the services do. No interceptor, no database, no model, no
fusion. Its server CPU per answer is what the services' CPU per answer cannot go below while a
fused answer is four Python gRPC hops.

    make serve && .venv/bin/python -m bench.grpc_floor --seconds 10

Prints a table and writes bench/results/grpc-floor.{json,png}.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
from rich.console import Console
from rich.table import Table

from bench.bench_quick import CORPUS, TOP_K, pct
from bench.report import write_report
from evaluation import REPO_ROOT
from tribrid.config import load_config
from tribrid.legs import LEGS
from tribrid.v1 import common_pb2, fusion_pb2_grpc

RESULTS = REPO_ROOT / "bench" / "results"
# a question every leg answers with matches (the graph leg: callers of a method)
QUESTION = "who calls make_context"
console = Console(width=max(Console().width, 120))


@dataclass
class Phase:
    concurrency: int
    answers: int = 0
    answers_per_s: float = 0.0
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    cpu_ms_per_answer: float = 0.0
    gateway_cpu_ms_per_answer: float = 0.0


async def capture() -> tuple[dict[str, bytes], bytes]:
    """Each leg's answer and the gateway's to one question, from the running stack."""
    cfg = load_config()
    request = common_pb2.SearchRequest(corpus_id=CORPUS, query=QUESTION, top_k=TOP_K)
    legs: dict[str, bytes] = {}
    for leg in LEGS:
        async with grpc.aio.insecure_channel(cfg.services.address(leg.name)) as channel:
            call = channel.unary_unary(
                f"/{leg.service}/Search",
                request_serializer=common_pb2.SearchRequest.SerializeToString,
                response_deserializer=common_pb2.SearchResponse.FromString,
            )
            reply = await call(request, timeout=30)
            legs[leg.service] = reply.SerializeToString()
    async with grpc.aio.insecure_channel(cfg.services.address("fusion")) as channel:
        fused = await fusion_pb2_grpc.FusionStub(channel).Search(request, timeout=30)
    return legs, fused.SerializeToString()


def _leg_server(service: str, answer: bytes, port: int) -> None:
    import uvloop

    async def search(request: common_pb2.SearchRequest, context: Any) -> common_pb2.SearchResponse:
        return common_pb2.SearchResponse.FromString(answer)

    async def main() -> None:
        server = grpc.aio.server()
        handler = grpc.unary_unary_rpc_method_handler(
            search,
            request_deserializer=common_pb2.SearchRequest.FromString,
            response_serializer=common_pb2.SearchResponse.SerializeToString,
        )
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, {"Search": handler}),))
        server.add_insecure_port(f"127.0.0.1:{port}")
        await server.start()
        await server.wait_for_termination()

    uvloop.run(main())


def _gateway_server(legs: dict[str, int], answer: bytes, port: int) -> None:
    import uvloop

    from tribrid.v1 import fusion_pb2

    async def main() -> None:
        channels = [grpc.aio.insecure_channel(f"127.0.0.1:{p}") for p in legs.values()]
        calls = [
            channel.unary_unary(
                f"/{service}/Search",
                request_serializer=common_pb2.SearchRequest.SerializeToString,
                response_deserializer=common_pb2.SearchResponse.FromString,
            )
            for channel, service in zip(channels, legs, strict=True)
        ]

        async def search(request: common_pb2.SearchRequest, context: Any) -> Any:
            await asyncio.gather(*(call(request, timeout=5) for call in calls))
            return fusion_pb2.FusionSearchResponse.FromString(answer)

        server = grpc.aio.server()
        handler = grpc.unary_unary_rpc_method_handler(
            search,
            request_deserializer=common_pb2.SearchRequest.FromString,
            response_serializer=fusion_pb2.FusionSearchResponse.SerializeToString,
        )
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler("tribrid.v1.Fusion", {"Search": handler}),)
        )
        server.add_insecure_port(f"127.0.0.1:{port}")
        await server.start()
        await server.wait_for_termination()

    uvloop.run(main())


def _cpu_s(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


async def drive(port: int, pids: list[int], concurrency: int, seconds: float) -> Phase:
    request = common_pb2.SearchRequest(corpus_id=CORPUS, query=QUESTION, top_k=TOP_K)
    latencies: list[float] = []
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = fusion_pb2_grpc.FusionStub(channel)
        for _ in range(50):  # connections up, first calls out of the way
            await stub.Search(request, timeout=5)
        stop_at = time.perf_counter() + seconds

        async def worker() -> None:
            while time.perf_counter() < stop_at:
                started = time.perf_counter()
                await stub.Search(request, timeout=5)
                latencies.append((time.perf_counter() - started) * 1000)

        cpu_before, gateway_before, started = _cpu_s(pids), _cpu_s(pids[-1:]), time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed, cpu = time.perf_counter() - started, _cpu_s(pids) - cpu_before
        gateway = _cpu_s(pids[-1:]) - gateway_before
    return Phase(
        concurrency,
        len(latencies),
        len(latencies) / elapsed,
        pct(latencies, 50),
        pct(latencies, 99),
        1000 * cpu / max(len(latencies), 1),
        1000 * gateway / max(len(latencies), 1),
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    legs, fused = asyncio.run(capture())
    base = args.base_port
    ports = {service: base + 1 + i for i, service in enumerate(legs)}
    context = multiprocessing.get_context("spawn")
    procs = [
        context.Process(target=_leg_server, args=(service, answer, ports[service]), daemon=True)
        for service, answer in legs.items()
    ]
    procs.append(context.Process(target=_gateway_server, args=(ports, fused, base), daemon=True))
    for proc in procs:
        proc.start()
    try:
        time.sleep(args.start_s)
        pids = [p.pid for p in procs if p.pid is not None]
        phases = [asyncio.run(drive(base, pids, c, args.seconds)) for c in (1, 8)]
    finally:
        for proc in procs:
            proc.kill()
    return {
        "created": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "question": QUESTION,
        "message_bytes": {"legs": {s: len(a) for s, a in legs.items()}, "gateway": len(fused)},
        "phases": [asdict(p) for p in phases],
    }


def show(result: dict[str, Any]) -> None:
    table = Table(
        "concurrency",
        "answers",
        "answers/s",
        "p50 ms",
        "p99 ms",
        "server CPU ms/answer",
        "of it the gateway's",
    )
    for p in result["phases"]:
        table.add_row(
            str(p["concurrency"]),
            str(p["answers"]),
            f"{p['answers_per_s']:.1f}",
            f"{p['p50_ms']:.2f}",
            f"{p['p99_ms']:.2f}",
            f"{p['cpu_ms_per_answer']:.2f}",
            f"{p['gateway_cpu_ms_per_answer']:.2f}",
        )
    console.print(table)
    console.print(f"messages (bytes): {result['message_bytes']}")


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    phases = result["phases"]
    fig, axis = plt.subplots(figsize=(6, 4))
    labels = [f"concurrency {p['concurrency']}" for p in phases]
    axis.bar(labels, [p["cpu_ms_per_answer"] for p in phases])
    axis.set_ylabel("server CPU ms per answer")
    axis.set_title("four gRPC hops, no work: the floor")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each phase")
    parser.add_argument(
        "--base-port", type=int, default=52060, help="the gateway's port; legs on the next three"
    )
    parser.add_argument("--start-s", type=float, default=3.0, help="time the four processes get to start")
    result = run(parser.parse_args())
    show(result)
    write_report(RESULTS, "grpc-floor", result, plot, console)


if __name__ == "__main__":
    main()
