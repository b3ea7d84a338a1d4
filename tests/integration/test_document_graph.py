"""The document graph the indexer writes: document and chunk nodes, CONTAINS, SIMILAR_TO, and an
incremental re-index of one changed document that ends exactly where a fresh index does."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests import FIXTURES
from tests.stack import Stack, index_corpus
from tribrid.graphstore.base import graph_key
from tribrid.models import Entity, Relation
from tribrid.stores.postgres import committed, corpus_generation
from tribrid.v1 import graph_pb2, graph_pb2_grpc
from tribrid.v1.indexer_pb2 import DeleteCorpusRequest
from tribrid.v1.indexer_pb2_grpc import IndexerStub

KNOWLEDGE = FIXTURES / "knowledge"


async def document_graph(stack: Stack, corpus_id: str) -> tuple[set[Entity], set[Relation]]:
    store = stack.resources.graph()
    generation = await corpus_generation(await stack.resources.pool(), corpus_id)
    assert generation is not None
    key = graph_key(corpus_id, generation)
    entities = set(await store.get_entities(key, await store.entity_ids(key)))
    return entities, set(await store.all_relations(key))


NamedGraph = tuple[set[tuple[str, str, str]], set[tuple[str, str, str, int, float, float]]]


def named_graph(graph: tuple[set[Entity], set[Relation]]) -> NamedGraph:
    """A graph by what its ids name (ids are derived from the corpus id); undirected edges as
    sorted pairs (stored from the smaller id, which differs between corpora)."""
    name = {e.entity_id: f"{e.type}:{e.qualified_name}:{e.name}" for e in graph[0]}
    edges = set()
    for r in graph[1]:
        ends = (name[r.source_id], name[r.target_id])
        if r.type in ("similar_to", "related_to"):
            ends = (min(ends), max(ends))
        edges.add((ends[0], r.type, ends[1], r.count, r.strength, r.similarity))
    return {(e.type, e.qualified_name, e.name) for e in graph[0]}, edges


async def test_document_nodes_and_edges_follow_the_documents(stack: Stack, tmp_path: Path) -> None:
    root = tmp_path / "docs"
    shutil.copytree(KNOWLEDGE, root)
    corpus_id = "docgraph_incremental"
    async with stack.channel("indexer") as channel:  # a fresh run: it reports what it merged
        await IndexerStub(channel).DeleteCorpus(DeleteCorpusRequest(corpus_id=corpus_id))
    progress = await index_corpus(stack, corpus_id, root)
    entities, relations = await document_graph(stack, corpus_id)
    pool = await stack.resources.pool()
    rows = await pool.fetch(
        "SELECT chunk_id, file_path FROM chunks c"
        f" WHERE corpus_id = $1 AND kind = 'section' AND {committed('c')}",
        corpus_id,
    )
    chunk_nodes = {e.entity_id: e for e in entities if e.type == "chunk"}
    documents = {e.entity_id: e for e in entities if e.type == "document"}
    assert set(chunk_nodes) == {r["chunk_id"] for r in rows}
    assert {e.chunk_id for e in chunk_nodes.values()} == set(chunk_nodes)  # a chunk node is its chunk
    assert sorted(d.file_path for d in documents.values()) == sorted({r["file_path"] for r in rows})
    contains = {(r.source_id, r.target_id) for r in relations if r.type == "contains"}
    assert contains == {(d_id, c.entity_id) for d_id, d in documents.items() for c in chunk_nodes.values()
                        if c.file_path == d.file_path}  # fmt: skip
    # named entities from the real model: Amundsen is a person mentioned across documents, and
    # related to the places the same chunks name
    named = {e.name: e for e in entities if e.type in stack.cfg.entities.types.values()}
    assert named["Roald Amundsen"].type == "person" and "Amundsen" in named["Roald Amundsen"].aliases
    assert named["Oslo"].type == "location"
    # the run reports the named entities and the names it folded into longer ones ("Amundsen")
    assert progress.named_entities == len(named)
    aliases = sum(len(e.aliases) for e in named.values())
    assert 1 <= progress.named_entities_merged <= aliases
    mentions = [r for r in relations if r.type == "mentions"]
    amundsen = named["Roald Amundsen"].entity_id
    mentioning = {r.source_id for r in mentions if r.target_id == amundsen}
    assert {chunk_nodes[c].file_path for c in mentioning} >= {"expedition.md", "museum.md", "rivals.md"}
    assert all(r.count >= 1 and r.source_id in chunk_nodes for r in mentions)
    related = [r for r in relations if r.type == "related_to"]
    assert related and all(0 < r.strength <= 1 and r.source_id < r.target_id for r in related)
    chunks_of = {
        e: {r.source_id for r in mentions if r.target_id == e} for e in {r.target_id for r in mentions}
    }
    for r in related:  # Jaccard over the chunks that mention each entity
        a, b = chunks_of[r.source_id], chunks_of[r.target_id]
        assert r.strength == round(len(a & b) / len(a | b), 6)
    async with stack.channel("graph") as channel:
        stats = await graph_pb2_grpc.GraphSearchStub(channel).Stats(
            graph_pb2.GraphStatsRequest(corpus_id=corpus_id, top_entities=3), timeout=30
        )
    top = [(t.entity.name, t.chunks) for t in stats.top_entities]
    assert len(top) == 3 and top[0] == ("Roald Amundsen", len(mentioning))
    assert top == sorted(top, key=lambda t: -t[1])
    assert stats.top_entities[0].description.startswith(f"person mentioned {len(mentioning)}")
    similar = [r for r in relations if r.type == "similar_to"]
    assert similar and all(r.similarity >= stack.cfg.graph.similar_to_threshold for r in similar)
    assert all(r.source_id < r.target_id and r.source_id in chunk_nodes for r in similar)

    # Change one document: the incremental run's graph is the one a fresh index builds.
    museum = root / "museum.md"
    museum.write_text(museum.read_text() + "\n\n## Visiting\n\nThe museum in Oslo opens every day.\n")
    await index_corpus(stack, corpus_id, root)
    incremental = await document_graph(stack, corpus_id)
    fresh_id = "docgraph_fresh"
    await index_corpus(stack, fresh_id, root)
    fresh_entities, fresh_relations = await document_graph(stack, fresh_id)
    assert incremental != (entities, relations)

    got, want = named_graph(incremental), named_graph((fresh_entities, fresh_relations))
    assert got[0] == want[0]
    assert sorted(got[1] - want[1]) == sorted(want[1] - got[1]) == []
