"""Document-graph build benchmark: SIMILAR_TO for N chunks (default 10,000), computed and written.

The chunk vectors are synthetic (384-d, drawn around 500 topic centres with noise, so a few
neighbours of each chunk pass the 0.7 threshold as near-duplicate passages do): the join's time
depends on N and the dimension, not on what the vectors mean. The edges, with one chunk node per
chunk, are then written to an embedded FalkorDB on a free port under --state-dir, the way a
generation is written.

Prints a table and writes bench/results/bench_document_graph.json and .png.

    make bench-docgraph
    .venv/bin/python -m bench.bench_document_graph --chunks 10000 --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from bench.procstack import free_port
from evaluation import REPO_ROOT
from services.indexer.document_graph import similar_chunks
from tribrid.config import load_config
from tribrid.graphstore import open_graph_store
from tribrid.graphstore.base import graph_key
from tribrid.models import Entity
from tribrid.stores import embedded

RESULTS = REPO_ROOT / "bench" / "results"
console = Console(width=max(Console().width, 110))


def clustered_vectors(count: int, dim: int, topics: int, noise: float, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(topics, dim))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    picks = rng.integers(0, topics, size=count)
    vectors = centres[picks] + rng.normal(scale=noise / np.sqrt(dim), size=(count, dim))
    return {f"chunk-{i:06d}": vectors[i].astype(np.float32) for i in range(count)}


async def write_graph(args: argparse.Namespace, vectors: dict[str, np.ndarray], edges: list[Any]) -> float:
    state = Path(args.state_dir)
    cfg = load_config(
        state_dir=state,
        postgres={"port": free_port()},
        graph_store={"falkordb_port": free_port(), "graph_prefix": "tribrid_bdg_"},
        telemetry={"metrics_port": 0},
    )
    embedded.up(cfg)
    store = open_graph_store(cfg.graph_store)
    key = graph_key("bench-docgraph", 1)
    try:
        await store.delete_corpus(key)
        nodes = [
            Entity(cid, "bench-docgraph", "chunk", cid, cid, "doc.md", 1, 2, cid) for cid in sorted(vectors)
        ]
        started = time.perf_counter()
        await store.ensure_schema(key)
        await store.upsert_entities(key, nodes)
        await store.upsert_relations(key, edges)
        took = time.perf_counter() - started
        await store.delete_corpus(key)
        return took
    finally:
        await store.close()
        embedded.down(cfg)


def run(args: argparse.Namespace) -> dict[str, Any]:
    vectors = clustered_vectors(args.chunks, args.dim, args.topics, args.noise, seed=7)
    seconds: list[float] = []
    edges: list[Any] = []
    for _ in range(args.rounds):
        started = time.perf_counter()
        edges = similar_chunks(vectors, args.threshold, args.k)
        seconds.append(time.perf_counter() - started)
    write_s = asyncio.run(write_graph(args, vectors, edges))
    return {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "chunks": args.chunks,
        "dim": args.dim,
        "k": args.k,
        "threshold": args.threshold,
        "edges": len(edges),
        "edges_per_chunk": len(edges) / args.chunks,
        "compute_s_median": statistics.median(seconds),
        "compute_s_runs": seconds,
        "write_s": write_s,
    }


def show(result: dict[str, Any]) -> None:
    table = Table(title=f"SIMILAR_TO build, {result['chunks']:,} chunks x {result['dim']}-d")
    for column in ("edges", "edges/chunk", "kNN join s (median)", "write nodes+edges s", "total s"):
        table.add_column(column, justify="right")
    total = result["compute_s_median"] + result["write_s"]
    table.add_row(
        f"{result['edges']:,}",
        f"{result['edges_per_chunk']:.2f}",
        f"{result['compute_s_median']:.2f}",
        f"{result['write_s']:.2f}",
        f"{total:.2f}",
    )
    console.print(table)


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3))
    ax.bar(
        ["kNN join", "write"], [result["compute_s_median"], result["write_s"]], color=["#4c72b0", "#dd8452"]
    )
    ax.set_ylabel("seconds")
    ax.set_title(f"SIMILAR_TO build, {result['chunks']:,} chunks")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--topics", type=int, default=500)
    parser.add_argument("--noise", type=float, default=0.6, help="spread around a topic centre")
    parser.add_argument("--threshold", type=float, default=0.7)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--state-dir", default="/tmp/tribrid-bench-docgraph")
    args = parser.parse_args()
    shutil.rmtree(args.state_dir, ignore_errors=True)
    result = run(args)
    show(result)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "bench_document_graph.json").write_text(json.dumps(result, indent=2))
    plot(result, RESULTS / "bench_document_graph.png")


if __name__ == "__main__":
    main()
