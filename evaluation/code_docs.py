"""From the code to its docs: for each question of evals/code-docs/ that pairs a definition with
the docs sections about it, how many of those sections the graph reaches from the definition
(`EntityChunks`: its own chunk, then the document chunks that MENTION it), against a lexical
baseline (the sparse leg asked for the definition's name, its document chunks only). Ground truth
is the set's (ast spans, rst sections); needs `make serve` and the corpus indexed
(`python -m evaluation.entity_sets --sets code-docs` indexes it).

    .venv/bin/python -m evaluation.code_docs [--set code-docs-jinja]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
from dataclasses import dataclass

import grpc
from rich.table import Table

from evaluation import REPO_ROOT
from evaluation.metrics import Span, overlap, span_from
from evaluation.run import console
from tribrid.config import load_config
from tribrid.stores.postgres import committed, create_pool
from tribrid.v1 import common_pb2, graph_pb2, graph_pb2_grpc, sparse_pb2_grpc

SETS = ("code-docs", "code-docs-jinja")  # folders of evals/, corpora eval-entities-<set>
DOCS = "docs/"
LIMIT = 50  # chunks asked of each method


@dataclass(frozen=True, slots=True)
class Pair:
    question: str
    split: str
    code: Span
    docs: list[Span]


def pairs(name: str) -> list[Pair]:
    found = []
    questions = REPO_ROOT / "evals" / name / "questions.jsonl"
    for line in questions.read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        spans = [span_from(r) for r in item["relevant"]]
        code = [s for s in spans if not s.path.startswith(DOCS)]
        docs = [s for s in spans if s.path.startswith(DOCS)]
        for definition in code:
            found.append(Pair(item["id"], item["split"], definition, docs))
    return found


def recall(returned: list[Span], wanted: list[Span]) -> float:
    return sum(any(overlap(r, w) for r in returned) for w in wanted) / len(wanted)


async def main_async(name: str) -> None:
    corpus = f"eval-entities-{name}"
    cfg = load_config()
    pool = await create_pool(cfg.postgres, cfg.embedding.dim, cfg.vector)
    graph = grpc.aio.insecure_channel(cfg.services.address("graph"))
    sparse = grpc.aio.insecure_channel(cfg.services.address("sparse"))
    by_split: dict[str, dict[str, list[float]]] = {}
    try:
        for pair in pairs(name):
            # the definition: the entity defined at the span's first line, in a chunk holding it
            chunk_ids = await pool.fetch(
                f"""SELECT chunk_id FROM chunks c WHERE corpus_id = $1 AND file_path = $2
                    AND start_line <= $3 AND end_line >= $3 AND {committed("c")}""",
                corpus,
                pair.code.path,
                pair.code.start_line,
            )
            stub = graph_pb2_grpc.GraphSearchStub(graph)
            entity = None
            for row in chunk_ids:
                reply = await stub.ChunkEntities(
                    graph_pb2.ChunkEntitiesRequest(corpus_id=corpus, chunk_id=row["chunk_id"])
                )
                entity = next((e for e in reply.defined if e.start_line == pair.code.start_line), entity)
            if entity is None:
                continue
            chunks = await stub.EntityChunks(
                graph_pb2.EntityChunksRequest(
                    corpus_id=corpus, entity=graph_pb2.EntityRef(entity_id=entity.entity_id), limit=LIMIT
                )
            )
            linked = [
                Span(m.file_path, m.start_line, m.end_line)
                for m in chunks.matches
                if m.file_path.startswith(DOCS)
            ]
            name = ".".join(entity.qualified_name.split(".")[-2:])
            lexical = await sparse_pb2_grpc.SparseSearchStub(sparse).Search(
                common_pb2.SearchRequest(corpus_id=corpus, query=name, top_k=LIMIT)
            )
            words = [
                Span(m.file_path, m.start_line, m.end_line)
                for m in lexical.matches
                if m.file_path.startswith(DOCS)
            ]
            counts = by_split.setdefault(
                pair.split, {"graph": [], "sparse": [], "graph_n": [], "sparse_n": []}
            )
            counts["graph"].append(recall(linked, pair.docs))
            counts["sparse"].append(recall(words[: max(len(linked), 1)], pair.docs))
            counts["graph_n"].append(len(linked))
            counts["sparse_n"].append(len(words[: max(len(linked), 1)]))
    finally:
        await graph.close()
        await sparse.close()
        await pool.close()
    table = Table(title=f"{name}, from a definition to the docs about it: recall of the docs sections")
    for column in (
        "split",
        "definitions",
        "graph (EntityChunks)",
        "sparse, as many chunks",
        "doc chunks returned",
    ):
        table.add_column(column, justify="right")
    for split, counts in sorted(by_split.items()):
        table.add_row(
            split,
            str(len(counts["graph"])),
            f"{statistics.mean(counts['graph']):.3f}",
            f"{statistics.mean(counts['sparse']):.3f}",
            f"{statistics.mean(counts['graph_n']):.1f}",
        )
    console.print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", default=SETS[0], choices=SETS)
    asyncio.run(main_async(parser.parse_args().set))


if __name__ == "__main__":
    main()
