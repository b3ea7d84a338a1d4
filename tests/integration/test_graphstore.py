"""Graph store against real databases: FalkorDB always, Neo4j when NEO4J_URI is set."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Literal

import pytest
from pydantic import SecretStr

from services.graph.snapshot import GraphSnapshot
from tribrid.config import CODE_ENTITY_TYPES, RELATIONSHIP_TYPES, GraphStoreConfig, TriBridConfig
from tribrid.graphstore import GraphStore, open_graph_store
from tribrid.graphstore.base import TraversalHit, graph_key
from tribrid.graphstore.cypher_store import CypherGraphStore
from tribrid.models import Entity, Relation

ALL_REL_TYPES: list[str] = list(RELATIONSHIP_TYPES)
ALL_ENTITY_TYPES: list[str] = list(CODE_ENTITY_TYPES)

BACKENDS = [
    pytest.param("falkordb", id="falkordb"),
    pytest.param(
        "neo4j",
        id="neo4j",
        marks=pytest.mark.skipif(
            not os.environ.get("NEO4J_URI"), reason="NEO4J_URI not set: no Neo4j server on this machine"
        ),
    ),
]


def backend_config(base: GraphStoreConfig, backend: str) -> GraphStoreConfig:
    if backend == "falkordb":
        return base.model_copy(update={"backend": "falkordb"})
    return base.model_copy(
        update={
            "backend": "neo4j",
            "neo4j_uri": os.environ["NEO4J_URI"],
            "neo4j_user": os.environ.get("NEO4J_USER", "neo4j"),
            "neo4j_password": SecretStr(os.environ.get("NEO4J_PASSWORD", "neo4j")),
        }
    )


@pytest.fixture(params=BACKENDS)
async def store(request: pytest.FixtureRequest, config: TriBridConfig) -> AsyncIterator[GraphStore]:
    graph_store = open_graph_store(backend_config(config.graph_store, request.param))
    yield graph_store
    await graph_store.close()


def new_corpus_id() -> str:
    return f"t_{uuid.uuid4().hex[:12]}"


@pytest.fixture
async def corpus(store: GraphStore) -> AsyncIterator[str]:
    corpus_id = new_corpus_id()
    await store.ensure_schema(corpus_id)
    yield corpus_id
    await store.delete_corpus(corpus_id)


def ent(
    corpus_id: str,
    entity_id: str,
    name: str,
    *,
    type_: str = "function",
    qualified_name: str | None = None,
    file_path: str = "app.py",
    line: int = 1,
) -> Entity:
    return Entity(
        entity_id=entity_id,
        corpus_id=corpus_id,
        type=type_,
        name=name,
        qualified_name=qualified_name if qualified_name is not None else f"app.{name}",
        file_path=file_path,
        start_line=line,
        end_line=line + 4,
        chunk_id=f"chunk-{entity_id}",
    )


# A small known graph (edge directions as written; traversal ignores direction):
#   a -calls-> b -imports-> d -calls-> f        c -calls-> a      c -inherits-> e      a -references-> g
GRAPH_EDGES = [
    ("a", "b", "calls"),
    ("b", "d", "imports"),
    ("d", "f", "calls"),
    ("c", "a", "calls"),
    ("c", "e", "inherits"),
    ("a", "g", "references"),
]


def graph_entities(corpus_id: str) -> list[Entity]:
    files = {"a": "app.py", "b": "app.py", "c": "models.py", "d": "util.py", "e": "models.py"}
    return [
        ent(corpus_id, x, f"fn_{x}", file_path=files.get(x, "other.py"), line=i)
        for i, x in enumerate("abcdefg")
    ]


async def load_graph(store: GraphStore, corpus_id: str) -> None:
    assert await store.upsert_entities(corpus_id, graph_entities(corpus_id)) == 7
    relations = [Relation(s, t, rel_type) for s, t, rel_type in GRAPH_EDGES]
    assert await store.upsert_relations(corpus_id, relations) == len(GRAPH_EDGES)


def summary(hits: list[TraversalHit]) -> list[tuple[str, int, str, tuple[str, ...]]]:
    return [(h.entity.entity_id, h.hops, h.seed_id, h.relationship_types) for h in hits]


# --- schema and writes --------------------------------------------------------------------------


async def test_ensure_schema_is_idempotent(store: GraphStore, corpus: str) -> None:
    # The fixture ran it once: again on the empty graph, and again over data. Nothing is written or
    # lost, and the indexes it made serve (seeds come from the fulltext and exact-name indexes).
    await store.ensure_schema(corpus)
    await store.ensure_schema(corpus)
    assert await store.counts(corpus) == {"entities": 0, "relationships": 0}
    await load_seed_entities(store, corpus)
    loaded = await store.counts(corpus)
    assert loaded["entities"] == 6
    await store.ensure_schema(corpus)
    assert await store.counts(corpus) == loaded
    assert await seed_summary(store, corpus, ["parse"], ["function"], limit=2) == [("e1", 1.0), ("e2", 0.7)]


async def test_upsert_is_idempotent_and_updates(store: GraphStore, corpus: str) -> None:
    await load_graph(store, corpus)
    first = await store.counts(corpus)
    await load_graph(store, corpus)
    assert await store.counts(corpus) == first

    moved = ent(corpus, "a", "fn_a", file_path="app.py", line=40)
    assert await store.upsert_entities(corpus, [moved]) == 1
    assert await store.get_entities(corpus, ["a"]) == [moved]
    assert await store.counts(corpus) == first


async def test_counts(store: GraphStore, corpus: str) -> None:
    await load_graph(store, corpus)
    await store.upsert_entities(corpus, [ent(corpus, "k", "Klass", type_="class")])
    counts = await store.counts(corpus)
    expected = {"entities": 8, "relationships": 6}
    expected |= {"entities.function": 7, "entities.class": 1}
    expected |= {"relationships.calls": 3, "relationships.imports": 1, "relationships.inherits": 1}
    expected |= {"relationships.references": 1}
    assert counts == expected


async def test_relations_to_missing_entities_are_skipped(store: GraphStore, corpus: str) -> None:
    await load_graph(store, corpus)
    written = await store.upsert_relations(
        corpus, [Relation("a", "nope", "calls"), Relation("a", "f", "calls")]
    )
    assert written == 1
    assert (await store.counts(corpus))["relationships.calls"] == 4


async def test_unknown_types_are_rejected(store: GraphStore, corpus: str) -> None:
    await load_graph(store, corpus)
    with pytest.raises(ValueError, match="are not type names"):
        await store.upsert_relations(corpus, [Relation("a", "b", "CALLS]->() DETACH DELETE a //")])
    with pytest.raises(ValueError, match="not a type name"):
        await store.upsert_entities(corpus, [ent(corpus, "x", "x", type_="Macro:X")])
    with pytest.raises(ValueError, match="belongs to corpus"):
        await store.upsert_entities(corpus, [ent("other", "x", "x")])
    with pytest.raises(ValueError, match="are not type names"):
        await store.find_seeds(corpus, ["fn"], ["function", "macro`"], 5)
    assert (await store.counts(corpus))["entities"] == 7


async def test_get_entities_keeps_order_and_skips_unknown(store: GraphStore, corpus: str) -> None:
    await load_graph(store, corpus)
    got = await store.get_entities(corpus, ["g", "missing", "a", "g"])
    assert [e.entity_id for e in got] == ["g", "a"]
    assert got[1] == graph_entities(corpus)[0]


# --- seeds --------------------------------------------------------------------------------------


async def load_seed_entities(store: GraphStore, corpus_id: str) -> None:
    await store.upsert_entities(
        corpus_id,
        [
            ent(corpus_id, "e1", "parse"),
            ent(corpus_id, "e2", "parse_args"),
            ent(corpus_id, "e3", "Parser", type_="class"),
            ent(corpus_id, "e4", "reparse_all"),
            ent(corpus_id, "e5", "run", qualified_name="app.parse_utils.run"),
            ent(corpus_id, "e6", "config", type_="variable", qualified_name="app.settings.config"),
        ],
    )


async def seed_summary(
    store: GraphStore, corpus_id: str, terms: list[str], types: list[str], limit: int = 10
) -> list[tuple[str, float]]:
    return [(e.entity_id, score) for e, score in await store.find_seeds(corpus_id, terms, types, limit)]


async def test_seeds_rank_exact_then_prefix_then_substring(store: GraphStore, corpus: str) -> None:
    await load_seed_entities(store, corpus)
    # Seeds come from indexes now, not a full scan: a term matches whole names and name prefixes
    # (and words of qualified names), no longer the middle of a word ("reparse_all", e4).
    assert await seed_summary(store, corpus, ["PARSE"], ALL_ENTITY_TYPES) == [
        ("e1", 1.0),
        ("e2", 0.7),
        ("e3", 0.7),  # case-insensitive prefix
        ("e5", 0.4),  # a word of the qualified name only ("app.parse_utils.run")
    ]
    # the fulltext candidates alone, by term, every term in one query; dotted terms are exact
    # lookups only
    got = await store.fulltext_ids_by_term(
        corpus, ["PARSE", "config", "app.parse_utils.run"], ALL_ENTITY_TYPES
    )
    assert got == {"parse": ["e1", "e2", "e3", "e5"], "config": ["e6"]}
    got = await store.fulltext_ids_by_term(corpus, ["parse", "config"], ["class", "variable"])
    assert got == {"parse": ["e3"], "config": ["e6"]}


async def test_seeds_entity_type_filter_and_limit(store: GraphStore, corpus: str) -> None:
    await load_seed_entities(store, corpus)
    assert await seed_summary(store, corpus, ["parse"], ["class"]) == [("e3", 0.7)]
    assert await seed_summary(store, corpus, ["parse"], ["function"], limit=2) == [("e1", 1.0), ("e2", 0.7)]
    assert await seed_summary(store, corpus, ["parse"], []) == []


async def test_seeds_take_the_best_term_and_match_qualified_names(store: GraphStore, corpus: str) -> None:
    await load_seed_entities(store, corpus)
    got = await seed_summary(store, corpus, ["app.settings.config", "reparse_all", "zzz"], ALL_ENTITY_TYPES)
    assert got == [("e4", 1.0), ("e6", 1.0)]
    # a later, weaker match must not lower an earlier, better one
    assert (await seed_summary(store, corpus, ["parse", "pars"], ["function"]))[0] == ("e1", 1.0)
    assert await seed_summary(store, corpus, ["  ", ""], ALL_ENTITY_TYPES) == []


# --- traversal, both directions -----------------------------------------------------------------


async def test_traverse_one_hop(store: GraphStore, corpus: str) -> None:
    await load_graph(store, corpus)
    hits = await store.traverse(corpus, ["a"], 1, ALL_REL_TYPES, limit=50)
    assert summary(hits) == [
        ("b", 1, "a", ("calls",)),
        ("c", 1, "a", ("calls",)),  # reached against the edge direction
        ("g", 1, "a", ("references",)),
    ]
    assert hits[0].entity == graph_entities(corpus)[1]


async def test_traverse_two_hops(store: GraphStore, corpus: str) -> None:
    await load_graph(store, corpus)
    hits = await store.traverse(corpus, ["a"], 2, ALL_REL_TYPES, limit=50)
    assert summary(hits) == [
        ("b", 1, "a", ("calls",)),
        ("c", 1, "a", ("calls",)),
        ("g", 1, "a", ("references",)),
        ("d", 2, "a", ("calls", "imports")),
        ("e", 2, "a", ("calls", "inherits")),
    ]
    three = await store.traverse(corpus, ["a"], 3, ALL_REL_TYPES, limit=50)
    assert summary(three)[-1] == ("f", 3, "a", ("calls", "imports", "calls"))


async def test_traverse_relationship_type_filter(store: GraphStore, corpus: str) -> None:
    await load_graph(store, corpus)
    assert summary(await store.traverse(corpus, ["a"], 3, ["calls"], limit=50)) == [
        ("b", 1, "a", ("calls",)),
        ("c", 1, "a", ("calls",)),
    ]
    assert summary(await store.traverse(corpus, ["a"], 2, ["calls", "inherits"], limit=50)) == [
        ("b", 1, "a", ("calls",)),
        ("c", 1, "a", ("calls",)),
        ("e", 2, "a", ("calls", "inherits")),
    ]
    assert await store.traverse(corpus, ["a"], 2, [], limit=50) == []
    with pytest.raises(ValueError, match="are not type names"):
        await store.traverse(corpus, ["a"], 2, ["calls|IMPORTS"], limit=50)


async def test_traverse_limit_ties_and_seeds(store: GraphStore, corpus: str) -> None:
    await load_graph(store, corpus)
    assert summary(await store.traverse(corpus, ["a"], 2, ALL_REL_TYPES, limit=2)) == [
        ("b", 1, "a", ("calls",)),
        ("c", 1, "a", ("calls",)),
    ]
    # c is one hop from both seeds a and e: the earlier seed wins. Seeds are never hits themselves.
    assert summary(await store.traverse(corpus, ["a", "b", "e"], 1, ALL_REL_TYPES, limit=50)) == [
        ("c", 1, "a", ("calls",)),
        ("d", 1, "b", ("imports",)),
        ("g", 1, "a", ("references",)),
    ]
    # The limit counts hits, not seeds: three hits at hop 1 are not enough for a limit of 4.
    assert summary(await store.traverse(corpus, ["a", "b", "c"], 3, ALL_REL_TYPES, limit=4)) == [
        ("d", 1, "b", ("imports",)),
        ("e", 1, "c", ("inherits",)),
        ("g", 1, "a", ("references",)),
        ("f", 2, "b", ("imports", "calls")),
    ]
    assert await store.traverse(corpus, ["missing"], 2, ALL_REL_TYPES, limit=50) == []


@pytest.mark.parametrize("max_hops", [0, 6, -1, True, 2.0, "2"])
async def test_traverse_rejects_bad_max_hops(store: GraphStore, corpus: str, max_hops: object) -> None:
    with pytest.raises(ValueError, match="max_hops"):
        await store.traverse(corpus, ["a"], max_hops, ALL_REL_TYPES, limit=10)  # type: ignore[arg-type]


# --- hostile input ------------------------------------------------------------------------------

HOSTILE_NAMES = [
    'x"}) MATCH (n) DETACH DELETE n //',
    "y'}) MATCH (n) DETACH DELETE n //",
    "back\\slash\\",
    "tab\tnew\nline",
    "`tick` $corpus_id {map} [list] */ /*",
    "ünï©ødé ✓",
]


async def test_hostile_strings_round_trip(store: GraphStore, corpus: str) -> None:
    await load_graph(store, corpus)
    hostile = [
        ent(corpus, f"h{i}\"'\\", name, qualified_name=f"q.{name}", file_path=f"dir '{i}\"/{name}.py")
        for i, name in enumerate(HOSTILE_NAMES)
    ]
    assert await store.upsert_entities(corpus, hostile) == len(hostile)
    assert await store.upsert_relations(corpus, [Relation(hostile[0].entity_id, "a", "calls")]) == 1

    assert await store.get_entities(corpus, [h.entity_id for h in hostile]) == hostile
    for entity in hostile:
        seeds = await store.find_seeds(corpus, [entity.name], ALL_ENTITY_TYPES, 3)
        assert seeds[0] == (entity, 1.0)
    hits = await store.traverse(corpus, [hostile[0].entity_id], 1, ALL_REL_TYPES, limit=10)
    assert summary(hits) == [("a", 1, hostile[0].entity_id, ("calls",))]

    counts = await store.counts(corpus)
    assert counts["entities"] == 7 + len(hostile)  # nothing was deleted by the "payloads"
    assert await store.delete_files(corpus, [hostile[1].file_path]) == 1
    assert await store.get_entities(corpus, [hostile[1].entity_id]) == []


async def test_nul_characters_are_rejected_or_ignored(store: GraphStore, corpus: str) -> None:
    await load_graph(store, corpus)
    with pytest.raises(ValueError, match="NUL"):
        await store.upsert_entities(corpus, [ent(corpus, "n", "bad\x00name")])
    assert await store.find_seeds(corpus, ["fn_a\x00"], ALL_ENTITY_TYPES, 5) == []
    assert await store.get_entities(corpus, ["a\x00", "a"]) == [graph_entities(corpus)[0]]


# --- deletes and isolation ----------------------------------------------------------------------


async def test_delete_files(store: GraphStore, corpus: str) -> None:
    await load_graph(store, corpus)
    assert await store.delete_files(corpus, ["models.py", "util.py", "nowhere.py"]) == 3
    counts = await store.counts(corpus)
    assert counts["entities"] == 4
    # left: a -calls-> b, a -references-> g (the edges touching c, d, e went with them)
    assert (counts["relationships"], counts["relationships.calls"]) == (2, 1)
    assert await store.delete_files(corpus, []) == 0
    assert await store.delete_files(corpus, ["models.py"]) == 0


async def test_entities_of_no_file_are_found_by_the_empty_path(store: GraphStore, corpus: str) -> None:
    """Named and imported entities have no file; the generation writer diffs them by path ""."""
    await load_graph(store, corpus)
    free = ent(corpus, "n1", "Dell", type_="organization", qualified_name="Dell", file_path="")
    imported = Entity("chasca", corpus, "character", "恰斯卡", "恰斯卡", "", 0, 0, "", aliases=("Chasca",))
    imported = replace(imported, properties='{"region": "纳塔"}')
    await store.upsert_entities(corpus, [replace(free, chunk_id=""), imported])
    found = await store.entities_in_files(corpus, ["", "util.py"])
    assert [e.entity_id for e in found] == ["chasca", "d", "n1"]
    assert found[0] == imported  # the properties come back as written


async def test_delete_corpus_and_isolation(store: GraphStore) -> None:
    first, second = new_corpus_id(), new_corpus_id()
    try:
        await load_graph(store, first)
        await load_graph(store, second)  # same entity ids in another corpus
        await store.delete_files(second, ["app.py"])
        assert (await store.counts(first))["entities"] == 7
        assert summary(await store.traverse(first, ["a"], 1, ALL_REL_TYPES, limit=10))[0][0] == "b"

        await store.delete_corpus(first)
        assert (await store.counts(first))["entities"] == 0
        assert (await store.counts(second))["entities"] == 5
        await store.delete_corpus(first)  # deleting again is fine
    finally:
        await store.delete_corpus(first)
        await store.delete_corpus(second)


async def test_reads_on_an_unknown_corpus_are_empty(store: GraphStore) -> None:
    corpus_id = new_corpus_id()
    counts = await store.counts(corpus_id)
    assert counts["entities"] == counts["relationships"] == 0
    assert await store.find_seeds(corpus_id, ["x"], ALL_ENTITY_TYPES, 5) == []
    assert await store.traverse(corpus_id, ["x"], 2, ALL_REL_TYPES, limit=5) == []
    assert await store.get_entities(corpus_id, ["x"]) == []
    assert await store.delete_files(corpus_id, ["x.py"]) == 0
    await store.delete_corpus(corpus_id)


# --- generations --------------------------------------------------------------------------------


async def test_copy_graph_then_change_copy_leaves_source_alone(store: GraphStore) -> None:
    corpus_id = new_corpus_id()
    source, target = graph_key(corpus_id, 1), graph_key(corpus_id, 2)
    try:
        await store.upsert_entities(source, graph_entities(corpus_id))
        await store.upsert_relations(source, [Relation(s, t, rel_type) for s, t, rel_type in GRAPH_EDGES])
        await store.copy_graph(source, target)
        assert await store.all_relations(target) == await store.all_relations(source)
        copied = await store.get_entities(target, ["a", "g"])
        assert [(e.entity_id, e.corpus_id, e.name) for e in copied] == [
            ("a", corpus_id, "fn_a"),
            ("g", corpus_id, "fn_g"),
        ]

        assert (
            await store.delete_relations(target, [Relation("a", "b", "calls"), Relation("x", "y", "calls")])
            == 1
        )
        assert await store.delete_files(target, ["util.py"]) == 1
        remaining = {(r.source_id, r.target_id, r.type) for r in await store.all_relations(target)}
        assert remaining == {("c", "a", "calls"), ("c", "e", "inherits"), ("a", "g", "references")}
        assert len(await store.all_relations(source)) == len(GRAPH_EDGES)  # the source is untouched
        assert (await store.counts(source))["entities"] == 7
    finally:
        await store.delete_corpus(source)
        await store.delete_corpus(target)
    assert await store.all_relations(source) == []


# --- directed traversal, lookups and communities (both backends) -------------------------------


async def test_traverse_directions_and_paths(store: GraphStore, corpus: str) -> None:
    await load_graph(store, corpus)

    def brief(hits: list[TraversalHit]) -> list[tuple[str, int, tuple[str, ...], int]]:
        return [(h.entity.entity_id, h.hops, h.path, h.supporting_paths) for h in hits]

    assert brief(await store.traverse(corpus, ["a"], 2, ["calls"], direction="in")) == [
        ("c", 1, ("a", "c"), 1)
    ]
    assert brief(await store.traverse(corpus, ["a"], 2, ALL_REL_TYPES, direction="out")) == [
        ("b", 1, ("a", "b"), 1),
        ("g", 1, ("a", "g"), 1),
        ("d", 2, ("a", "b", "d"), 1),
    ]
    # fan-out 1: only the first neighbour by id at each hop
    capped = await store.traverse(corpus, ["a"], 2, ALL_REL_TYPES, max_fanout=1)
    assert brief(capped) == [("b", 1, ("a", "b"), 1), ("d", 2, ("a", "b", "d"), 1)]
    with pytest.raises(ValueError, match="unknown direction"):
        await store.traverse(corpus, ["a"], 2, ALL_REL_TYPES, direction="up")  # type: ignore[arg-type]


async def test_neighbors_lookups_and_paths(store: GraphStore, corpus: str) -> None:
    await load_graph(store, corpus)
    found = await store.neighbors(corpus, "a", ALL_REL_TYPES, "both", 10)
    assert [(n.entity.entity_id, n.relationship_type, n.direction) for n in found] == [
        ("b", "calls", "out"),
        ("g", "references", "out"),
        ("c", "calls", "in"),
    ]
    assert [n.entity.entity_id for n in await store.neighbors(corpus, "a", ["calls"], "in", 10)] == ["c"]
    chunks = await store.entities_by_chunks(corpus, ["chunk-c", "nope", "chunk-a"])
    assert [e.entity_id for e in chunks] == ["a", "c"]
    assert [e.entity_id for e in await store.find_by_qualified_name(corpus, "app.fn_a")] == ["a"]
    assert await store.find_by_qualified_name(corpus, "APP.FN_A") == []  # case-sensitive
    assert await store.shortest_path(corpus, "f", "e", 4, ALL_REL_TYPES) is None
    path = await store.shortest_path(corpus, "f", "e", 5, ALL_REL_TYPES)
    assert path is not None
    assert path.entity_ids == ("f", "d", "b", "a", "c", "e")
    assert path.relationship_types == ("calls", "imports", "calls", "calls", "inherits")


async def test_communities_are_stored_and_counted(store: GraphStore, corpus: str) -> None:
    await load_graph(store, corpus)
    assert await store.entity_ids(corpus) == list("abcdefg")
    assert await store.community_count(corpus) == 0
    assert await store.community_of(corpus, ["a"]) == {}
    assert await store.set_communities(corpus, {"a": 0, "b": 0, "c": 1, "g": -1}) == 4
    assert await store.community_of(corpus, ["a", "b", "c", "g", "zz"]) == {"a": 0, "b": 0, "c": 1}
    assert await store.community_count(corpus) == 2


async def test_document_graph_properties_labels_and_aliases(store: GraphStore, corpus: str) -> None:
    """Document nodes and edges: edge properties round-trip exactly (the generation writer diffs
    them), nodes carry their type as a label, and an alias finds its entity like its name."""
    doc = replace(ent(corpus, "d1", "Manual", type_="document"), chunk_id="")
    chunk = replace(ent(corpus, "c1", "Manual > Setup", type_="chunk"), chunk_id="c1")
    other = replace(ent(corpus, "c2", "Manual > Ports", type_="chunk"), chunk_id="c2")
    dell = Entity(
        "e1", corpus, "organization", "Dell Technologies", "Dell Technologies", "", 0, 0, "", (), ("Dell",)
    )
    texas = Entity("e2", corpus, "location", "Texas", "Texas", "", 0, 0, "")
    assert await store.upsert_entities(corpus, [doc, chunk, other, dell, texas]) == 5
    relations = [
        Relation("d1", "c1", "contains"),
        Relation("c1", "e1", "mentions", count=3),
        Relation("c2", "e1", "mentions", count=1),
        Relation("e1", "e2", "related_to", strength=0.712345),
        Relation("c1", "c2", "similar_to", similarity=0.81),
        Relation("a", "b", "calls", inferred=True, confidence=1 / 3),
    ]
    await store.upsert_entities(corpus, [ent(corpus, "a", "fn_a"), ent(corpus, "b", "fn_b")])
    assert await store.upsert_relations(corpus, relations) == 6
    assert await store.all_relations(corpus) == sorted(
        relations, key=lambda r: (r.source_id, r.type, r.target_id)
    )
    assert await store.relations_of(corpus, ["e1"], ["mentions", "related_to"], "in") == [
        Relation("c1", "e1", "mentions", count=3),
        Relation("c2", "e1", "mentions", count=1),
    ]
    assert await store.relations_of(corpus, ["e1", "c1"], ["related_to", "similar_to"], "out") == [
        Relation("c1", "c2", "similar_to", similarity=0.81),
        Relation("e1", "e2", "related_to", strength=0.712345),
    ]
    snapshot = await GraphSnapshot.load(store, corpus)
    sides: list[tuple[list[str], list[str], Literal["out", "in"]]] = [
        (["e1"], ["mentions"], "in"),
        (["e1", "c1"], ["similar_to", "related_to"], "out"),
    ]
    for ids, types, direction in sides:
        assert await snapshot.relations_of(corpus, ids, types, direction) == await store.relations_of(
            corpus, ids, types, direction
        )
    assert [e.entity_id for e in await store.find_by_name(corpus, "DELL")] == ["e1"]
    assert (await store.get_entities(corpus, ["e1"]))[0].aliases == ("Dell",)
    assert [e.entity_id for e, _ in await store.find_seeds(corpus, ["dell"], ["organization"], 5)] == ["e1"]
    counts = await store.counts(corpus)
    assert counts["entities.chunk"] == 2 and counts["relationships.mentions"] == 2
    if isinstance(store, CypherGraphStore):  # the type label, for operators' own Cypher
        rows = await store._read(corpus, "MATCH (d:Document)-[:CONTAINS]->(c:Chunk) RETURN c.id AS id")
        assert [row["id"] for row in rows] == ["c1"]
