"""Load generator for one service's Search RPC, reported like ghz.

N asyncio workers on one channel call Search back to back for D seconds with the query mix of the
eval sets (evals/sets/*.jsonl, each query against its set's corpus), then report requests/s,
latency percentiles and counts by status code; JSON and a latency histogram go to bench/results/.

Query embedding (vector, and the gateway's vector leg) is cached per exact query string. By
default the mix is first sent once (cache warm) and then repeats, so the vector figure is
"embedding cached". With --no-cache-warm every request carries a unique query variant — the same
words with a different run of spaces/tabs after the first word, which no tokenizer sees but the
cache key does — so every vector request pays for its query embedding. Single-word (identifier)
queries have no inner whitespace to vary and are left out of that mix.

    make load LEG=vector CONCURRENCY=8 DURATION=20 [NO_CACHE_WARM=1]
    .venv/bin/python -m bench.load --leg sparse --concurrency 8 --duration 20
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import random
import time
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from evaluation import REPO_ROOT
from tribrid.config import load_config
from tribrid.legs import BY_NAME, LEG_NAMES, search_method
from tribrid.v1 import common_pb2, fusion_pb2_grpc

RESULTS = REPO_ROOT / "bench" / "results"
SETS_DIR = REPO_ROOT / "evals" / "sets"
GATEWAY = "fusion"
SEARCHED = (*LEG_NAMES, GATEWAY)
# Whose requests embed the query: the vector leg's, and so the gateway's.
EMBEDS = ("vector", GATEWAY)
console = Console(width=max(Console().width, 120))


def query_mix(sets_dir: Path, corpus: str | None, only: list[str] | None = None) -> list[tuple[str, str]]:
    """(corpus, query) pairs of every eval set (or of the sets named in `only`), shuffled with a
    fixed seed."""
    manifest = json.loads((sets_dir / "manifest.json").read_text())
    unknown = sorted(set(only or ()) - set(manifest["sets"]))
    if unknown:
        raise SystemExit(
            f"--sets: no eval set {', '.join(unknown)}; there are {', '.join(sorted(manifest['sets']))}"
        )
    mix: list[tuple[str, str]] = []
    for name, info in sorted(manifest["sets"].items()):
        if only and name not in only:
            continue
        for line in (sets_dir / f"{name}.jsonl").read_text(encoding="utf-8").splitlines():
            if line.strip():
                mix.append((corpus or str(info["corpus"]), str(json.loads(line)["query"])))
    random.Random(7).shuffle(mix)
    return mix


def variant(query: str, n: int) -> str:
    """A unique spelling of query for n >= 0: the first space becomes a whitespace run encoding n.
    A query of one word has no other spelling with the same words: see `respellable`."""
    head, sep, tail = query.strip().partition(" ")
    if not sep:
        raise ValueError(f"{query!r} is one word: it has no other spelling")
    pattern = "".join(" " if bit == "0" else "\t" for bit in format(n + 1, "b"))
    return f"{head} {pattern}{tail}"


def respellable(queries: Sequence[str]) -> list[str]:
    """The queries `variant` can spell anew: those of several words (a quarter of bench-quick's
    questions are one name, and were asked again where a first sight was meant)."""
    return [q for q in queries if " " in q.strip()]


def half_first_sight(mix: Sequence[str], respelled: Sequence[str], i: int, first_sight_from: int) -> str:
    """Request i's question when half are seen for the first time: an odd request asks the mix in
    turn, an even one a spelling never sent before of a question of several words (`respelled`)."""
    if i % 2:
        return mix[i % len(mix)]
    return variant(respelled[(i // 2) % len(respelled)], first_sight_from + i)


def search_call(leg: str, channel: grpc.aio.Channel) -> Any:
    """The Search RPC of a leg, or of the gateway."""
    if leg in BY_NAME:
        return search_method(channel, BY_NAME[leg])
    return fusion_pb2_grpc.FusionStub(channel).Search


def _note(leg: str, unique: bool) -> str:
    embeds = leg in EMBEDS
    if unique:
        extra = ": query embedding computed on every request" if embeds else ""
        return f"every request a unique query variant{extra}"
    extra = "; query embeddings served from the cache" if embeds else ""
    return f"the mix repeats after one warm-up pass{extra}"


def percentile(sorted_values: list[float], p: float) -> float:
    if not sorted_values:
        return 0.0
    index = min(len(sorted_values) - 1, max(0, round(p / 100 * len(sorted_values)) - 1))
    return sorted_values[index]


async def run(args: argparse.Namespace) -> dict[str, Any]:
    cfg = load_config()
    address: str = args.address or cfg.services.address(args.leg)
    mix = query_mix(args.sets_dir, args.corpus, args.sets)
    unique = args.no_cache_warm
    if unique:
        mix = [(c, q) for c, q in mix if respellable([q])]
    # Variants are numbered from a random start, so no earlier run has put them in the cache.
    counter = itertools.count(random.SystemRandom().getrandbits(24) << 20 if unique else 0)
    latencies: list[float] = []
    codes: Counter[str] = Counter()
    errors: Counter[str] = Counter()

    async with grpc.aio.insecure_channel(address) as channel:
        search = search_call(args.leg, channel)

        async def call(corpus: str, query: str) -> str:
            request = common_pb2.SearchRequest(corpus_id=corpus, query=query, top_k=args.top_k)
            try:
                await search(request, timeout=args.timeout)
                return "OK"
            except grpc.aio.AioRpcError as err:
                errors[f"{err.code().name}: {(err.details() or '')[:80]}"] += 1
                return str(err.code().name)

        if not unique:  # one pass over the mix: embeddings cached, connections and plans warm
            with Progress(TextColumn("warm-up"), BarColumn(), console=console, transient=True) as bar:
                task = bar.add_task("warm", total=len(mix))
                sem = asyncio.Semaphore(args.concurrency)

                async def warm(c: str, q: str) -> None:
                    async with sem:
                        await call(c, q)
                        bar.advance(task)

                await asyncio.gather(*(warm(c, q) for c, q in mix))
            errors.clear()
        else:  # one untimed call so the channel is connected before the clock starts
            await call(mix[0][0], "warm up connection")

        stop_at = time.perf_counter() + args.duration

        async def worker() -> None:
            while time.perf_counter() < stop_at:
                n = next(counter)
                corpus, query = mix[n % len(mix)]
                if unique:
                    query = variant(query, n)
                started = time.perf_counter()
                code = await call(corpus, query)
                latencies.append(1000 * (time.perf_counter() - started))
                codes[code] += 1

        started = time.perf_counter()
        columns = (TextColumn(f"{args.leg} x{args.concurrency}"), BarColumn(), TimeElapsedColumn())
        with Progress(*columns, console=console, transient=True) as bar:
            task = bar.add_task("load", total=args.duration)
            workers = asyncio.gather(*(worker() for _ in range(args.concurrency)))
            while not workers.done():
                await asyncio.wait([workers], timeout=0.25)
                bar.update(task, completed=min(args.duration, time.perf_counter() - started))
            await workers
        elapsed = time.perf_counter() - started

    lat = sorted(latencies)
    return {
        "created": datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ"),
        "leg": args.leg,
        "address": address,
        "concurrency": args.concurrency,
        "duration_s": round(elapsed, 2),
        "top_k": args.top_k,
        "distinct_queries": len(mix),
        "queries_repeat": not unique,
        "cache_warmed": not unique,
        "note": _note(args.leg, unique),
        "requests": len(lat),
        "rps": len(lat) / elapsed if elapsed else 0.0,
        "latency_ms": {
            "min": lat[0] if lat else 0.0,
            "mean": sum(lat) / len(lat) if lat else 0.0,
            "p50": percentile(lat, 50),
            "p90": percentile(lat, 90),
            "p95": percentile(lat, 95),
            "p99": percentile(lat, 99),
            "max": lat[-1] if lat else 0.0,
        },
        "status_codes": dict(codes),
        "errors": dict(errors.most_common(10)),
        "latencies_ms": [round(x, 3) for x in latencies],
    }


def report(result: dict[str, Any]) -> None:
    lat = result["latency_ms"]
    console.print(
        f"\n[bold]Summary[/] {result['leg']} @ {result['address']}, concurrency {result['concurrency']}\n"
        f"  Count:        {result['requests']}\n"
        f"  Total:        {result['duration_s']:.2f} s\n"
        f"  Requests/sec: {result['rps']:.1f}\n"
        f"  Queries:      {result['distinct_queries']} distinct; {result['note']}"
    )
    table = Table("latency", "ms")
    for key in ("min", "mean", "p50", "p90", "p95", "p99", "max"):
        table.add_row(key, f"{lat[key]:.2f}")
    console.print(table)
    codes = Table("status code", "count")
    for code, count in sorted(result["status_codes"].items()):
        codes.add_row(code, str(count))
    console.print(codes)
    for error, count in result["errors"].items():
        console.print(f"  [red]{count} x {error}[/]")


def histogram(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    values = result["latencies_ms"]
    ax.hist(values, bins=60, color="#4C72B0")
    for key, color in (("p50", "green"), ("p95", "orange"), ("p99", "red")):
        x = result["latency_ms"][key]
        ax.axvline(x, color=color, linestyle="--", label=f"{key} {x:.1f} ms")
    ax.set_xlabel("latency (ms)")
    ax.set_ylabel("requests")
    ax.set_title(
        f"{result['leg']} Search: {result['rps']:.1f} req/s, concurrency {result['concurrency']}, "
        f"{'cache warm' if result['cache_warmed'] else 'unique queries'}"
    )
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--leg", choices=SEARCHED, required=True)
    parser.add_argument("--address", default="", help="host:port; default: the configured service address")
    parser.add_argument(
        "--corpus", default=None, help="send every query to this corpus (default: each set's)"
    )
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of load")
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=10.0, help="per-request deadline, seconds")
    parser.add_argument(
        "--no-cache-warm",
        action="store_true",
        help="no warm-up pass; a unique query per request, so vector embedding is always computed",
    )
    parser.add_argument("--sets-dir", type=Path, default=SETS_DIR)
    parser.add_argument(
        "--sets", nargs="+", default=None, help="only these eval sets' queries, e.g. faq-perl faq-sed"
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    result = asyncio.run(run(args))
    report(result)
    args.out.mkdir(parents=True, exist_ok=True)
    mode = "cold" if args.no_cache_warm else "warm"
    scope = f"-{'+'.join(args.sets)}" if args.sets else ""
    stem = f"load-{args.leg}{scope}-{mode}-c{args.concurrency}"
    (args.out / f"{stem}.json").write_text(json.dumps(result, indent=1))
    histogram(result, args.out / f"{stem}.png")
    console.print(f"wrote {args.out / (stem + '.json')} and {stem}.png")


if __name__ == "__main__":
    main()
