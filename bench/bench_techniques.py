"""Query-technique and rerank benchmark: the gateway's added latency with HyDE, multi-query or the
rerank stage on, when the model answers at once (the cost of the mechanism: the HTTP call, the
extra leg calls, embedding a new passage, fusing more lists, reading the candidates' content) and
when it hangs (bounded by the technique's or the stage's budget).

Self-contained: embedded PostgreSQL and FalkorDB on free ports under --state-dir, every service
in this process on ephemeral ports, a corpus indexed there (default: the installed `click`
package), and the stand-in models of the tests (tests/chat_server.py, tests/rerank_server.py:
real HTTP servers speaking the OpenAI chat and /rerank APIs) answering instantly with text made
from the query, and with scores that reverse the order. Every request gets
new generated text (the model's cache is off), so the vector leg embeds each passage and
variant, as it would with a real model. Queries run one at a time, the modes alternating.

Prints a table and writes bench/results/bench_techniques.json and bench_techniques.png.

    make bench-techniques
    .venv/bin/python -m bench.bench_techniques --rounds 5 --budget-ms 500
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import shutil
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
from services.fusion.rerank import RerankClient
from tests.chat_server import Reply, ScriptedChat, chat_server
from tests.rerank_server import ScriptedReranker, rerank_server
from tribrid.config import (
    GenerationConfig,
    HydeSettings,
    MultiQuerySettings,
    RerankConfig,
    TechniqueRegistry,
)
from tribrid.generation import GenerationClient
from tribrid.legs import LEGS
from tribrid.v1 import common_pb2, fusion_pb2
from tribrid.v1.legs_pb2 import LEG_RERANK

RESULTS = REPO_ROOT / "bench" / "results"
CORPUS = "bench-techniques"
console = Console(width=max(Console().width, 120))

# mode -> the techniques it runs, and whether the rerank stage reorders the top 20
MODES: dict[str, tuple[list[str], bool]] = {
    "off": ([], False),
    "hyde": (["hyde"], False),
    "multi_query": (["multi_query"], False),
    "hyde+multi_query": (["hyde", "multi_query"], False),
    "rerank": ([], True),
}


def _instant(counter: itertools.count[int]) -> Any:
    """Answers made from the query in the prompt, new text every call (no cache anywhere)."""

    def respond(prompt: str) -> Reply:
        n = next(counter)
        query = prompt.rsplit(": ", 1)[-1].strip()
        if "JSON array" in prompt:
            variants = [f"{query} implementation {n}", f"how to {query} ({n})", f"{query} example {n}"]
            return Reply(text=json.dumps(variants))
        return Reply(text=f'def answer_{n}():\n    """{query}."""\n    return handle("{query}")\n')

    return respond


def _hang(chat: ScriptedChat, reranker: ScriptedReranker) -> None:
    chat.respond = lambda prompt: Reply("hang")
    reranker.behaviour = "hang"


async def _measure(
    gateways: dict[str, Gateway], rounds: int, budget_ms: int
) -> tuple[dict[str, list[float]], dict[str, dict[str, int]]]:
    """Latency per mode (ms), and how the technique and rerank runs ended, by status name."""
    took: dict[str, list[float]] = {mode: [] for mode in MODES}
    ended: dict[str, dict[str, int]] = {mode: {} for mode in MODES}
    for _ in range(rounds):
        for query in click_corpus.QUERIES:
            for mode, (techniques, reranked) in MODES.items():
                request = common_pb2.SearchRequest(corpus_id=CORPUS, query=query, top_k=10)
                request.options.fusion.techniques.extend(techniques)
                if reranked:
                    request.options.fusion.enable_rerank = True
                    request.options.fusion.rerank_timeout_ms = budget_ms
                started = time.perf_counter()
                gateway = gateways["off" if mode == "off" else "on"]
                reply = await gateway.search(request, remaining_s=30)
                took[mode].append((time.perf_counter() - started) * 1000)
                statuses = [fusion_pb2.TechniqueStatus.Name(r.status) for r in reply.techniques]
                statuses += [fusion_pb2.LegStatus.Name(r.status) for r in reply.legs if r.leg == LEG_RERANK]
                for status in statuses:
                    name = status.removeprefix("TECHNIQUE_STATUS_").removeprefix("LEG_STATUS_")
                    ended[mode][name] = ended[mode].get(name, 0) + 1
    return took, ended


async def run(args: argparse.Namespace) -> dict[str, Any]:
    async with in_process_stack(Path(args.state_dir), "tribrid_bench_techniques", "tribrid_bt_") as (
        cfg,
        resources,
        servers,
    ):
        await index_once(servers["indexer"].port, Path(args.path), CORPUS, console)
        pool = await resources.pool()
        legs = {leg.name: LegClient(leg, f"127.0.0.1:{servers[leg.name].port}") for leg in LEGS}
        registry = TechniqueRegistry(
            hyde=HydeSettings(timeout_ms=args.budget_ms),
            multi_query=MultiQuerySettings(timeout_ms=args.budget_ms),
        )
        fcfg = cfg.fusion.model_copy(update={"technique_settings": registry})
        async with chat_server() as chat, rerank_server() as reranker:
            generation = GenerationClient(GenerationConfig(base_url=chat.url, model="stand-in", cache_size=0))
            rerank_client = RerankClient(RerankConfig(base_url=reranker.url, model="stand-in"))
            gateways = {
                "off": Gateway(cfg.fusion, cfg.limits, legs, pool),
                "on": Gateway(fcfg, cfg.limits, legs, pool, generation, rerank_client),
            }
            chat.respond = _instant(itertools.count())
            await _measure(gateways, 1, args.budget_ms)  # warm: the model, embeddings, connections, plans
            instant, instant_ended = await _measure(gateways, args.rounds, args.budget_ms)
            _hang(chat, reranker)
            hanging, hanging_ended = await _measure(gateways, args.hang_rounds, args.budget_ms)
            await generation.close()
            await rerank_client.close()
        for client in legs.values():
            await client.close()

    def summary(took: dict[str, list[float]], ended: dict[str, dict[str, int]]) -> dict[str, dict[str, Any]]:
        base = statistics.median(took["off"])
        return {
            mode: {
                "n": len(values),
                "technique_status": ended[mode],
                "p50_ms": statistics.median(values),
                "p95_ms": percentile(values, 0.95),
                "max_ms": max(values),
                "added_p50_ms": statistics.median(values) - base,
            }
            for mode, values in took.items()
        }

    return {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "corpus": str(args.path),
        "budget_ms": args.budget_ms,
        "queries": len(click_corpus.QUERIES),
        "instant": summary(instant, instant_ended),
        "hanging": summary(hanging, hanging_ended),
    }


def show(result: dict[str, Any]) -> None:
    for case, title in (
        ("instant", "model answers at once: the mechanism's cost"),
        ("hanging", f"model hangs: cut at the technique's or stage's budget ({result['budget_ms']} ms)"),
    ):
        table = Table(title=title)
        for col in ("mode", "n", "p50 ms", "p95 ms", "max ms", "added p50 ms", "runs ended"):
            table.add_column(col, justify="left" if col in ("mode", "runs ended") else "right")
        for mode, row in result[case].items():
            table.add_row(
                mode,
                str(row["n"]),
                f"{row['p50_ms']:.1f}",
                f"{row['p95_ms']:.1f}",
                f"{row['max_ms']:.1f}",
                f"{row['added_p50_ms']:+.1f}",
                " ".join(f"{k}={v}" for k, v in sorted(row["technique_status"].items())) or "-",
            )
        console.print(table)


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, case in zip(axes, ("instant", "hanging"), strict=True):
        modes = list(result[case])
        ax.bar(modes, [result[case][m]["p50_ms"] for m in modes], label="p50")
        ax.scatter(modes, [result[case][m]["p95_ms"] for m in modes], color="black", label="p95", zorder=3)
        ax.set_title(f"model {case}" + (f" (budget {result['budget_ms']} ms)" if case == "hanging" else ""))
        ax.set_ylabel("gateway latency, ms")
        ax.tick_params(axis="x", labelrotation=15)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    default_path = click_corpus.default_root()
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--path", default=str(default_path), help="directory to index (default: click)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds over the queries, model instant")
    parser.add_argument("--hang-rounds", type=int, default=1, help="rounds over the queries, model hanging")
    parser.add_argument(
        "--budget-ms", type=int, default=500, help="each technique's and the rerank stage's budget"
    )
    parser.add_argument("--state-dir", default="/tmp/tribrid-bench-techniques", help="stores' data")
    parser.add_argument("--fresh", action="store_true", help="drop the state dir (re-index)")
    args = parser.parse_args()
    if args.fresh:
        shutil.rmtree(args.state_dir, ignore_errors=True)
    result = asyncio.run(run(args))
    show(result)
    write_report(RESULTS, "bench_techniques", result, plot, console)


if __name__ == "__main__":
    main()
