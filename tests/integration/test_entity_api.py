"""The entity API on a document graph written straight into FalkorDB + PostgreSQL (as the indexer
writes it): EntitySearch, PathBetween and EntityChunks by names and aliases, ChunkEntities,
Neighbors' edge properties, and the operators' read-only Cypher hatch (on Neo4j too when
NEO4J_URI is set); one RPC over the HTTP bridge (through the CLI: tests/e2e/test_entity_api_cli.py)."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import grpc
import httpx
import pytest
from google.protobuf import json_format

from services.bridge.service import start_bridge
from services.graph.entities import ENTITY_RELATION_TYPES, by_name, describe, walk_relations
from services.graph.service import GraphServicer
from services.graph.snapshot import GraphSnapshot
from tests.integration.test_graph_leg import entities_named, graph_corpus
from tests.integration.test_graphstore import BACKENDS, backend_config
from tests.stack import Stack, StoredChunk, store_committed_chunks
from tribrid.config import TriBridConfig
from tribrid.graphstore import GraphStore, open_graph_store
from tribrid.graphstore.base import CypherRejected, CypherTimedOut, graph_key
from tribrid.graphstore.cypher_store import CypherGraphStore
from tribrid.models import Entity, Relation
from tribrid.options import RequestError
from tribrid.v1 import graph_pb2, graph_pb2_grpc

GENERATION = 2
INVALID = grpc.StatusCode.INVALID_ARGUMENT


@dataclass(frozen=True)
class DocChunk:
    chunk_id: str
    document: str  # its document's entity id
    path: str
    title: str
    section: str
    pages: tuple[int, int]


DOCUMENTS = {"d-manual": ("manual.md", "Server Manual"), "d-guide": ("guide.md", "Setup Guide")}
CHUNKS = [
    DocChunk("c1", "d-manual", "manual.md", "Server Manual", "Server Manual > Intro", (1, 1)),
    DocChunk("c2", "d-manual", "manual.md", "Server Manual", "Server Manual > Ports", (2, 3)),
    DocChunk("c3", "d-guide", "guide.md", "Setup Guide", "Setup Guide > Texas office", (4, 4)),
]
# entity id -> (type, name, aliases)
NAMED = {
    "e-dell": ("organization", "Dell Technologies", ("Dell",)),
    "e-texas": ("location", "Texas", ()),
    "e-austin": ("location", "Austin", ()),
    "e-michael": ("person", "Michael Dell", ()),
    "e-jordan-p": ("person", "Jordan", ()),
    "e-jordan-l": ("location", "Jordan", ()),
}
MENTIONS = [
    ("c1", "e-dell", 3),
    ("c1", "e-texas", 1),
    ("c2", "e-dell", 1),
    ("c2", "e-michael", 2),
    ("c3", "e-austin", 1),
    ("c3", "e-dell", 3),
    ("c3", "e-texas", 2),
]
RELATED = [("e-austin", "e-texas", 0.9), ("e-dell", "e-michael", 0.6), ("e-dell", "e-texas", 0.8)]


def document_graph(corpus_id: str) -> tuple[list[Entity], list[Relation]]:
    nodes = [
        Entity(doc_id, corpus_id, "document", title, path, path, 0, 0, "")
        for doc_id, (path, title) in DOCUMENTS.items()
    ]
    nodes += [
        Entity(c.chunk_id, corpus_id, "chunk", c.section, f"{c.path}:1-5", c.path, 1, 5, c.chunk_id)
        for c in CHUNKS
    ]
    nodes += [
        Entity(eid, corpus_id, type_, name, name, "", 0, 0, "", (), aliases)
        for eid, (type_, name, aliases) in NAMED.items()
    ]
    relations = [Relation(c.document, c.chunk_id, "contains") for c in CHUNKS]
    relations += [Relation(chunk, entity, "mentions", count=n) for chunk, entity, n in MENTIONS]
    relations += [Relation(a, b, "related_to", strength=s) for a, b, s in RELATED]
    relations.append(Relation("c1", "c2", "similar_to", similarity=0.75))
    return nodes, relations


@pytest.fixture(scope="module")
async def doc_corpus(stack: Stack) -> AsyncIterator[str]:
    """A committed document corpus: chunk rows with their document metadata, and its graph."""
    corpus_id = f"ent-{uuid.uuid4().hex[:10]}"
    await store_committed_chunks(
        stack,
        corpus_id,
        GENERATION,
        [StoredChunk(c.chunk_id, c.path, "markdown", "", f"text of {c.section}") for c in CHUNKS],
    )
    pool = await stack.resources.pool()
    await pool.executemany(
        "UPDATE chunks SET document_title = $3, section = $4, page_start = $5, page_end = $6"
        " WHERE corpus_id = $1 AND chunk_id = $2",
        [(corpus_id, c.chunk_id, c.title, c.section, *c.pages) for c in CHUNKS],
    )
    store = stack.resources.graph()
    key = graph_key(corpus_id, GENERATION)
    nodes, relations = document_graph(corpus_id)
    await store.ensure_schema(key)
    await store.upsert_entities(key, nodes)
    assert await store.upsert_relations(key, relations) == len(relations)
    yield corpus_id
    await store.delete_corpus(key)
    await pool.execute("DELETE FROM corpora WHERE corpus_id = $1", corpus_id)


async def call(stack: Stack, method: str, request: Any) -> Any:
    async with stack.channel("graph") as channel:
        return await getattr(graph_pb2_grpc.GraphSearchStub(channel), method)(request, timeout=30)


async def expect_error(stack: Stack, method: str, request: Any, code: grpc.StatusCode, message: str) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as excinfo:
        await call(stack, method, request)
    assert excinfo.value.code() == code, excinfo.value.details()
    assert message in (excinfo.value.details() or ""), excinfo.value.details()


def ref(name: str) -> graph_pb2.EntityRef:
    return graph_pb2.EntityRef(name=name)


async def entity_search(stack: Stack, corpus_id: str, name: str, **fields: Any) -> Any:
    request = graph_pb2.EntitySearchRequest(corpus_id=corpus_id, entity=ref(name), **fields)
    return await call(stack, "EntitySearch", request)


def relation_rows(reply: graph_pb2.EntitySearchResponse) -> list[tuple[int, str, str, str, str, float]]:
    return [
        (r.hops, r.source.entity_id, r.relation, r.direction, r.target.entity_id, r.properties.strength)
        for r in reply.relations
    ]


# --- EntitySearch -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["Dell Technologies", "dell technologies", "Dell", "DELL"])
async def test_entity_search_by_name_and_alias(stack: Stack, doc_corpus: str, name: str) -> None:
    reply = await entity_search(stack, doc_corpus, name)
    assert reply.entity.entity_id == "e-dell" and list(reply.entity.aliases) == ["Dell"]
    assert reply.total == 3
    assert relation_rows(reply) == [
        (1, "e-dell", "related_to", "out", "e-michael", 0.6),
        (1, "e-dell", "related_to", "out", "e-texas", 0.8),
        # named with Dell once (c3), related by no stored edge: a relation stated once
        (1, "e-dell", "co_mentioned", "both", "e-austin", 0.0),
    ]
    michael, texas, austin = reply.relations
    assert (austin.properties.count, list(austin.chunk_ids)) == (1, ["c3"])
    assert (michael.target.type, texas.target.type) == ("person", "location")
    assert michael.description == "person mentioned 2 times in 1 chunk of 1 document"
    assert texas.description == "location mentioned 3 times in 2 chunks of 2 documents"


async def test_entity_search_two_hops_and_limit(stack: Stack, doc_corpus: str) -> None:
    reply = await entity_search(stack, doc_corpus, "dell", max_hops=2)
    assert reply.total == 3
    assert relation_rows(reply) == [
        (1, "e-dell", "related_to", "out", "e-michael", 0.6),
        (1, "e-dell", "related_to", "out", "e-texas", 0.8),
        # austin -> texas is stored from the smaller id: seen from Texas it comes in
        (2, "e-texas", "related_to", "in", "e-austin", 0.9),
    ]
    assert reply.relations[2].source.name == "Texas"
    limited = await entity_search(stack, doc_corpus, "dell", max_hops=2, limit=1)
    assert limited.total == 3 and relation_rows(limited) == relation_rows(reply)[:1]


async def test_entity_search_relation_filter(stack: Stack, doc_corpus: str) -> None:
    related = await entity_search(stack, doc_corpus, "Texas", relation="related_to")
    assert [r.target.entity_id for r in related.relations] == ["e-austin", "e-dell"]
    assert [r.direction for r in related.relations] == ["in", "in"]
    # chunks are never listed, whatever the relation: MENTIONS is EntityChunks' answer
    assert (await entity_search(stack, doc_corpus, "Texas", relation="mentions")).total == 0
    assert (await entity_search(stack, doc_corpus, "Texas", relation="calls")).total == 0


async def test_entity_search_code_entity(stack: Stack) -> None:
    edges = [Relation("a", "b", "calls"), Relation("c", "a", "calls"), Relation("b", "d", "calls")]
    async with graph_corpus(stack, "entc", entities_named(["a", "b", "c", "d"]), edges) as corpus_id:
        reply = await entity_search(stack, corpus_id, "a", max_hops=2)
    rows = [(r.hops, r.source.name, r.relation, r.direction, r.target.name) for r in reply.relations]
    assert rows == [
        (1, "a", "calls", "out", "b"),
        (1, "a", "calls", "in", "c"),
        (2, "b", "calls", "out", "d"),
    ]
    assert reply.relations[0].description == "function app.b at app/b.py:1-5"


async def test_entity_search_bad_input(stack: Stack, doc_corpus: str) -> None:
    def req(**fields: Any) -> graph_pb2.EntitySearchRequest:
        return graph_pb2.EntitySearchRequest(corpus_id=doc_corpus, **fields)

    not_found = grpc.StatusCode.NOT_FOUND
    await expect_error(
        stack, "EntitySearch", req(entity=ref("Nobody")), not_found, "entity 'Nobody' not found"
    )
    # control characters are no word of the fulltext index (RediSearch refused them, escaped or not)
    for name in ("0\b", "x\x7f"):
        await expect_error(
            stack, "EntitySearch", req(entity=ref(name)), not_found, f"entity {name!r} not found"
        )
    await expect_error(
        stack,
        "EntitySearch",
        req(entity=ref("dell"), max_hops=4),
        INVALID,
        "max_hops: must be between 1 and 3",
    )
    await expect_error(
        stack, "EntitySearch", req(entity=ref("dell"), limit=201), INVALID, "limit: must be between 1 and 200"
    )
    await expect_error(
        stack,
        "EntitySearch",
        req(entity=ref("dell"), relation="x]"),
        INVALID,
        "relation: String should match",
    )
    await expect_error(  # a well-formed type the graph cannot hold: a typo, or another graph's
        stack,
        "EntitySearch",
        req(entity=ref("dell"), relation="RELATD_TO"),
        INVALID,
        "relation: this corpus's graph has no relationship type 'RELATD_TO'; it has contains, mentions,",
    )
    await expect_error(
        stack, "EntitySearch", req(), INVALID, "set exactly one of entity_id, qualified_name or name"
    )
    with pytest.raises(grpc.aio.AioRpcError) as excinfo:
        await call(stack, "EntitySearch", req(entity=ref("jordan")))
    details = excinfo.value.details() or ""
    assert excinfo.value.code() == INVALID and "'jordan' is ambiguous: 2 entities fit" in details
    assert "Jordan (location, id e-jordan-l)" in details and "Jordan (person, id e-jordan-p)" in details
    # an id names one of them; a chunk's section is not a plain name
    by_id = await call(stack, "EntitySearch", req(entity=graph_pb2.EntityRef(entity_id="e-jordan-p")))
    assert by_id.entity.type == "person" and by_id.total == 0
    await expect_error(
        stack, "EntitySearch", req(entity=ref("Server Manual > Ports")), not_found, "not found"
    )


# --- PathBetween, Neighbors ---------------------------------------------------------------------


async def test_path_between_names_with_edge_properties(stack: Stack, doc_corpus: str) -> None:
    request = graph_pb2.PathBetweenRequest(corpus_id=doc_corpus, source=ref("dell"), target=ref("TEXAS"))
    path = await call(stack, "PathBetween", request)
    assert path.found and [e.entity_id for e in path.entities] == ["e-dell", "e-texas"]
    assert list(path.relationship_types) == ["related_to"]
    assert [(e.strength, e.count) for e in path.edges] == [(0.8, 0)]
    # two hops either way (RELATED_TO twice, or MENTIONS in and out of a chunk): the smaller types win
    request = graph_pb2.PathBetweenRequest(
        corpus_id=doc_corpus, source=ref("Michael Dell"), target=ref("Dell")
    )
    path = await call(stack, "PathBetween", request)
    assert [e.entity_id for e in path.entities] == ["e-michael", "e-dell"]
    request = graph_pb2.PathBetweenRequest(corpus_id=doc_corpus, source=ref("Dell"), target=ref("Austin"))
    path = await call(stack, "PathBetween", request)
    assert [e.entity_id for e in path.entities] == ["e-dell", "c3", "e-austin"]
    assert list(path.relationship_types) == ["mentions", "mentions"]
    assert [e.count for e in path.edges] == [3, 1]


async def test_neighbors_carry_edge_properties(stack: Stack, doc_corpus: str) -> None:
    request = graph_pb2.NeighborsRequest(corpus_id=doc_corpus, entity=ref("Dell"))
    reply = await call(stack, "Neighbors", request)
    found = {(e.relationship_type, e.direction, e.entity_id): e.edge for e in reply.entities}
    assert {k: (v.count, v.strength) for k, v in found.items()} == {
        ("related_to", "out", "e-michael"): (0, 0.6),
        ("related_to", "out", "e-texas"): (0, 0.8),
        ("mentions", "in", "c1"): (3, 0.0),
        ("mentions", "in", "c2"): (1, 0.0),
        ("mentions", "in", "c3"): (3, 0.0),
    }
    chunk = await call(
        stack,
        "Neighbors",
        graph_pb2.NeighborsRequest(corpus_id=doc_corpus, entity=graph_pb2.EntityRef(entity_id="c2")),
    )
    similar = [e for e in chunk.entities if e.relationship_type == "similar_to"]
    assert [(e.entity_id, e.direction, e.edge.similarity) for e in similar] == [("c1", "in", 0.75)]


# --- EntityChunks, ChunkEntities ----------------------------------------------------------------


async def test_entity_chunks_by_mentions(stack: Stack, doc_corpus: str) -> None:
    request = graph_pb2.EntityChunksRequest(corpus_id=doc_corpus, entity=ref("Dell"))
    reply = await call(stack, "EntityChunks", request)
    rows = [
        (m.chunk_id, m.score, m.document_title, m.section, m.page_start, m.page_end) for m in reply.matches
    ]
    assert rows == [
        ("c1", 3.0, "Server Manual", "Server Manual > Intro", 1, 1),
        ("c3", 3.0, "Setup Guide", "Setup Guide > Texas office", 4, 4),
        ("c2", 1.0, "Server Manual", "Server Manual > Ports", 2, 3),
    ]
    assert reply.matches[0].content == "text of Server Manual > Intro"
    request.limit = 2
    assert [m.chunk_id for m in (await call(stack, "EntityChunks", request)).matches] == ["c1", "c3"]
    request.limit = 501
    await expect_error(stack, "EntityChunks", request, INVALID, "limit: must be between 1 and 500; got 501")
    document = graph_pb2.EntityChunksRequest(
        corpus_id=doc_corpus, entity=graph_pb2.EntityRef(qualified_name="manual.md")
    )
    assert [m.chunk_id for m in (await call(stack, "EntityChunks", document)).matches] == ["c1", "c2"]


async def test_chunk_entities(stack: Stack, doc_corpus: str) -> None:
    request = graph_pb2.ChunkEntitiesRequest(corpus_id=doc_corpus, chunk_id="c3")
    reply = await call(stack, "ChunkEntities", request)
    assert [(e.entity_id, e.type, e.edge.count) for e in reply.mentions] == [
        ("e-dell", "organization", 3),
        ("e-texas", "location", 2),
        ("e-austin", "location", 1),
    ]
    assert not reply.defined
    missing = graph_pb2.ChunkEntitiesRequest(corpus_id=doc_corpus, chunk_id="no-such-chunk")
    await expect_error(
        stack, "ChunkEntities", missing, grpc.StatusCode.NOT_FOUND, "chunk 'no-such-chunk' not found"
    )
    async with graph_corpus(stack, "entd", entities_named(["f", "g"]), []) as corpus_id:
        code = await call(
            stack, "ChunkEntities", graph_pb2.ChunkEntitiesRequest(corpus_id=corpus_id, chunk_id="chunk-g")
        )
    assert [(e.qualified_name, e.type) for e in code.defined] == [("app.g", "function")] and not code.mentions


# --- the Cypher hatch ---------------------------------------------------------------------------


async def test_the_hatch_is_off_by_default(stack: Stack, doc_corpus: str) -> None:
    request = graph_pb2.CypherQueryRequest(corpus_id=doc_corpus, query="MATCH (n) RETURN count(n)")
    await expect_error(
        stack, "CypherQuery", request, grpc.StatusCode.FAILED_PRECONDITION, "graph.cypher_enabled: true"
    )


async def hatch(stack: Stack, **settings: Any) -> GraphServicer:
    """The graph servicer with the hatch turned on (the stack's has it off, the default)."""
    cfg = stack.cfg.graph.model_copy(update={"cypher_enabled": True, **settings})
    pool = await stack.resources.pool(search=True)
    return GraphServicer(cfg, stack.cfg.limits, pool, stack.resources.graph())


async def cypher(servicer: GraphServicer, corpus_id: str, query: str, **fields: Any) -> Any:
    parameters = fields.pop("parameters", {})
    request = graph_pb2.CypherQueryRequest(corpus_id=corpus_id, query=query, **fields)
    request.parameters.update(parameters)
    return await servicer.CypherQuery(request, None)  # type: ignore[arg-type]  # no context needed


async def test_the_hatch_reads_with_parameters(stack: Stack, doc_corpus: str) -> None:
    servicer = await hatch(stack, cypher_max_rows=2)
    query = (
        "MATCH (c:Chunk)-[m:MENTIONS]->(o:Organization {corpus_id: $corpus_id}) WHERE m.count >= $least"
        " RETURN c.id AS chunk, m.count AS n, o AS org ORDER BY chunk LIMIT $cap"
    )
    reply = await cypher(servicer, doc_corpus, query, parameters={"least": 2, "cap": 10})
    assert list(reply.columns) == ["chunk", "n", "org"] and not reply.truncated
    rows = [[json.loads(v) for v in row.values] for row in reply.rows]
    assert [row[:2] for row in rows] == [["c1", 3], ["c3", 3]]
    org = rows[0][2]
    assert org["labels"] == ["Entity", "Organization"] and org["properties"]["aliases"] == ["Dell"]
    capped = await cypher(
        servicer, doc_corpus, "MATCH (n:Location) RETURN n.name AS name ORDER BY name", limit=1
    )
    assert [row.values[0] for row in capped.rows] == ['"Austin"'] and capped.truncated
    with pytest.raises(RequestError, match="limit: must be between 1 and 2; got 3") as bad:
        await cypher(servicer, doc_corpus, "RETURN 1", limit=3)
    for parameters, message in [
        ({"corpus_id": "other"}, "parameters.corpus_id: reserved"),
        ({"a b": 1}, "'a b' is not a parameter name"),
    ]:
        with pytest.raises(RequestError, match=message) as bad:
            await cypher(servicer, doc_corpus, "RETURN 1", parameters=parameters)
        assert bad.value.code == INVALID
    with pytest.raises(RequestError, match="query: ") as bad:
        await cypher(servicer, doc_corpus, "MATCH (n RETURN n")
    assert bad.value.code == INVALID


@pytest.mark.parametrize(
    "query",
    ["MATCH (n) DETACH DELETE n", "CREATE (:Entity {id: 'x'})", "MATCH (n:Person) SET n.name = 'x'"],
)
async def test_the_hatch_refuses_writes(stack: Stack, doc_corpus: str, query: str) -> None:
    servicer = await hatch(stack)
    with pytest.raises(RequestError, match="only read-only queries run here") as refused:
        await cypher(servicer, doc_corpus, query)
    assert refused.value.code == grpc.StatusCode.PERMISSION_DENIED
    reply = await call(
        stack, "EntitySearch", graph_pb2.EntitySearchRequest(corpus_id=doc_corpus, entity=ref("dell"))
    )
    assert reply.total == 3  # nothing changed (two RELATED_TO, one co-mention)


async def test_the_hatch_stops_at_its_timeout(stack: Stack, doc_corpus: str) -> None:
    servicer = await hatch(stack, cypher_timeout_ms=1)
    with pytest.raises(RequestError, match=r"graph\.cypher_timeout_ms") as stopped:
        await cypher(
            servicer, doc_corpus, "UNWIND range(1, 50000000) AS x WITH x WHERE x % 7 = 3 RETURN count(x)"
        )
    assert stopped.value.code == grpc.StatusCode.DEADLINE_EXCEEDED


@pytest.fixture(params=BACKENDS)
async def backend(
    request: pytest.FixtureRequest, config: TriBridConfig
) -> AsyncIterator[tuple[GraphStore, str]]:
    store = open_graph_store(backend_config(config.graph_store, request.param))
    corpus_id = f"hatch_{uuid.uuid4().hex[:10]}"
    key = graph_key(corpus_id, GENERATION)
    nodes, relations = document_graph(corpus_id)
    await store.ensure_schema(key)
    await store.upsert_entities(key, nodes)
    await store.upsert_relations(key, relations)
    yield store, key
    await store.delete_corpus(key)
    await store.close()


async def test_store_hatch_is_read_only_in_the_database(backend: tuple[GraphStore, str]) -> None:
    """The database's own read-only mode refuses a write the keyword check would let through."""
    store, key = backend
    query = "MATCH (e:Entity {corpus_id: $corpus_id, id: $id}) RETURN e.name AS name"
    result = await store.cypher_query(key, query, {"id": "e-texas"}, max_rows=5, timeout_ms=5_000)
    assert result.columns == ("name",) and result.rows == [("Texas",)] and not result.truncated
    with pytest.raises(CypherRejected):
        await store.cypher_query(key, "MATCH (e) DELETE e", {}, max_rows=5, timeout_ms=5_000)
    assert isinstance(store, CypherGraphStore)
    with pytest.raises(CypherRejected):
        await store._run_read_only(key, "CREATE (:Entity {id: 'x'})", {}, max_rows=5, timeout_ms=5_000)
    with pytest.raises(CypherTimedOut):
        await store.cypher_query(
            key,
            "UNWIND range(1, 50000000) AS x WITH x WHERE x % 7 = 3 RETURN count(x)",
            {},
            max_rows=5,
            timeout_ms=1,
        )
    assert (await store.counts(key))["entities"] == len(document_graph("x")[0])


async def test_entity_logic_on_each_store_and_its_snapshot(backend: tuple[GraphStore, str]) -> None:
    """What the RPCs answer comes from the store's reads (or the snapshot's): the same on both."""
    store, key = backend
    (dell,) = await by_name(store, key, "DELL")
    assert dell.entity_id == "e-dell"
    assert [e.entity_id for e in await by_name(store, key, "jordan")] == ["e-jordan-l", "e-jordan-p"]
    assert await by_name(store, key, "Server Manual > Intro") == []
    for reader in (store, await GraphSnapshot.load(store, key)):
        found = await walk_relations(reader, key, dell, list(ENTITY_RELATION_TYPES), 2)
        assert [(f.hops, f.source.entity_id, f.direction, f.target.entity_id) for f in found] == [
            (1, "e-dell", "out", "e-michael"),
            (1, "e-dell", "out", "e-texas"),
            (2, "e-texas", "in", "e-austin"),
        ]
        assert await describe(reader, key, [f.target for f in found]) == {
            "e-michael": "person mentioned 2 times in 1 chunk of 1 document",
            "e-texas": "location mentioned 3 times in 2 chunks of 2 documents",
            "e-austin": "location mentioned 1 time in 1 chunk of 1 document",
        }


# --- over HTTP ----------------------------------------------------------------------------------


async def test_entity_search_over_http(stack: Stack, doc_corpus: str) -> None:
    addresses = {f"{name}_address": f"127.0.0.1:{server.port}" for name, server in stack.servers.items()}
    cfg = stack.cfg.model_copy(update={"services": stack.cfg.services.model_copy(update=addresses)})
    bridge = await start_bridge(cfg, "127.0.0.1", 0)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{bridge.port}", timeout=60) as http:
            reply = await http.post(
                "/v1/graph/entity", json={"corpusId": doc_corpus, "entity": {"name": "dell"}, "maxHops": 2}
            )
            missing = await http.post(
                "/v1/graph/entity", json={"corpusId": doc_corpus, "entity": {"name": "Nobody"}}
            )
    finally:
        await bridge.stop(0)
    assert reply.status_code == 200, reply.text
    direct = await entity_search(stack, doc_corpus, "dell", max_hops=2)
    assert reply.json() == json_format.MessageToDict(direct, always_print_fields_with_no_presence=True)
    assert reply.json()["relations"][1]["properties"]["strength"] == 0.8
    assert missing.status_code == 404 and "Nobody" in missing.text
