"""Where the graph leg can add on the entity sets: for each split, fused with and without the graph
(re-fused offline from the legs' lists, as `evaluation/refuse.py` does it), and the most any fusion of
those lists could reach: nDCG@10 with every answer that any list holds ranked first, over the vector
and sparse lists and over all three. A question whose answers only the graph's list holds is one the
graph can add recall to; elsewhere it can only change the order.

    python -m evaluation.entity_bounds            # needs `make serve` and `make eval-entities` once
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.table import Table

from bench.report import grouped_bars, write_report
from evaluation.entity_sets import DEFAULT_SETS, OUT, SETS, load
from evaluation.metrics import TOLERANCE, Span, is_loose_match, judge, ndcg_at, score_query
from evaluation.refuse import LegLists, LegSearch, corpus_profiles, gateway_order
from evaluation.run import EvalQuery, console
from tribrid.config import FusionConfig, load_config

WITHOUT_GRAPH = ("vector", "sparse")
WITH_GRAPH = ("vector", "sparse", "graph")


def ndcg10(matches: Sequence[Any], query: EvalQuery) -> float:
    hits = [Span(m.file_path, m.start_line, m.end_line) for m in matches]
    return score_query(hits, query.relevant, strict=is_loose_match).ndcg10


def bound(query: EvalQuery, lists: LegLists, legs: Sequence[str]) -> float:
    """nDCG@10 of the best order of the union of `legs`' lists: every answer it holds first."""
    pool: dict[str, Any] = {}
    for leg in legs:
        outcome = lists.answered.get(leg)
        for match in outcome.matches if outcome is not None else ():
            pool.setdefault(match.chunk_id, match)
    hits = [Span(m.file_path, m.start_line, m.end_line) for m in pool.values()]
    found = sum(judge(hits, query.relevant, TOLERANCE, is_loose_match))
    return ndcg_at([True] * found, len(query.relevant), 10)


def without_graph(fusion: FusionConfig) -> FusionConfig:
    legs = dict(fusion.legs)
    legs["graph"] = legs["graph"].model_copy(update={"enabled": False})
    return fusion.model_copy(update={"legs": legs})


def split_row(fusion: FusionConfig, asked: list[tuple[EvalQuery, LegLists]]) -> dict[str, float]:
    def mean(values: Sequence[float]) -> float:
        return sum(values) / len(values)

    no_graph = without_graph(fusion)
    return {
        "n": len(asked),
        "fused": mean([ndcg10(gateway_order(fusion, lists), q) for q, lists in asked]),
        "no_graph": mean([ndcg10(gateway_order(no_graph, lists), q) for q, lists in asked]),
        "bound_vector_sparse": mean([bound(q, lists, WITHOUT_GRAPH) for q, lists in asked]),
        "bound_with_graph": mean([bound(q, lists, WITH_GRAPH) for q, lists in asked]),
        "graph_only": sum(bound(q, lists, WITH_GRAPH) > bound(q, lists, WITHOUT_GRAPH) for q, lists in asked),
    }


async def measure(set_names: Sequence[str]) -> dict[str, dict[str, float]]:
    cfg = load_config()
    sets = [load(name) for name in set_names]
    profiles = await corpus_profiles(cfg, [s.corpus for s in sets])
    search = LegSearch(cfg, timeout_s=30)
    gate = asyncio.Semaphore(4)

    async def fetch(corpus: str, query: EvalQuery) -> tuple[EvalQuery, LegLists]:
        async with gate:
            depth = cfg.fusion.candidates_per_leg
            return query, await search.fetch(cfg.fusion, corpus, query.query, profiles[corpus], depth)

    results: dict[str, dict[str, float]] = {}
    try:
        for entity_set in sets:
            for split, queries in sorted(entity_set.queries.items()):
                asked = await asyncio.gather(*(fetch(entity_set.corpus, q) for q in queries))
                results[f"{entity_set.name}/{split}"] = split_row(cfg.fusion, list(asked))
    finally:
        await search.close()
    return results


def show(results: dict[str, dict[str, float]]) -> None:
    table = Table(title="Entity sets: fused nDCG@10, and the most a fusion of the legs' lists could reach")
    for column in ("set / split", "n", "fused", "no graph", "bound v+s", "bound v+s+g", "graph-only answers"):
        table.add_column(column, justify="left" if column == "set / split" else "right")
    for key, row in results.items():
        table.add_row(
            key,
            str(row["n"]),
            *(f"{row[k]:.3f}" for k in ("fused", "no_graph", "bound_vector_sparse", "bound_with_graph")),
            f"{row['graph_only']} of {row['n']}",
        )
    console.print(table)


def plot(results: dict[str, dict[str, float]], path: Path) -> None:
    columns = {
        "fused": "fused",
        "no_graph": "no graph",
        "bound_vector_sparse": "bound v+s",
        "bound_with_graph": "bound v+s+g",
    }
    groups = {key: {label: row[name] for name, label in columns.items()} for key, row in results.items()}
    grouped_bars(groups, path, "Entity sets: fused, and the bound of any fusion of the legs' lists")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=list(DEFAULT_SETS), choices=list(SETS))
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    results = asyncio.run(measure(args.sets))
    show(results)
    write_report(args.out, "entity-bounds-latest", results, plot, console)


if __name__ == "__main__":
    main()
