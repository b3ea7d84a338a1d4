"""Faults under load: while workers drive the gateway's Search, each leg service, PostgreSQL and
FalkorDB is stopped and restarted in turn.

Self-contained (bench/procstack.py): its own embedded stores on free ports under --state-dir and
each service in its own process; the installed `click` package is indexed once (kept in the
state dir for the next run). For each fault it reports the answers that were partial (a leg
missing) or failed (a gRPC error), the longest answer time against the caller's deadline, the
requests that outlived their deadline (DEADLINE_EXCEEDED, or an answer later than the deadline),
and the time from the restart to full recovery: the first answer from which on every answer is
whole (every leg OK) for --settle-s (the gateway's own channel to a leg reconnects with gRPC's
backoff, so it may lag the restarted leg's first SERVING, "restart s"). A leg is killed (SIGKILL,
a crash) and started again; the stores are stopped the way their `tribrid down` does it and
started again on their data.

Prints a table and writes bench/results/faults.json and faults.png.

    make faults [FAULT_CONCURRENCY=4 FAULT_DOWN_S=5]
    .venv/bin/python -m bench.faults --concurrency 4 --down-s 5
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
from rich.console import Console
from rich.table import Table

from bench import click_corpus
from bench.procstack import ProcessStack, stack_config
from bench.report import write_report
from evaluation import REPO_ROOT
from tribrid.legs import LEG_NAMES, source_name
from tribrid.stores.embedded import falkordb, postgres
from tribrid.v1 import common_pb2, fusion_pb2, fusion_pb2_grpc

RESULTS = REPO_ROOT / "bench" / "results"
CORPUS = "faults-click"
console = Console(width=max(Console().width, 140))

OK = fusion_pb2.LEG_STATUS_OK


@dataclass(frozen=True, slots=True)
class Answer:
    started: float  # time.monotonic()
    elapsed_s: float
    code: str  # "OK" or the gRPC status name
    partial: bool = False
    missing_legs: tuple[str, ...] = ()

    @property
    def whole(self) -> bool:
        return self.code == "OK" and not self.partial


@dataclass
class GatewayLoad:
    """Workers calling the gateway's Search back to back, each answer recorded."""

    address: str
    concurrency: int
    deadline_s: float
    corpus: str = CORPUS
    # A worker whose call failed waits this long before its next (a refused call comes back at once:
    # without a pause it would spin, like a client retrying without backoff).
    backoff_s: float = 0.01
    answers: list[Answer] = field(default_factory=list)
    _stop: asyncio.Event = field(default_factory=asyncio.Event)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    async def __aenter__(self) -> GatewayLoad:
        self._channel = grpc.aio.insecure_channel(self.address)
        search = fusion_pb2_grpc.FusionStub(self._channel).Search
        queries = itertools.cycle(click_corpus.QUERIES)
        # Each query gets a word never seen before: the graph leg keeps the seed lookups of words it
        # has met in memory, so only a new word is a question for the graph database.
        nonces = itertools.count(1)

        async def worker() -> None:
            while not self._stop.is_set():
                query = f"{next(queries)} zq{next(nonces):07x}"
                request = common_pb2.SearchRequest(corpus_id=self.corpus, query=query, top_k=10)
                started = time.monotonic()
                try:
                    reply = await search(request, timeout=self.deadline_s)
                except grpc.aio.AioRpcError as err:
                    self.answers.append(Answer(started, time.monotonic() - started, err.code().name))
                    await asyncio.sleep(self.backoff_s)
                    continue
                missing = tuple(sorted(source_name(r.leg) for r in reply.legs if r.status != OK))
                self.answers.append(Answer(started, time.monotonic() - started, "OK", reply.partial, missing))

        self._tasks = [asyncio.create_task(worker()) for _ in range(self.concurrency)]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        await asyncio.gather(*self._tasks)
        await self._channel.close()

    def since(self, t: float) -> list[Answer]:
        return [a for a in self.answers if a.started >= t]

    async def whole_for(self, settle_s: float, timeout_s: float, after: float) -> float | None:
        """The start of the first answer begun after `after` from which every answer was whole for
        `settle_s`; None if that did not happen within `timeout_s`."""
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            await asyncio.sleep(0.1)
            recent = sorted(self.since(after), key=lambda a: a.started)
            first_whole: float | None = None
            for answer in recent:
                if not answer.whole:
                    first_whole = None
                elif first_whole is None:
                    first_whole = answer.started
            if first_whole is not None and time.monotonic() - first_whole >= settle_s:
                return first_whole
        return None


@dataclass(frozen=True)
class Fault:
    name: str
    how: str
    stop: Callable[[], Awaitable[None]]
    restart: Callable[[], Awaitable[None]]


def faults(stack: ProcessStack) -> list[Fault]:
    def leg(name: str) -> Fault:
        async def stop() -> None:
            await asyncio.to_thread(stack.kill, name)

        async def restart() -> None:
            await stack.start_serving(name)

        return Fault(f"{name} leg", "SIGKILL, then started again", stop, restart)

    def store(name: str, module: Any, how: str) -> Fault:
        async def stop() -> None:
            await asyncio.to_thread(module.down, stack.cfg, lambda _: None)

        async def restart() -> None:
            await asyncio.to_thread(module.up, stack.cfg, lambda _: None)

        return Fault(name, how, stop, restart)

    return [
        *(leg(name) for name in LEG_NAMES),
        store("postgresql", postgres, "fast shutdown (SIGINT), then started again"),
        store("falkordb", falkordb, "SIGTERM (saves), then started again"),
    ]


def summarize(
    fault: Fault, answers: list[Answer], deadline_s: float, timing: dict[str, float | None]
) -> dict[str, Any]:
    codes = Counter(a.code for a in answers)
    missing = Counter(leg for a in answers for leg in a.missing_legs)
    longest = max((a.elapsed_s for a in answers), default=0.0)
    over = sum(1 for a in answers if a.code == "DEADLINE_EXCEEDED" or a.elapsed_s > deadline_s)
    return {
        "fault": fault.name,
        "how": fault.how,
        "requests": len(answers),
        "whole": sum(1 for a in answers if a.whole),
        "partial": sum(1 for a in answers if a.code == "OK" and a.partial),
        "failed": sum(1 for a in answers if a.code != "OK"),
        "failed_by_code": dict(codes - Counter({"OK": codes["OK"]})),
        "missing_legs": dict(missing),
        "longest_ms": round(1000 * longest, 1),
        "deadline_ms": round(1000 * deadline_s),
        "over_deadline": over,
        **timing,
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    cfg = stack_config(Path(args.state_dir), "tribrid_faults", "tribrid_faults_")
    stack = ProcessStack(cfg)
    stack.stores_up()
    rows: list[dict[str, Any]] = []
    try:
        await stack.start_all()
        indexed = await stack.index(CORPUS, Path(args.path))
        if indexed.done:
            console.print(f"indexed {args.path}: {indexed.chunks_total} chunks in {indexed.elapsed_s:.1f} s")
        async with GatewayLoad(stack.address("fusion"), args.concurrency, args.deadline_s) as load:
            steady = await load.whole_for(args.settle_s, 120, time.monotonic())
            if steady is None:
                raise RuntimeError("the stack never answered whole before the faults")
            for fault in faults(stack):
                console.print(f"[bold]{fault.name}[/]: {fault.how}")
                stopped_at = time.monotonic()
                await fault.stop()
                await asyncio.sleep(args.down_s)
                restart_at = time.monotonic()
                await fault.restart()
                restarted_s = time.monotonic() - restart_at
                whole_at = await load.whole_for(args.settle_s, args.recover_timeout_s, restart_at)
                end = time.monotonic()
                window = [a for a in load.since(stopped_at) if a.started < end]
                timing = {
                    "down_s": round(restart_at - stopped_at, 2),
                    "restart_s": round(restarted_s, 2),
                    "recovery_s": None if whole_at is None else round(max(0.0, whole_at - restart_at), 2),
                }
                rows.append(summarize(fault, window, args.deadline_s, timing))
                if whole_at is None:
                    console.print(f"[red]{fault.name}: not whole again within {args.recover_timeout_s} s[/]")
                    break
    finally:
        stack.stop_all()
        stack.stores_down()
    return {
        "created": datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ"),
        "corpus": str(args.path),
        "concurrency": args.concurrency,
        "deadline_ms": round(1000 * args.deadline_s),
        "down_s": args.down_s,
        "settle_s": args.settle_s,
        "faults": rows,
    }


def show(result: dict[str, Any]) -> None:
    table = Table(
        title=f"faults under load: gateway Search x{result['concurrency']}, "
        f"deadline {result['deadline_ms']} ms, each fault held {result['down_s']} s"
    )
    columns = ("fault", "requests", "whole", "partial", "failed", "longest ms", "over deadline")
    for col in (*columns, "restart s", "recovery s", "legs missing / errors"):
        table.add_column(col, justify="left" if col in ("fault", "legs missing / errors") else "right")
    for row in result["faults"]:
        detail = " ".join(
            f"{k}={v}" for k, v in sorted({**row["missing_legs"], **row["failed_by_code"]}.items())
        )
        table.add_row(
            row["fault"],
            str(row["requests"]),
            str(row["whole"]),
            str(row["partial"]),
            str(row["failed"]),
            f"{row['longest_ms']:.0f} / {row['deadline_ms']}",
            str(row["over_deadline"]),
            f"{row['restart_s']:.1f}",
            "never" if row["recovery_s"] is None else f"{row['recovery_s']:.1f}",
            detail or "-",
        )
    console.print(table)


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["faults"]
    names = [r["fault"] for r in rows]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    bottom = [0] * len(rows)
    for key, color in (("whole", "#55A868"), ("partial", "#DD8452"), ("failed", "#C44E52")):
        values = [r[key] for r in rows]
        axes[0].bar(names, values, bottom=bottom, color=color, label=key)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    axes[0].set_ylabel("answers during the fault and its recovery")
    axes[0].legend()
    axes[1].bar(names, [r["longest_ms"] for r in rows], color="#4C72B0", label="longest answer")
    axes[1].axhline(result["deadline_ms"], color="red", linestyle="--", label="deadline")
    axes[1].set_ylabel("ms")
    axes[1].legend()
    for ax in axes:
        ax.tick_params(axis="x", labelrotation=15)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    default_path = click_corpus.default_root()
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--path", default=str(default_path), help="directory to index (default: click)")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--deadline-s", type=float, default=3.0, help="each request's deadline")
    parser.add_argument("--down-s", type=float, default=5.0, help="how long each fault lasts")
    parser.add_argument("--settle-s", type=float, default=2.0, help="whole answers this long = recovered")
    parser.add_argument("--recover-timeout-s", type=float, default=90.0)
    parser.add_argument("--state-dir", default="/tmp/tribrid-bench-faults", help="the stores' data")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    result = asyncio.run(run(args))
    show(result)
    write_report(args.out, "faults", result, plot, console)


if __name__ == "__main__":
    main()
