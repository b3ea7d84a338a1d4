"""Indexing benchmark: a real repository indexed cold, then again unchanged.

Reports files/s, chunks/s, seconds per stage, graph rows/s, peak RSS, and the embedding model's
raw throughput on chunks of the same repository, measured in the same process just before.

    make bench-index                      # networkx (installed with torch: ~580 source files)
    .venv/bin/python -m bench.bench_index --path /some/repo --corpus my-bench
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from evaluation import REPO_ROOT
from services.indexer.chunker import chunk_file
from services.indexer.graph_writer import discard_uncommitted, drop_generation
from services.indexer.pg_writer import delete_corpus
from services.indexer.pipeline import IndexPipeline
from services.indexer.walker import SourceFile, walk_corpus
from tribrid.config import load_config
from tribrid.embedding import Embedder
from tribrid.resources import Resources
from tribrid.stores.postgres import corpus_generation
from tribrid.v1 import indexer_pb2

RESULTS = REPO_ROOT / "bench" / "results"
console = Console()


def default_path() -> Path:
    import networkx  # type: ignore[import-untyped]  # installed with torch; no stubs

    return Path(networkx.__file__).parent


async def raw_throughput(embedder: Embedder, root: Path, sample: int, batch: int) -> tuple[float, int]:
    """Chunks/s of the bare model on the first `sample` chunks of the repository."""
    cfg = load_config()
    texts: list[str] = []
    for item in walk_corpus(root, cfg.indexer):
        if isinstance(item, SourceFile):
            texts.extend(c.embed_text for c in chunk_file("raw", item, cfg.indexer).chunks)
        if len(texts) >= sample:
            break
    texts = texts[:sample]
    await embedder.embed(texts[:16])  # warm-up: first call pays one-off allocation
    started = time.perf_counter()
    for start in range(0, len(texts), batch):
        await embedder.embed(texts[start : start + batch])
    return len(texts) / (time.perf_counter() - started), len(texts)


async def index_once(
    pipeline: IndexPipeline, corpus_id: str, root: Path, label: str
) -> tuple[indexer_pb2.IndexProgress, float]:
    last = indexer_pb2.IndexProgress()
    started = time.perf_counter()
    with Progress(
        TextColumn(f"[bold]{label}[/] {{task.description}}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} chunks"),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        task = progress.add_task("walking", total=None)
        async for event in pipeline.run(corpus_id, str(root)):
            progress.update(
                task,
                description=event.phase,
                completed=event.chunks_embedded,
                total=event.chunks_to_embed or None,
            )
            last = event
    return last, time.perf_counter() - started


async def reset(res: Resources, corpus_id: str) -> None:
    pool = await res.pool()
    generation = await corpus_generation(pool, corpus_id)
    await delete_corpus(pool, corpus_id)
    if generation is not None:
        await discard_uncommitted(res.graph(), corpus_id, generation)
        await drop_generation(res.graph(), corpus_id, generation)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


async def run(args: argparse.Namespace) -> dict[str, Any]:
    res = Resources(load_config())
    try:
        embedder = res.embedder()
        raw_cps, raw_n = await raw_throughput(embedder, args.path, args.raw_sample, args.raw_batch)
        console.print(f"raw model throughput: {raw_cps:.1f} chunks/s over {raw_n} chunks")
        await reset(res, args.corpus)
        pipeline = IndexPipeline(res.cfg, await res.pool(), res.graph(), embedder)
        cold, cold_s = await index_once(pipeline, args.corpus, args.path, "cold")
        warm, warm_s = await index_once(pipeline, args.corpus, args.path, "unchanged")
    finally:
        await res.close()
    graph_rows = cold.entities + cold.relationships
    graph_s = cold.stage_seconds.get("graph", 0.0)
    return {
        "path": str(args.path),
        "files": cold.files_seen,
        "files_indexed": cold.files_changed,
        "chunks": cold.chunks_total,
        "entities": cold.entities,
        "relationships": cold.relationships,
        "cold_s": cold_s,
        "unchanged_s": warm_s,
        "unchanged_over_cold": warm_s / cold_s,
        "files_per_s": cold.files_changed / cold_s,
        "chunks_per_s": cold.chunks_total / cold_s,
        "raw_model_chunks_per_s": raw_cps,
        "cold_over_raw": (cold.chunks_total / cold_s) / raw_cps,
        "graph_rows_per_s": graph_rows / graph_s if graph_s else 0.0,
        "stage_seconds_cold": dict(cold.stage_seconds),
        "stage_seconds_unchanged": dict(warm.stage_seconds),
        "peak_rss_mb": peak_rss_mb(),
    }


def show(result: dict[str, Any]) -> None:
    table = Table(title=f"bench-index: {result['path']}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("target", justify="right")
    targets = {
        "cold_over_raw": "≥ 0.80",
        "unchanged_over_cold": "≤ 0.05",
        "graph_rows_per_s": "≥ 5000",
    }
    for key, value in result.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k} {v:.1f}s" for k, v in sorted(value.items()))
        elif isinstance(value, float):
            value = f"{value:.3f}" if value < 10 else f"{value:.1f}"
        table.add_row(key, str(value), targets.get(key, ""))
    console.print(table)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--path", type=Path, default=None, help="repository to index (default: networkx)")
    parser.add_argument("--corpus", default="bench-index")
    parser.add_argument("--raw-sample", type=int, default=1024, help="chunks for the raw model measurement")
    parser.add_argument("--raw-batch", type=int, default=256)
    args = parser.parse_args()
    args.path = (args.path or default_path()).resolve()
    result = asyncio.run(run(args))
    show(result)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "bench_index.json"
    out.write_text(json.dumps(result, indent=2))
    console.print(f"written {out.relative_to(REPO_ROOT)}")


if __name__ == "__main__":
    main()
