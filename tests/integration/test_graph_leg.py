"""The graph leg on real FalkorDB + PostgreSQL: seeds, directed traversal, scoring, provenance,
the extra GraphSearch RPCs and communities."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from functools import partial

import grpc
import pytest

from services.graph.service import GraphServicer
from services.graph.snapshot import GraphSnapshot
from services.indexer.communities import detect_communities
from tests.stack import Stack, StoredChunk, committed_graph
from tribrid.config import RELATIONSHIP_TYPES, TriBridConfig
from tribrid.corpus_profile import CorpusProfiles
from tribrid.graphstore import GraphStore, open_graph_store
from tribrid.graphstore.base import graph_key
from tribrid.models import Entity, Relation
from tribrid.v1 import common_pb2, graph_options_pb2, graph_pb2, graph_pb2_grpc, legs_pb2

ALL_REL_TYPES: list[str] = list(RELATIONSHIP_TYPES)
GENERATION = 3

# The fixture call graph (a -calls-> b: a calls b):
#   main -> handle_order -> checkout -> compute_total -> apply_tax
#           api_checkout -> checkout -> charge_card   -> apply_tax
#   test_checkout_flow -references-> checkout          shop -contains-> checkout
FIXTURE_EDGES = [
    ("main", "handle_order", "calls"),
    ("handle_order", "checkout", "calls"),
    ("api_checkout", "checkout", "calls"),
    ("checkout", "compute_total", "calls"),
    ("checkout", "charge_card", "calls"),
    ("compute_total", "apply_tax", "calls"),
    ("charge_card", "apply_tax", "calls"),
    ("test_checkout_flow", "checkout", "references"),
    ("shop", "checkout", "contains"),
]
FIXTURE_NAMES = sorted({name for edge in FIXTURE_EDGES for name in edge[:2]} | {"lonely"})


def ent(corpus_id: str, name: str, *, type_: str = "function", qualified_name: str | None = None) -> Entity:
    return Entity(
        entity_id=name,
        corpus_id=corpus_id,
        type=type_,
        name=name,
        qualified_name=qualified_name or f"app.{name}",
        file_path=f"app/{name}.py",
        start_line=1,
        end_line=5,
        chunk_id=f"chunk-{name}",
    )


def fixture_entities(corpus_id: str) -> list[Entity]:
    return [ent(corpus_id, n, type_="module" if n == "shop" else "function") for n in FIXTURE_NAMES]


async def load_fixture_graph(store: GraphStore, key: str, corpus_id: str) -> None:
    await store.ensure_schema(key)
    await store.upsert_entities(key, fixture_entities(corpus_id))
    await store.upsert_relations(key, [Relation(a, b, t) for a, b, t in FIXTURE_EDGES])


@pytest.fixture
async def store(config: TriBridConfig) -> AsyncIterator[GraphStore]:
    graph_store = open_graph_store(config.graph_store)
    yield graph_store
    await graph_store.close()


@pytest.fixture
async def key(store: GraphStore) -> AsyncIterator[str]:
    corpus_id = f"g_{uuid.uuid4().hex[:10]}"
    graph = graph_key(corpus_id, GENERATION)
    await load_fixture_graph(store, graph, corpus_id)
    yield graph
    await store.delete_corpus(graph)


@asynccontextmanager
async def graph_corpus(
    stack: Stack, prefix: str, entities: Callable[[str], list[Entity]], relations: list[Relation]
) -> AsyncIterator[str]:
    """A committed corpus holding these entities (of the corpus id given), one chunk each, and these
    relations; removed from both stores afterwards."""
    corpus_id = f"{prefix}-{uuid.uuid4().hex[:10]}"
    made = entities(corpus_id)
    chunks = [
        StoredChunk(e.chunk_id, e.file_path, "python", e.qualified_name, f"def {e.name}(): pass")
        for e in made
    ]
    async with committed_graph(stack, corpus_id, GENERATION, chunks, made, relations):
        yield corpus_id


def entities_named(names: list[str]) -> Callable[[str], list[Entity]]:
    return lambda corpus_id: [ent(corpus_id, n) for n in names]


@pytest.fixture
async def fixture_corpus(stack: Stack) -> AsyncIterator[str]:
    """The fixture graph as an indexed corpus: a corpora row, one chunk per entity, the graph."""
    edges = [Relation(a, b, t) for a, b, t in FIXTURE_EDGES]
    async with graph_corpus(stack, "gleg", fixture_entities, edges) as corpus_id:
        yield corpus_id


def graph_options(**options: object) -> common_pb2.SearchOptions:
    if isinstance(options.get("direction"), str):
        options["direction"] = graph_options_pb2.GraphDirection.Value(
            f"GRAPH_DIRECTION_{str(options['direction']).upper()}"
        )
    return common_pb2.SearchOptions(graph=graph_options_pb2.GraphOptions(**options))  # type: ignore[arg-type]


async def graph_search(
    stack: Stack, corpus_id: str, query: str, **options: object
) -> list[common_pb2.ChunkMatch]:
    async with stack.channel("graph") as channel:
        request = common_pb2.SearchRequest(
            corpus_id=corpus_id, query=query, top_k=20, options=graph_options(**options)
        )
        reply = await graph_pb2_grpc.GraphSearchStub(channel).Search(request, timeout=30)
    return list(reply.matches)


def names(matches: list[common_pb2.ChunkMatch]) -> list[str]:
    return [m.symbol.removeprefix("app.") for m in matches]


async def test_importers_follow_imports_into_the_module(stack: Stack) -> None:
    def modules(corpus_id: str) -> list[Entity]:
        return [ent(corpus_id, n, type_="module") for n in ("pricing", "cart", "orders", "report")]

    edges = [
        Relation("cart", "pricing", "imports"),
        Relation("orders", "pricing", "imports"),
        Relation("report", "cart", "imports"),
        Relation("report", "orders", "calls"),  # not an import: no answer to "what imports"
    ]
    async with graph_corpus(stack, "gimp", modules, edges) as corpus_id:
        for question in ("what imports pricing", "modules that import pricing", "pricing importers"):
            found = names(await graph_search(stack, corpus_id, question, max_hops=1))
            assert found[:2] == ["cart", "orders"], (question, found)
            assert "report" not in found


# --- traversal, ranking, provenance through the graph service ----------------------------------


async def test_callers_one_and_two_hops(stack: Stack, fixture_corpus: str) -> None:
    one = await graph_search(stack, fixture_corpus, "who calls checkout", max_hops=1)
    # incoming calls and references only (not `shop -contains->`); X itself ranks below its callers
    assert names(one) == ["api_checkout", "handle_order", "test_checkout_flow", "checkout"]
    assert [round(m.score, 4) for m in one] == [0.8, 0.8, 0.56, 0.5]
    two = await graph_search(stack, fixture_corpus, "who calls checkout", max_hops=2)
    assert names(two) == ["api_checkout", "handle_order", "main", "test_checkout_flow", "checkout"]
    # the explicit override agrees with the detected direction
    explicit = await graph_search(stack, fixture_corpus, "checkout", max_hops=2, direction="callers")
    assert names(explicit) == names(two)


async def test_callees_one_and_two_hops(stack: Stack, fixture_corpus: str) -> None:
    one = await graph_search(stack, fixture_corpus, "what does checkout call", max_hops=1)
    assert names(one) == ["charge_card", "compute_total", "checkout"]
    two = await graph_search(stack, fixture_corpus, "what does checkout call", max_hops=2)
    assert names(two) == ["charge_card", "compute_total", "apply_tax", "checkout"]
    # apply_tax is reached over two shortest paths: a log bonus on hop decay 0.6
    tax = two[2]
    assert tax.explain[0].graph.supporting_paths == 2
    assert tax.score == pytest.approx(0.6 * (1 + 0.1 * 0.6931471805599453))
    explicit = await graph_search(stack, fixture_corpus, "checkout", max_hops=2, direction="callees")
    assert names(explicit) == names(two)


async def test_both_directions_and_relationship_weights(stack: Stack, fixture_corpus: str) -> None:
    both = await graph_search(stack, fixture_corpus, "checkout", max_hops=1)
    assert names(both) == [
        "checkout",  # the seed, hop 0
        "api_checkout",
        "charge_card",
        "compute_total",
        "handle_order",  # calls: 0.8
        "test_checkout_flow",  # references: 0.8 x 0.7
        "shop",  # contains: 0.8 x 0.5
    ]
    only_calls = await graph_search(
        stack, fixture_corpus, "checkout", max_hops=1, direction="both", relationship_types=["calls"]
    )
    assert names(only_calls) == ["checkout", "api_checkout", "charge_card", "compute_total", "handle_order"]


async def test_provenance_is_filled(stack: Stack, fixture_corpus: str) -> None:
    matches = await graph_search(stack, fixture_corpus, "who calls checkout", max_hops=2)
    main = matches[names(matches).index("main")]
    (explain,) = main.explain
    assert explain.leg == legs_pb2.LEG_GRAPH
    assert explain.graph.seed_entity == "app.checkout"
    assert list(explain.graph.path) == ["app.checkout", "app.handle_order", "app.main"]
    assert list(explain.graph.relationship_types) == ["calls", "calls"]
    assert (explain.graph.hops, explain.graph.supporting_paths, explain.graph.seed_match) == (2, 1, "exact")
    seed = matches[names(matches).index("checkout")].explain[0].graph
    assert (seed.hops, list(seed.path), seed.seed_match) == (0, ["app.checkout"], "exact")


async def test_inferred_calls_rank_below_proven_ones_and_say_so(stack: Stack) -> None:
    """Callers and callees: proven calls first, then calls inferred by method name, weighed
    INFERRED_EDGE_WEIGHT x confidence, with the confidence in the match's detail."""
    edges = [
        Relation("caller", "checkout", "calls"),
        Relation("guesser", "checkout", "calls", inferred=True, confidence=0.5),
        Relation("checkout", "total", "calls"),
        Relation("checkout", "maybe_total", "calls", inferred=True, confidence=1.0),
    ]
    entity_names = ["caller", "checkout", "guesser", "maybe_total", "total"]
    async with graph_corpus(stack, "ginf", entities_named(entity_names), edges) as corpus_id:
        callers = await graph_search(stack, corpus_id, "who calls checkout", max_hops=1)
        assert names(callers) == ["caller", "checkout", "guesser"]
        # hop decay 0.8 x calls 1.0, then x 0.8 x 0.5 for the inferred one; the seed 0.5
        assert [round(m.score, 4) for m in callers] == [0.8, 0.5, 0.32]
        assert callers[2].explain[0].detail.endswith("via=calls paths=1 inferred=0.50")
        assert "inferred" not in callers[0].explain[0].detail
        callees = await graph_search(stack, corpus_id, "what does checkout call", max_hops=1)
        assert names(callees) == ["total", "maybe_total", "checkout"]
        assert [round(m.score, 4) for m in callees] == [0.8, 0.64, 0.5]
        assert callees[1].explain[0].detail.endswith("inferred=1.00")


async def test_a_plain_name_ranks_its_definition_above_a_neighbour_with_many_paths(stack: Stack) -> None:
    """`user` calls `widget` and 13 `widget_*` seeds: 14 shortest paths lift it past its seed
    (0.8 x (1 + 0.1 ln 14) = 1.011); for a plain name it ties the seed at most, and the seed wins."""
    prefixed = [f"widget_{letter}" for letter in "abcdefghijklm"]
    edges = [Relation("user", target, "calls") for target in ["widget", *prefixed]]
    async with graph_corpus(stack, "gcap", entities_named(["widget", "user", *prefixed]), edges) as corpus_id:
        plain = await graph_search(stack, corpus_id, "widget", max_hops=1)
        assert names(plain)[:2] == ["widget", "user"]
        assert plain[0].score == pytest.approx(1.0)
        assert plain[1].score == pytest.approx(1.0)  # capped at its seed's score
        assert plain[1].explain[0].graph.supporting_paths == 14
        # "who calls widget" wants the callers, and names `widget` exactly: the 13 near misses
        # are no seeds there, so `user` is reached by its one call of `widget`
        callers = await graph_search(stack, corpus_id, "who calls widget", max_hops=1)
        assert names(callers)[0] == "user"
        assert callers[0].score == pytest.approx(0.8)
        assert callers[0].explain[0].graph.supporting_paths == 1
        assert not {"widget_a", "widget_m"} & set(names(callers))


async def test_entity_types_restrict_seeds(stack: Stack, fixture_corpus: str) -> None:
    assert names(await graph_search(stack, fixture_corpus, "shop", max_hops=1)) == ["shop", "checkout"]
    assert await graph_search(stack, fixture_corpus, "shop", max_hops=1, entity_types=["function"]) == []


@pytest.mark.parametrize(
    "query",
    ["a') RETURN 1 //", "checkout') MATCH (n) DETACH DELETE n //", 'x"}) DETACH DELETE n', "%che* | @x:{y}"],
)
async def test_cypher_injection_is_harmless(stack: Stack, fixture_corpus: str, query: str) -> None:
    await graph_search(stack, fixture_corpus, query)
    counts = await stack.resources.graph().counts(graph_key(fixture_corpus, GENERATION))
    assert (counts["entities"], counts["relationships"]) == (len(FIXTURE_NAMES), len(FIXTURE_EDGES))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"direction": 9}, "options.graph.direction: unknown value 9; allowed: GRAPH_DIRECTION_AUTO"),
        ({"max_hops": 6}, "options.graph.max_hops: Input should be less than or equal to 5"),
        ({"entity_types": ["Macro-1"]}, "options.graph.entity_types.0: String should match pattern"),
        (
            {"relationship_types": ["LIKES]"]},
            "options.graph.relationship_types.0: String should match pattern",
        ),
    ],
)
async def test_search_bad_options(
    stack: Stack, fixture_corpus: str, options: dict[str, object], message: str
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as excinfo:
        await graph_search(stack, fixture_corpus, "checkout", **options)
    assert excinfo.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert message in (excinfo.value.details() or "")


# --- store level: seeds, fan-out -----------------------------------------------------------------


async def test_seed_ranking_exact_prefix_fuzzy(store: GraphStore) -> None:
    corpus_id = f"s_{uuid.uuid4().hex[:10]}"
    k = graph_key(corpus_id, 1)
    await store.ensure_schema(k)
    await store.upsert_entities(
        k,
        [
            ent(corpus_id, "render"),
            ent(corpus_id, "render_page"),
            ent(corpus_id, "Renderer", type_="class"),
            ent(corpus_id, "tender"),  # one edit from "render"
            ent(corpus_id, "go", qualified_name="app.render_utils.go"),  # a word of the qualified name
            ent(corpus_id, "surrender"),  # the middle of a word: no match
        ],
    )
    try:
        got = [(e.entity_id, s) for e, s in await store.find_seeds(k, ["Render"], ["function", "class"], 10)]
        assert got == [("render", 1.0), ("Renderer", 0.7), ("render_page", 0.7), ("go", 0.4), ("tender", 0.4)]
        strict = await store.find_seeds(k, ["Render"], ["function", "class"], 10, fuzzy=False)
        assert [e.entity_id for e, _ in strict] == [
            "render",
            "Renderer",
            "render_page",
            "go",
        ]  # no typo match
        classes = await store.find_seeds(k, ["render"], ["class"], 10)
        assert [(e.entity_id, s) for e, s in classes] == [("Renderer", 0.7)]
        by_qname = await store.find_seeds(k, ["APP.RENDER_UTILS.GO"], ["function"], 10)
        assert [(e.entity_id, s) for e, s in by_qname] == [("go", 1.0)]
        for hostile in ["a') RETURN 1 //", "%%", "*", "ren|der", "@name:{x}", "\\"]:
            await store.find_seeds(k, [hostile], ["function"], 10)  # no error, nothing dropped
        assert (await store.counts(k))["entities"] == 6
    finally:
        await store.delete_corpus(k)


async def test_fanout_cap_is_deterministic(store: GraphStore) -> None:
    corpus_id = f"f_{uuid.uuid4().hex[:10]}"
    k = graph_key(corpus_id, 1)
    await store.ensure_schema(k)
    leaves = [f"leaf{i:02d}" for i in range(60)]
    await store.upsert_entities(k, [ent(corpus_id, n) for n in ["hub", "next", *leaves]])
    await store.upsert_relations(
        k,
        [Relation("hub", leaf, "calls") for leaf in reversed(leaves)] + [Relation("leaf00", "next", "calls")],
    )
    try:
        capped = await store.traverse(k, ["hub"], 2, ALL_REL_TYPES, direction="out", max_fanout=5)
        assert [(h.entity.entity_id, h.hops) for h in capped] == [
            *((leaf, 1) for leaf in leaves[:5]),
            ("next", 2),
        ]
        uncapped = await store.traverse(k, ["hub"], 1, ALL_REL_TYPES, direction="out")
        assert len(uncapped) == 60
        # incoming only: nothing calls the hub
        assert await store.traverse(k, ["hub"], 2, ALL_REL_TYPES, direction="in", max_fanout=5) == []
    finally:
        await store.delete_corpus(k)


async def test_neighbors_and_shortest_path_store(store: GraphStore, key: str) -> None:
    found = await store.neighbors(key, "checkout", ALL_REL_TYPES, "both", 10)
    assert [(n.entity.entity_id, n.relationship_type, n.direction) for n in found] == [
        ("charge_card", "calls", "out"),
        ("compute_total", "calls", "out"),
        ("api_checkout", "calls", "in"),
        ("handle_order", "calls", "in"),
        ("shop", "contains", "in"),
        ("test_checkout_flow", "references", "in"),
    ]
    path = await store.shortest_path(key, "main", "apply_tax", 4, ALL_REL_TYPES)
    assert path is not None
    assert path.entity_ids == ("main", "handle_order", "checkout", "charge_card", "apply_tax")
    assert await store.shortest_path(key, "main", "apply_tax", 3, ALL_REL_TYPES) is None
    assert await store.shortest_path(key, "main", "lonely", 4, ALL_REL_TYPES) is None


# --- the extra RPCs ---------------------------------------------------------------------------------


async def call(stack: Stack, method: str, request: object) -> object:
    async with stack.channel("graph") as channel:
        stub = graph_pb2_grpc.GraphSearchStub(channel)
        return await getattr(stub, method)(request, timeout=30)


async def expect_error(
    stack: Stack, method: str, request: object, code: grpc.StatusCode, message: str
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as excinfo:
        await call(stack, method, request)
    assert excinfo.value.code() == code, excinfo.value.details()
    assert message in (excinfo.value.details() or "")


async def test_expand_context(stack: Stack, fixture_corpus: str) -> None:
    reply = await call(
        stack,
        "ExpandContext",
        graph_pb2.ExpandContextRequest(corpus_id=fixture_corpus, chunk_ids=["chunk-checkout"], max_hops=1),
    )
    assert isinstance(reply, common_pb2.SearchResponse)
    assert names(list(reply.matches)) == [
        "api_checkout",
        "charge_card",
        "compute_total",
        "handle_order",
        "test_checkout_flow",
        "shop",
    ]
    two = await call(
        stack,
        "ExpandContext",
        graph_pb2.ExpandContextRequest(
            corpus_id=fixture_corpus, chunk_ids=["chunk-checkout", "chunk-main"], max_hops=2, top_k=3
        ),
    )
    assert isinstance(two, common_pb2.SearchResponse)
    got = names(list(two.matches))
    assert len(got) == 3 and "main" not in got and "checkout" not in got
    assert two.matches[0].explain[0].graph.hops == 1


async def test_expand_context_bad_requests(stack: Stack, fixture_corpus: str) -> None:
    bad = graph_pb2.ExpandContextRequest
    invalid = grpc.StatusCode.INVALID_ARGUMENT
    await expect_error(
        stack,
        "ExpandContext",
        bad(corpus_id=fixture_corpus, chunk_ids=["x"], max_hops=6),
        invalid,
        "max_hops",
    )
    await expect_error(
        stack,
        "ExpandContext",
        bad(corpus_id=fixture_corpus, chunk_ids=["x"], relationship_types=["LIKES]"]),
        invalid,
        "relationship_types.0: String should match pattern",
    )
    await expect_error(stack, "ExpandContext", bad(corpus_id=fixture_corpus), invalid, "chunk_ids is empty")
    await expect_error(
        stack,
        "ExpandContext",
        bad(corpus_id="nope", chunk_ids=["x"]),
        grpc.StatusCode.NOT_FOUND,
        "corpus 'nope' not found",
    )


async def test_neighbors_rpc(stack: Stack, fixture_corpus: str) -> None:
    ref = graph_pb2.EntityRef(qualified_name="app.checkout")
    reply = await call(
        stack,
        "Neighbors",
        graph_pb2.NeighborsRequest(
            corpus_id=fixture_corpus,
            entity=ref,
            relationship_type="calls",
            direction=graph_pb2.EDGE_DIRECTION_IN,
        ),
    )
    assert isinstance(reply, graph_pb2.EntitiesResponse)
    assert [(e.entity_id, e.relationship_type, e.direction, e.community) for e in reply.entities] == [
        ("api_checkout", "calls", "in", -1),
        ("handle_order", "calls", "in", -1),
    ]
    by_id = await call(
        stack,
        "Neighbors",
        graph_pb2.NeighborsRequest(
            corpus_id=fixture_corpus, entity=graph_pb2.EntityRef(entity_id="checkout")
        ),
    )
    assert isinstance(by_id, graph_pb2.EntitiesResponse)
    assert len(by_id.entities) == 6
    req = graph_pb2.NeighborsRequest
    missing = graph_pb2.EntityRef(qualified_name="app.nothing")
    await expect_error(
        stack,
        "Neighbors",
        req(corpus_id=fixture_corpus, entity=missing),
        grpc.StatusCode.NOT_FOUND,
        "not found",
    )
    for bad, message in [
        (req(corpus_id=fixture_corpus, entity=ref, direction=9), "direction: unknown value 9"),  # type: ignore[arg-type]
        (
            req(corpus_id=fixture_corpus, entity=ref, relationship_type="likes)-[x"),
            "relationship_type: String should match pattern",
        ),
        (req(corpus_id=fixture_corpus), "set exactly one of entity_id, qualified_name or name"),
        (req(corpus_id=fixture_corpus, entity=ref, limit=1001), "limit: must be between 1 and 1000"),
    ]:
        await expect_error(stack, "Neighbors", bad, grpc.StatusCode.INVALID_ARGUMENT, message)


@pytest.mark.parametrize(
    ("name", "entity_id"),
    [("checkout", "checkout"), ("CHECKOUT", "checkout"), ("app.checkout", "checkout"), ("main", "main")],
)
async def test_entities_by_plain_name(stack: Stack, fixture_corpus: str, name: str, entity_id: str) -> None:
    reply = await call(
        stack,
        "EntityChunks",
        graph_pb2.EntityChunksRequest(corpus_id=fixture_corpus, entity=graph_pb2.EntityRef(name=name)),
    )
    assert isinstance(reply, common_pb2.SearchResponse)
    assert [m.chunk_id for m in reply.matches] == [f"chunk-{entity_id}"]


async def test_an_ambiguous_plain_name_lists_its_candidates(stack: Stack, fixture_corpus: str) -> None:
    key = graph_key(fixture_corpus, GENERATION)
    twins = [
        replace(ent(fixture_corpus, f"refund-{n}", qualified_name=f"{module}.refund"), name="refund")
        for n, module in enumerate(("app.orders", "legacy"))
    ]
    store = stack.resources.graph()
    await store.upsert_entities(key, twins)

    def neighbors(name: str) -> graph_pb2.NeighborsRequest:
        return graph_pb2.NeighborsRequest(corpus_id=fixture_corpus, entity=graph_pb2.EntityRef(name=name))

    try:
        for name in ("refund", "Refund"):
            await expect_error(
                stack,
                "Neighbors",
                neighbors(name),
                grpc.StatusCode.INVALID_ARGUMENT,
                f"entity {name!r} is ambiguous: 2 entities fit: app.orders.refund (function, "
                "app/refund-0.py:1), legacy.refund (function, app/refund-1.py:1)",
            )
        for name in ("legacy.refund", "orders.refund", "refund-0"):  # a qualified name, its end, an id
            assert isinstance(await call(stack, "Neighbors", neighbors(name)), graph_pb2.EntitiesResponse)
        await expect_error(
            stack,
            "Neighbors",
            graph_pb2.NeighborsRequest(corpus_id=fixture_corpus, entity=graph_pb2.EntityRef(name="nothing")),
            grpc.StatusCode.NOT_FOUND,
            "entity 'nothing' not found",
        )
    finally:
        await store.delete_files(key, [twin.file_path for twin in twins])


async def test_path_between_rpc(stack: Stack, fixture_corpus: str) -> None:
    req = graph_pb2.PathBetweenRequest
    main, tax = graph_pb2.EntityRef(entity_id="main"), graph_pb2.EntityRef(qualified_name="app.apply_tax")
    reply = await call(stack, "PathBetween", req(corpus_id=fixture_corpus, source=main, target=tax))
    assert isinstance(reply, graph_pb2.PathResponse)
    assert reply.found
    assert [e.entity_id for e in reply.entities] == [
        "main",
        "handle_order",
        "checkout",
        "charge_card",
        "apply_tax",
    ]
    assert list(reply.relationship_types) == ["calls"] * 4
    short = await call(
        stack, "PathBetween", req(corpus_id=fixture_corpus, source=main, target=tax, max_hops=3)
    )
    assert isinstance(short, graph_pb2.PathResponse)
    assert not short.found and not short.entities
    await expect_error(
        stack,
        "PathBetween",
        req(corpus_id=fixture_corpus, source=main, target=tax, max_hops=5),
        grpc.StatusCode.INVALID_ARGUMENT,
        "max_hops: must be between 1 and 4",
    )
    await expect_error(
        stack,
        "PathBetween",
        req(corpus_id=fixture_corpus, source=main, target=graph_pb2.EntityRef(entity_id="ghost")),
        grpc.StatusCode.NOT_FOUND,
        "target 'ghost' not found",
    )


async def test_entity_chunks_rpc(stack: Stack, fixture_corpus: str) -> None:
    req = graph_pb2.EntityChunksRequest
    reply = await call(
        stack, "EntityChunks", req(corpus_id=fixture_corpus, entity=graph_pb2.EntityRef(entity_id="checkout"))
    )
    assert isinstance(reply, common_pb2.SearchResponse)
    assert [m.chunk_id for m in reply.matches] == ["chunk-checkout"]
    await expect_error(
        stack,
        "EntityChunks",
        req(corpus_id=fixture_corpus, entity=graph_pb2.EntityRef(entity_id="ghost")),
        grpc.StatusCode.NOT_FOUND,
        "not found",
    )
    await expect_error(
        stack,
        "EntityChunks",
        req(corpus_id="no-such-corpus", entity=graph_pb2.EntityRef(entity_id="x")),
        grpc.StatusCode.NOT_FOUND,
        "corpus 'no-such-corpus' not found",
    )


async def test_stats_with_communities(stack: Stack, fixture_corpus: str) -> None:
    request = graph_pb2.GraphStatsRequest(corpus_id=fixture_corpus)
    before = await call(stack, "Stats", request)
    assert isinstance(before, graph_pb2.GraphStatsResponse)
    assert (before.entities, before.relationships, before.communities) == (
        len(FIXTURE_NAMES),
        len(FIXTURE_EDGES),
        0,
    )
    assert before.relationships_by_type["calls"] == 7
    result = await detect_communities(
        stack.resources.graph(), graph_key(fixture_corpus, GENERATION), "louvain", seed=42
    )
    after = await call(stack, "Stats", request)
    assert isinstance(after, graph_pb2.GraphStatsResponse)
    assert after.communities == result.communities > 0
    await expect_error(
        stack,
        "Stats",
        graph_pb2.GraphStatsRequest(corpus_id="nope"),
        grpc.StatusCode.NOT_FOUND,
        "corpus 'nope' not found",
    )


# --- communities ------------------------------------------------------------------------------------


@pytest.mark.parametrize("algorithm", ["louvain", "label_propagation"])
async def test_communities_separate_planted_clusters(store: GraphStore, algorithm: str) -> None:
    corpus_id = f"c_{uuid.uuid4().hex[:10]}"
    k = graph_key(corpus_id, 1)
    left = [f"l{i}" for i in range(6)]
    right = [f"r{i}" for i in range(6)]
    await store.ensure_schema(k)
    await store.upsert_entities(k, [ent(corpus_id, n) for n in [*left, *right, "alone"]])
    edges = [Relation(a, b, "calls") for group in (left, right) for a, b in itertools.combinations(group, 2)]
    await store.upsert_relations(k, [*edges, Relation("l0", "r0", "references")])
    try:
        first = await detect_communities(store, k, algorithm, seed=7)  # type: ignore[arg-type]
        second = await detect_communities(store, k, algorithm, seed=7)  # type: ignore[arg-type]
        assert first == second  # deterministic for a fixed seed
        assert (first.communities, first.entities, first.isolated) == (2, 13, 1)
        assert first.modularity > 0.4
        assert first.membership == {**dict.fromkeys(left, 0), **dict.fromkeys(right, 1), "alone": -1}
        stored = await store.community_of(k, [*left, *right, "alone"])
        assert stored == {**dict.fromkeys(left, 0), **dict.fromkeys(right, 1)}
        assert await store.community_count(k) == 2
        assert await store.entity_ids(k) == sorted([*left, *right, "alone"])
    finally:
        await store.delete_corpus(k)


async def test_graph_too_big_for_memory_is_searched_in_the_store(stack: Stack, fixture_corpus: str) -> None:
    """A graph too big to hold in memory is walked in the database, with the same answers."""
    pool = await stack.resources.pool()
    store = stack.resources.graph()
    key = graph_key(fixture_corpus, GENERATION)
    entities = (await store.counts(key))["entities"]
    request = common_pb2.SearchRequest(
        corpus_id=fixture_corpus,
        query="who calls checkout",
        top_k=20,
        options=graph_options(max_hops=2),
    )
    answers = []
    for limit in (entities, entities - 1):
        graph_cfg = stack.cfg.graph.model_copy(update={"snapshot_max_entities": limit})
        servicer = GraphServicer(graph_cfg, stack.cfg.limits, pool, store)
        _, life = await servicer._graph(fixture_corpus)
        assert servicer._reader(key, life) is store  # the store answers while the snapshot loads
        await servicer._snapshots.get(key, life, partial(servicer._load_snapshot, key))
        assert isinstance(servicer._reader(key, life), GraphSnapshot) == (limit == entities)
        reply = await servicer.Search(request, None)  # type: ignore[arg-type]  # no error: no context needed
        answers.append([(m.symbol, m.score, m.explain[0].graph.path[:]) for m in reply.matches])
    assert answers[0] == answers[1]
    assert [symbol.removeprefix("app.") for symbol, _, _ in answers[0]] == [
        "api_checkout",
        "handle_order",
        "main",
        "test_checkout_flow",
        "checkout",
    ]


@pytest.mark.parametrize(
    "query",
    ["who calls Shop.checkout", "Where is Shop.checkout being called from?", "callers: Shop.checkout"],
)
async def test_a_structural_question_seeds_on_the_names_it_writes(
    stack: Stack, fixture_corpus: str, query: str
) -> None:
    """The name of a dotted reference ("checkout" of "Shop.checkout") seeds the walk; the
    question's own words ("being", "called", "from") do not, even where one names an entity."""
    found = names(await graph_search(stack, fixture_corpus, query, max_hops=1))
    assert set(found[:2]) == {"handle_order", "api_checkout"}
    assert "checkout" in found


async def test_a_plain_word_the_corpus_defines_is_read_as_the_name_asked_about(stack: Stack) -> None:
    """`replace` and `requires` are definitions here, so questions that use them as plain words
    are structural questions about them: the walk follows the asked direction. The corpus's
    definition names come from its committed chunks."""
    named = ["replace", "requires", "render_url", "redirect", "encode", "check_scope"]
    edges = [
        Relation("render_url", "replace", "calls"),
        Relation("redirect", "replace", "calls"),
        Relation("replace", "encode", "calls"),
        Relation("requires", "check_scope", "calls"),
        Relation("redirect", "requires", "calls"),
    ]
    async with graph_corpus(stack, "gword", entities_named(named), edges) as corpus_id:
        profile = await CorpusProfiles(await stack.resources.pool()).get(corpus_id)
        assert profile is not None and profile.definition_names == frozenset(named)
        callers = names(
            await graph_search(stack, corpus_id, "From where is the method replace being called?")
        )
        assert callers == ["redirect", "render_url", "replace"]
        callees = names(
            await graph_search(stack, corpus_id, "Which helper functions does replace delegate to?")
        )
        assert callees == ["encode", "replace"]
        # "requires" is the name here, not the verb of an importers question
        called = names(await graph_search(stack, corpus_id, "list the functions that requires calls"))
        assert called == ["check_scope", "requires"]
