"""Document graph search latency: the graph leg's document search (services.graph.documents) on
a synthetic document graph, read from memory (GraphSnapshot) and from the store (FalkorDB).

Starts its own embedded PostgreSQL and FalkorDB under --state-dir (free ports, so it never
touches `make up`'s stores), writes one corpus: --chunks chunk nodes (and rows), --entities named
entities, 3 MENTIONS per chunk (popular entities more often), RELATED_TO edges (about 4 per
entity, strengths 0.1..1) and SIMILAR_TO edges (2 per chunk, similarities 0.6..0.95). Then runs
--queries questions naming one or two entities, each once per reader after a warm-up pass, and
prints p50/p99 per reader, for the search (depth 2) and for an expansion from 5 chunks (depth 1).

    .venv/bin/python -m bench.bench_document_search [--chunks 3000 --entities 1000 --queries 300]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from bench.procstack import free_port
from services.graph.documents import DocumentSettings, document_expansion, document_search
from services.graph.search import GraphResult
from services.graph.snapshot import GraphSnapshot
from tribrid.config import TriBridConfig, load_config
from tribrid.graphstore.base import GraphView, graph_key
from tribrid.models import Entity, Relation
from tribrid.resources import Resources
from tribrid.search_common import SearchParams
from tribrid.stores import embedded

CORPUS = "bench-docsearch"
GENERATION = 1
TYPES = ("person", "organization", "location", "event")
_SYLLABLES = ["al", "ber", "cor", "dan", "el", "fra", "gor", "hal", "in", "jo", "kel", "lor", "mar", "nor"]
_SUFFIX = {"person": "", "organization": " Group", "location": " Valley", "event": " Summit"}


def synthetic_graph(
    n_chunks: int, n_entities: int, rng: random.Random
) -> tuple[list[Entity], list[Relation]]:
    names: dict[str, None] = {}
    while len(names) < n_entities:
        first = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 3))).capitalize()
        last = "".join(rng.choice(_SYLLABLES) for _ in range(2)).capitalize()
        names.setdefault(f"{first} {last}", None)
    named = []
    for i, name in enumerate(names):
        type_ = TYPES[i % len(TYPES)]
        full = name + _SUFFIX[type_]
        aliases = (name.split()[0],) if type_ == "organization" else ()
        named.append(Entity(f"e{i:05d}", CORPUS, type_, full, full, "", 0, 0, "", (), aliases))
    chunks = [
        Entity(
            f"c{i:05d}",
            CORPUS,
            "chunk",
            f"Doc {i // 20} > Part {i % 20}",
            f"doc{i // 20}.md:{i}",
            "",
            1,
            9,
            f"c{i:05d}",
        )
        for i in range(n_chunks)
    ]
    documents = [
        Entity(f"d{d:04d}", CORPUS, "document", f"Doc {d}", f"doc{d}.md", f"doc{d}.md", 0, 0, "")
        for d in range((n_chunks + 19) // 20)
    ]
    relations: dict[tuple[str, str, str], Relation] = {}
    weights = [1.0 / (rank + 1) ** 0.8 for rank in range(n_entities)]  # a few entities everywhere
    for number, chunk in enumerate(chunks):
        document = documents[number // 20].entity_id
        relations[(document, "contains", chunk.entity_id)] = Relation(document, chunk.entity_id, "contains")
        for entity in set(rng.choices(named, weights, k=3)):
            key = (chunk.entity_id, "mentions", entity.entity_id)
            relations[key] = Relation(*key[::2], "mentions", count=rng.randint(1, 4))
        for _ in range(2):
            other = rng.choice(chunks).entity_id
            a, b = sorted((chunk.entity_id, other))
            if a != b:
                relations[(a, "similar_to", b)] = Relation(
                    a, b, "similar_to", similarity=rng.uniform(0.6, 0.95)
                )
    for entity in named:
        for _ in range(4):
            a, b = sorted((entity.entity_id, rng.choice(named).entity_id))
            if a != b:
                relations[(a, "related_to", b)] = Relation(a, b, "related_to", strength=rng.uniform(0.1, 1.0))
    return [*documents, *chunks, *named], list(relations.values())


async def load(res: Resources, entities: list[Entity], relations: list[Relation]) -> str:
    pool = await res.pool()
    await pool.execute("DELETE FROM corpora WHERE corpus_id = $1", CORPUS)
    dim = res.cfg.embedding.dim
    await pool.execute(
        "INSERT INTO corpora (corpus_id, root_path, embedding_model, embedding_dim, generation)"
        " VALUES ($1, '/nowhere', 'none', $2, $3)",
        CORPUS,
        dim,
        GENERATION,
    )
    chunks = [e for e in entities if e.type == "chunk"]
    await pool.executemany(
        "INSERT INTO chunks (corpus_id, chunk_id, generation, file_path, start_line, end_line, language,"
        " kind, symbol, content, embedding, tsv, term_count)"
        " VALUES ($1, $2, $3, $4, 1, 9, 'markdown', 'section', $5, $5,"
        " array_fill(0.1, ARRAY[$6::int])::real[]::vector, to_tsvector('simple', $5), 1)",
        [(CORPUS, c.chunk_id, GENERATION, c.qualified_name, c.name, dim) for c in chunks],
    )
    store = res.graph()
    key = graph_key(CORPUS, GENERATION)
    await store.delete_corpus(key)
    await store.ensure_schema(key)
    await store.upsert_entities(key, entities)
    await store.upsert_relations(key, relations)
    return key


def questions(entities: list[Entity], n: int, rng: random.Random) -> list[str]:
    named = [e for e in entities if e.type in TYPES]
    asked = []
    for i in range(n):
        first, second = rng.sample(named, 2)
        asked.append(
            f"Where did {first.name} meet {second.name}?" if i % 3 == 0 else f"What is {first.name}?"
        )
    return asked


async def timed(calls: list[Callable[[], Awaitable[object]]]) -> list[float]:
    for call in calls[:20]:  # warm-up: fulltext cache, pool connections
        await call()
    took = []
    for call in calls:
        started = time.perf_counter()
        await call()
        took.append((time.perf_counter() - started) * 1000)
    return took


def summary(took: list[float]) -> str:
    p99 = statistics.quantiles(took, n=100)[98]
    return f"p50 {statistics.median(took):7.2f} ms   p99 {p99:7.2f} ms   ({len(took)} calls)"


async def run(args: argparse.Namespace) -> None:
    cfg: TriBridConfig = load_config(
        state_dir=Path(args.state_dir),
        postgres={"port": free_port(), "database": "tribrid_bench"},
        graph_store={"falkordb_port": free_port(), "graph_prefix": "tribrid_bench_"},
    )
    embedded.down(cfg)
    embedded.up(cfg)
    res = Resources(cfg)
    try:
        rng = random.Random(7)
        entities, relations = synthetic_graph(args.chunks, args.entities, rng)
        started = time.perf_counter()
        key = await load(res, entities, relations)
        print(
            f"graph: {len(entities)} nodes, {len(relations)} edges,"
            f" written in {time.perf_counter() - started:.1f} s"
        )
        store = res.graph()
        snapshot = await GraphSnapshot.load(store, key, fulltext_cache_terms=cfg.graph.fulltext_cache_terms)
        pool = await res.pool(search=True)
        settings = DocumentSettings.of(cfg.graph, cfg.entities.types.values())
        asked = questions(entities, args.queries, rng)
        chunk_ids = [e.entity_id for e in entities if e.type == "chunk"]
        starts = [rng.sample(chunk_ids, 5) for _ in range(args.queries)]
        readers: dict[str, GraphView] = {"snapshot": snapshot, "store": store}
        for name, reader in readers.items():

            def search_call(query: str, reader: GraphView = reader) -> Callable[[], Awaitable[GraphResult]]:
                params = SearchParams(CORPUS, query, 30, None, ())
                return lambda: document_search(reader, pool, key, params, settings)

            def expand_call(ids: list[str], reader: GraphView = reader) -> Callable[[], Awaitable[object]]:
                return lambda: document_expansion(reader, pool, CORPUS, key, ids, 1, 30, settings)

            hits = [len((await search_call(q)()).chunks) for q in asked[:50]]
            print(
                f"{name:8s} search (depth 2): {summary(await timed([search_call(q) for q in asked]))}"
                f"   mean hits {statistics.mean(hits):.1f}"
            )
            print(f"{name:8s} expand (depth 1): {summary(await timed([expand_call(ids) for ids in starts]))}")
    finally:
        await res.close()
        embedded.down(cfg)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--chunks", type=int, default=3000)
    parser.add_argument("--entities", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--state-dir", default="/tmp/tribrid-bench-docsearch")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
