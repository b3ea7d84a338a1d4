"""How much of a corpus's true top k the vector leg's HNSW scan finds, per iterative-scan order.

A corpus of more than `vector.exact_scan_max_rows` chunks is searched in an HNSW index of its own
rows (tribrid.stores.postgres.corpus_vector_index); a smaller one is scanned exactly. This takes
each eval set's questions (first --queries of each), embeds them with the configured model and
runs, on the indexed eval corpora:
- an exact scan of the corpus (the truth);
- the leg's HNSW query shape in the corpus's own index, with `hnsw.iterative_scan` strict_order,
  then relaxed_order plus the MATERIALIZED re-sort the leg uses, at ef_search 100 and 400.
Recall@k counts rows no farther than the truth's k-th. One table and a PNG under bench/results/.

    make serve && make eval   # the eval corpora must be indexed
    .venv/bin/python -m bench.vector_recall [--sets unseen-docstring unseen-three] [--queries 80]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np
from pgvector.asyncpg import register_vector
from rich.console import Console
from rich.table import Table

from bench.report import write_report
from evaluation import REPO_ROOT
from evaluation.build_sets import SETS_DIR
from evaluation.run import SET_NAMES, load_sets
from tribrid.config import load_config
from tribrid.embedding import LocalEmbedder
from tribrid.stores.postgres import corpus_vector_index, literal

console = Console()
SCANS = (("strict_order", 100), ("strict_order", 400), ("relaxed_order", 100), ("relaxed_order", 400))
EXACT = """WITH a AS MATERIALIZED (SELECT chunk_id, embedding FROM chunks WHERE corpus_id = $1)
           SELECT embedding <=> $2 AS d FROM a ORDER BY 1 LIMIT $3"""
# $1 the query vector, $2 k; the corpus named in the text, as the leg names it (its own index)
STRICT = (
    "SELECT embedding <=> $1 AS d FROM chunks WHERE corpus_id = {corpus} ORDER BY embedding <=> $1 LIMIT $2"
)
RELAXED = f"WITH r AS MATERIALIZED ({STRICT}) SELECT d FROM r ORDER BY d"


def _column(order: str, ef: int) -> str:
    return f"{order} ef{ef}"


async def measure(set_names: list[str], queries: int, k: int) -> dict[str, Any]:
    cfg = load_config()
    embedder = LocalEmbedder(cfg.embedding)
    sets = load_sets(SETS_DIR, set_names)
    rows: list[dict[str, Any]] = []
    conn = await asyncpg.connect(cfg.postgres.effective_dsn())
    try:
        await register_vector(conn)
        table_rows = int(await conn.fetchval("SELECT count(*) FROM chunks"))
        for name, (corpus, items) in sets.items():
            size = int(await conn.fetchval("SELECT count(*) FROM chunks WHERE corpus_id = $1", corpus))
            vectors = embedder.embed_sync([q.query for q in items[:queries]])
            truth = [float((await conn.fetch(EXACT, corpus, v, k))[-1]["d"]) for v in vectors]
            row: dict[str, Any] = {
                "set": name,
                "corpus": corpus,
                "corpus_rows": size,
                "table_rows": table_rows,
            }
            own = corpus_vector_index(corpus) in {
                r["indexname"]
                for r in await conn.fetch("SELECT indexname FROM pg_indexes WHERE tablename = 'chunks'")
            }
            for order, ef in SCANS if own else ():  # else the leg scans the corpus exactly
                sql = (STRICT if order == "strict_order" else RELAXED).format(corpus=literal(corpus))
                recalls, times = [], []
                for vector, worst in zip(vectors, truth, strict=True):
                    async with conn.transaction():
                        await conn.execute(
                            f"SET LOCAL hnsw.ef_search = {ef}; SET LOCAL hnsw.iterative_scan = {order};"
                            f" SET LOCAL hnsw.max_scan_tuples = {cfg.vector.max_scan_tuples};"
                            " SET LOCAL enable_sort = off"
                        )
                        started = time.perf_counter()
                        found = await conn.fetch(sql, vector, k)
                        times.append(time.perf_counter() - started)
                    recalls.append(sum(float(r["d"]) <= worst + 1e-6 for r in found) / k)
                row[_column(order, ef)] = {
                    "recall": statistics.fmean(recalls),
                    "p50_ms": statistics.median(times) * 1e3,
                }
            rows.append(row)
    finally:
        await conn.close()
    return {"k": k, "queries_per_set": queries, "rows": rows}


def show(result: dict[str, Any]) -> None:
    table = Table(title=f"recall@{result['k']} of the corpus's true top {result['k']} / p50 ms")
    table.add_column("set (corpus rows / table rows)")
    for order, ef in SCANS:
        table.add_column(f"{order.split('_')[0]} ef{ef}", justify="right")
    for row in result["rows"]:
        cells = [
            f"{row[c]['recall']:.2f} / {row[c]['p50_ms']:.1f}" if (c := _column(*scan)) in row else "exact"
            for scan in SCANS
        ]
        table.add_row(f"{row['set']} ({row['corpus_rows']:,} / {row['table_rows']:,})", *cells)
    console.print(table)


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r["set"] for r in result["rows"]]
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(names)), 4))
    width = 0.8 / len(SCANS)
    for i, scan in enumerate(SCANS):
        values = [r[c]["recall"] if (c := _column(*scan)) in r else 1.0 for r in result["rows"]]
        ax.bar(np.arange(len(names)) + i * width, values, width, label=_column(*scan))
    ax.set_xticks(np.arange(len(names)) + 0.4 - width / 2)
    ax.set_xticklabels(names, rotation=15)
    ax.set_ylabel(f"recall@{result['k']} vs exact")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--sets", nargs="+", default=["unseen-docstring", "unseen-three", "unseen-jdk-jshell"]
    )
    parser.add_argument("--queries", type=int, default=80)
    parser.add_argument("--k", type=int, default=20)
    args = parser.parse_args()
    unknown = sorted(set(args.sets) - set(SET_NAMES))
    if unknown:
        parser.error(f"unknown sets {unknown}; known: {', '.join(SET_NAMES)}")
    result = asyncio.run(measure(args.sets, args.queries, args.k))
    show(result)
    write_report(REPO_ROOT / "bench" / "results", "vector-recall", result, plot, console)


if __name__ == "__main__":
    main()
