"""The entity sets (evals/entities/): questions about people, organisations and their relations in
two public-domain novels, each corpus with the curated graph that ships with the set imported.

Each leg alone, and the gateway with the graph leg on (the profiles), with it off, and with graph
expansion, by split (`tune`, `held_out`). A chunk is an answer when it holds an answering line (the
answers are paragraphs: one line each). Ground truth comes from the text (evals/entities/README.md).

    make eval-entities                    # needs `make serve`; indexes and imports once per change
    .venv/bin/python -m evaluation.entity_sets --configs fused no-graph
"""

from __future__ import annotations

import argparse
import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from bench.report import grouped_bars, write_report
from evaluation import REPO_ROOT
from evaluation.metrics import is_loose_match, mean_scores, span_from
from evaluation.run import GATEWAY, EvalQuery, SearchFn, _searchers, console, ensure_indexed, run_leg
from tribrid.config import TriBridConfig, load_config
from tribrid.legs import LEG_NAMES
from tribrid.options import set_option
from tribrid.v1 import common_pb2, indexer_pb2, indexer_pb2_grpc

# Set name -> its folder: questions.jsonl, corpus/, and graph.jsonl when it brings a graph. The
# entity sets import theirs; code-docs (click's source and docs) and code-docs-jinja (Jinja's, all
# held out) rely on the indexer's own graph, where the docs MENTION the definitions they name.
SETS = {
    "en": REPO_ROOT / "evals" / "entities" / "en",
    "zh": REPO_ROOT / "evals" / "entities" / "zh",
    "code-docs": REPO_ROOT / "evals" / "code-docs",
    "code-docs-jinja": REPO_ROOT / "evals" / "code-docs-jinja",
}
DEFAULT_SETS = ("en", "zh")
OUT = REPO_ROOT / ".state" / "eval-entities"
TOP_K = 10
# The gateway's configurations: request options on top of the running config.
CONFIGS: dict[str, tuple[str, ...]] = {
    "fused": (),
    "no-graph": ("fusion.legs.graph.enabled=false",),
    "expansion": ("fusion.enable_expansion=true",),
    "no-graph-no-expansion": ("fusion.legs.graph.enabled=false", "fusion.enable_expansion=false"),
    # expanded chunks merged in by score, not appended after the fused ones
    "expansion-interleave": ("fusion.enable_expansion=true", "fusion.expansion_placement=interleave"),
}


@dataclass(frozen=True, slots=True)
class EntitySet:
    name: str  # "entities-en"
    corpus: str
    root: Path
    graph: Path
    queries: dict[str, list[EvalQuery]]  # split -> queries


def load(name: str) -> EntitySet:
    folder = SETS[name]
    splits: dict[str, list[EvalQuery]] = {}
    # questions.jsonl, then later rounds (questions-2.jsonl, ...), each question in its split
    lines = (
        line
        for path in sorted(folder.glob("questions*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
    )
    for line in lines:
        if line.strip():
            item = json.loads(line)
            query = EvalQuery(
                item["id"], item["query"], [span_from(r) for r in item["relevant"]], list(item["tags"])
            )
            splits.setdefault(item["split"], []).append(query)
    return EntitySet(
        f"entities-{name}", f"eval-entities-{name}", folder / "corpus", folder / "graph.jsonl", splits
    )


async def import_graph(cfg: TriBridConfig, entity_set: EntitySet) -> indexer_pb2.IndexProgress:
    request = indexer_pb2.ImportGraphRequest(
        corpus_id=entity_set.corpus, content=entity_set.graph.read_bytes(), source=entity_set.graph.name
    )
    last = indexer_pb2.IndexProgress()
    async with grpc.aio.insecure_channel(cfg.services.address("indexer")) as channel:
        async for event in indexer_pb2_grpc.IndexerStub(channel).ImportGraph(request, timeout=600):
            last = event
    console.print(
        f"{entity_set.corpus}: imported {last.imported_nodes} nodes, {last.imported_edges} edges,"
        f" {last.linked_mentions} chunk mentions linked"
        f" (generation {last.generation}, {last.elapsed_s:.1f} s)"
    )
    return last


def with_options(search: SearchFn, settings: tuple[str, ...]) -> SearchFn:
    async def run(request: common_pb2.SearchRequest) -> list[common_pb2.ChunkMatch]:
        for setting in settings:
            set_option(request.options, setting)
        return await search(request)

    return run


async def evaluate(
    cfg: TriBridConfig, sets: list[EntitySet], configs: list[str], legs: list[str]
) -> dict[str, Any]:
    channels = {name: grpc.aio.insecure_channel(cfg.services.address(name)) for name in (*LEG_NAMES, GATEWAY)}
    searchers = _searchers(cfg, channels, timeout_s=30)
    runs: dict[str, SearchFn] = {leg: searchers[leg] for leg in legs}
    for config in configs:
        runs[config] = with_options(searchers[GATEWAY], CONFIGS[config])
    results: dict[str, Any] = {}
    columns = (TextColumn("{task.description:<40}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    try:
        with Progress(*columns, console=console) as progress:
            for entity_set in sets:
                for split, queries in sorted(entity_set.queries.items()):
                    key = f"{entity_set.name}/{split}"
                    results[key] = {}
                    for name, search in runs.items():
                        run = await run_leg(
                            search,
                            entity_set.corpus,
                            queries,
                            TOP_K,
                            4,
                            progress,
                            f"{key} / {name}",
                            is_loose_match,
                        )
                        results[key][name] = {
                            **{k: round(v, 4) for k, v in mean_scores(run.scores).items()},
                            "n": len(queries),
                            "errors": run.errors,
                            "per_query": run.per_query,
                        }
    finally:
        for channel in channels.values():
            await channel.close()
    return results


def show(results: dict[str, Any]) -> None:
    names = list(next(iter(results.values())))
    table = Table(title="Entity sets: nDCG@10 (R@10), a chunk holding an answering line is an answer")
    table.add_column("set / split")
    table.add_column("n", justify="right")
    for name in names:
        table.add_column(name, justify="right")
    for key, by_name in results.items():
        n = next(iter(by_name.values()))["n"]
        table.add_row(
            key, str(n), *(f"{by_name[x]['ndcg10']:.3f} ({by_name[x]['recall10']:.2f})" for x in names)
        )
    console.print(table)


def plot(results: dict[str, Any], path: Path) -> None:
    groups = {key: {name: run["ndcg10"] for name, run in by_name.items()} for key, by_name in results.items()}
    grouped_bars(groups, path, "Entity sets: each leg, and fused with and without the graph")


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    cfg = load_config()
    sets = [load(name) for name in args.sets]
    if not args.no_index:
        await ensure_indexed(cfg, {s.corpus: s.root for s in sets})
        for entity_set in sets:
            if entity_set.graph.is_file():
                await import_graph(cfg, entity_set)
    return await evaluate(cfg, sets, args.configs, args.legs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=list(DEFAULT_SETS), choices=list(SETS))
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--legs", nargs="*", default=list(LEG_NAMES), choices=list(LEG_NAMES))
    parser.add_argument("--no-index", action="store_true", help="search what is indexed and imported")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    results = asyncio.run(main_async(args))
    show(results)
    write_report(args.out, "entities-latest", results, plot, console)


if __name__ == "__main__":
    main()
