"""The document graph leg: search from the entities a question names, and expansion from chunks,
on a hand-built graph with known strengths and similarities (services.graph.documents)."""

from __future__ import annotations

import math
import shutil
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace

import grpc
import pytest

from services.graph.chunk_rows import GenerationRows
from services.graph.documents import (
    DocumentSettings,
    document_expansion,
    document_search,
    find_document_seeds,
    longest_names,
    unnamed_words,
)
from services.graph.search import GraphResult
from services.graph.service import GraphServicer
from services.graph.snapshot import GraphSnapshot
from tests.integration.test_document_graph import KNOWLEDGE
from tests.integration.test_graph_leg import (
    FIXTURE_EDGES,
    GENERATION,
    fixture_entities,
    graph_corpus,
    graph_options,
)
from tests.stack import Stack, StoredChunk, committed_graph, index_corpus
from tribrid.config import TriBridConfig
from tribrid.graphstore.base import GraphView, graph_key
from tribrid.models import Entity, Relation
from tribrid.search_common import SearchParams
from tribrid.stores.postgres import corpus_generation
from tribrid.v1 import common_pb2, graph_pb2, graph_pb2_grpc

# The fixture: one document of six chunks, five named entities.
#   c1 mentions Dell Technologies (alias "Dell") 3 times     c2 mentions Dell once and Texas once
#   c3 mentions Texas twice    c4 Austin    c5 Michael Dell    c6 Tech Expo
# RELATED_TO: Dell-Texas 0.8, Dell-Michael Dell 0.6, Austin-Texas 0.9, Dell-Tech Expo 0.4 (below
# the 0.5 floor). SIMILAR_TO: c1-c6 0.75, c1-c4 0.65 (below the 0.7 threshold).
NAMED = [
    ("e_austin", "location", "Austin", ()),
    ("e_dell", "organization", "Dell Technologies", ("Dell",)),
    ("e_expo", "event", "Tech Expo", ()),
    ("e_michael", "person", "Michael Dell", ()),
    ("e_texas", "location", "Texas", ()),
    ("e_whales", "location", "the Bay of Whales", ("Bay of Whales",)),
    ("e_ross", "location", "the Ross Sea", ()),
]
MENTIONS = [
    ("c1", "e_dell", 3),
    ("c2", "e_dell", 1),
    ("c2", "e_texas", 1),
    ("c3", "e_texas", 2),
    ("c4", "e_austin", 1),
    ("c5", "e_michael", 1),
    ("c6", "e_expo", 1),
]
RELATED = [
    ("e_dell", "e_texas", 0.8),
    ("e_dell", "e_michael", 0.6),
    ("e_austin", "e_texas", 0.9),
    ("e_dell", "e_expo", 0.4),
]
SIMILAR = [("c1", "c6", 0.75), ("c1", "c4", 0.65)]
CHUNKS = ["c1", "c2", "c3", "c4", "c5", "c6"]
DOC_PATH = "docs/manual.md"


def qname(chunk_id: str) -> str:
    line = int(chunk_id[1:]) * 10
    return f"{DOC_PATH}:{line}-{line + 9}"


def document_entities(corpus_id: str) -> list[Entity]:
    """The document node, its chunk nodes and the named entities, as the document indexer writes them."""
    document = Entity(f"doc-{corpus_id}", corpus_id, "document", "Manual", DOC_PATH, DOC_PATH, 0, 0, "")
    chunks = [
        Entity(cid, corpus_id, "chunk", f"Manual > Part {cid}", qname(cid), DOC_PATH, 1, 9, cid)
        for cid in CHUNKS
    ]
    named = [
        Entity(eid, corpus_id, type_, name, name, "", 0, 0, "", (), aliases)
        for eid, type_, name, aliases in NAMED
    ]
    return [document, *chunks, *named]


def document_relations(corpus_id: str) -> list[Relation]:
    return [
        *(Relation(f"doc-{corpus_id}", cid, "contains") for cid in CHUNKS),
        *(Relation(c, e, "mentions", count=n) for c, e, n in MENTIONS),
        *(Relation(a, b, "related_to", strength=s) for a, b, s in RELATED),
        *(Relation(a, b, "similar_to", similarity=s) for a, b, s in SIMILAR),
    ]


@asynccontextmanager
async def document_corpus(stack: Stack, *, with_code: bool = False) -> AsyncIterator[str]:
    """A committed corpus holding the document graph (and, `with_code`, test_graph_leg's code
    graph beside it), with a PostgreSQL row per chunk; removed afterwards."""
    corpus_id = f"gdoc-{uuid.uuid4().hex[:10]}"
    entities = document_entities(corpus_id)
    relations = document_relations(corpus_id)
    rows = [StoredChunk(cid, DOC_PATH, "markdown", f"Part {cid}", f"text of {cid}") for cid in CHUNKS]
    if with_code:
        code = fixture_entities(corpus_id)
        entities += code
        relations += [Relation(a, b, t) for a, b, t in FIXTURE_EDGES]
        rows += [StoredChunk(e.chunk_id, e.file_path, "python", e.qualified_name, "pass") for e in code]
    async with committed_graph(stack, corpus_id, GENERATION, rows, entities, relations):
        yield corpus_id


@pytest.fixture
async def corpus(stack: Stack) -> AsyncIterator[str]:
    async with document_corpus(stack) as corpus_id:
        yield corpus_id


@pytest.fixture(params=["store", "snapshot"])
async def reader(request: pytest.FixtureRequest, stack: Stack, corpus: str) -> GraphView:
    """The graph as searches read it: from the store, or from memory; both answer alike."""
    store = stack.resources.graph()
    if request.param == "store":
        return store
    return await GraphSnapshot.load(store, graph_key(corpus, GENERATION))


def settings(config: TriBridConfig, **changes: object) -> DocumentSettings:
    base = DocumentSettings.of(config.graph, config.entities.types.values())
    return replace(base, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Found:
    chunk_id: str
    score: float
    depth: int
    path: tuple[str, ...]


def found(result: GraphResult) -> list[Found]:
    return [
        Found(
            c.chunk.chunk_id,
            round(c.score, 6),
            result.provenance[c.chunk.chunk_id].hops,
            tuple(result.provenance[c.chunk.chunk_id].path),
        )
        for c in result.chunks
    ]


async def search(
    stack: Stack,
    reader: GraphView,
    corpus_id: str,
    query: str,
    cfg: DocumentSettings,
    recognized: Sequence[str] = (),
) -> GraphResult:
    params = SearchParams(corpus_id, query, 20, None, ())
    key = graph_key(corpus_id, GENERATION)
    rows = GenerationRows(await stack.resources.pool(), 100).at(key)
    return await document_search(reader, rows, key, params, cfg, recognized)


async def expand(
    stack: Stack, reader: GraphView, corpus_id: str, chunk_ids: list[str], depth: int, cfg: DocumentSettings
) -> GraphResult:
    key = graph_key(corpus_id, GENERATION)
    rows = GenerationRows(await stack.resources.pool(), 100).at(key)
    return await document_expansion(reader, rows, corpus_id, key, chunk_ids, depth, 20, cfg)


# --- seeds ----------------------------------------------------------------------------------------


async def test_seeds_by_name_alias_prefix_and_ner(
    stack: Stack, config: TriBridConfig, corpus: str, reader: GraphView
) -> None:
    key, cfg = graph_key(corpus, GENERATION), settings(config)

    async def seeds(query: str, recognized: Sequence[str] = ()) -> list[tuple[str, float]]:
        return [(e.entity_id, s) for e, s in await find_document_seeds(reader, key, query, cfg, recognized)]

    # "dell" is Dell Technologies' alias (exact, any case), so "Dell" is not looked up by prefix too
    assert await seeds("where is Dell headquartered") == [("e_dell", 1.0)]
    # a capitalized word no exact name holds is: Michael Dell's name starts with "Michael" (a
    # fulltext hit, 0.7), and "Del" begins a word of both Dells' names (0.7 when it starts the name,
    # 0.4 when another word does)
    assert await seeds("Michael in Texas") == [("e_texas", 1.0), ("e_michael", 0.7)]
    assert await seeds("Del Mar") == [("e_dell", 0.7), ("e_michael", 0.4)]
    assert await seeds("where is dell headquartered") == [("e_dell", 1.0)]  # lower case: no prefix
    assert await seeds("news from dell technologies and michael dell") == [
        ("e_dell", 1.0),
        ("e_michael", 1.0),
    ]
    assert await seeds("the office in TX") == []
    assert await seeds("the office in TX", recognized=["Texas"]) == [("e_texas", 1.0)]
    # a name shown with its article, found with or without it
    assert await seeds("sailing to the ross sea") == [("e_ross", 1.0)]
    assert await seeds("Ross Sea ice") == [("e_ross", 1.0)]
    assert await seeds("the bay of whales") == [("e_whales", 1.0)]
    # code entity types and chunks are not seeds of a document search
    assert await seeds("Manual Part c1") == []


def test_a_name_inside_a_longer_seed_the_question_holds_is_not_a_seed() -> None:
    """ "LA" (an entity of its own) is only part of "La Chesnaye", which the question names."""

    def named(eid: str, name: str) -> Entity:
        return Entity(eid, "c", "person", name, name, "", 0, 0, "")

    seeds = [(named("a", "La Chesnaye"), 1.0), (named("b", "LA"), 1.0), (named("c", "Treville"), 1.0)]
    kept = longest_names(
        [*seeds, (named("d", "Chesnaye Hall"), 0.4)], "Treville and la chesnaye, at the door"
    )
    assert [e.entity_id for e, _ in kept] == ["a", "c", "d"]
    # a longer name the question does not hold takes nothing away
    kept = longest_names([(named("b", "LA"), 1.0), (named("e", "La Rochelle"), 1.0)], "La and the sea")
    assert [e.entity_id for e, _ in kept] == ["b", "e"]


def test_a_word_a_seed_names_is_not_looked_up_by_prefix() -> None:
    def named(eid: str, name: str, *aliases: str) -> tuple[Entity, float]:
        return Entity(eid, "c", "person", name, name, "", 0, 0, "", aliases=aliases), 1.0

    seeds = [named("a", "Athos"), named("d", "d\u2019Artagnan"), named("m", "Mme. Bonacieux", "Constance")]
    words = ["Athos", "Porthos", "d'Artagnan", "Constance", "Bonacieux", "Kitty"]
    # a curly apostrophe in a name is the question's straight one
    assert unnamed_words(words, seeds) == ["Porthos", "Kitty"]
    assert unnamed_words(words, []) == words


async def test_alias_seeds_are_the_same_in_the_store_and_in_memory(stack: Stack, corpus: str) -> None:
    store = stack.resources.graph()
    key = graph_key(corpus, GENERATION)
    snapshot = await GraphSnapshot.load(store, key)
    named = ["event", "location", "organization", "person"]
    cases = [["dell"], ["DELL", "texas"], ["dell technologies"], ["Dell", "function"], ["michael"]]
    for terms in cases:
        for types in (named, ["organization"], ["function", "chunk"]):
            for fulltext in (True, False):
                want = await store.find_seeds(key, terms, types, 10, fulltext=fulltext)
                got = await snapshot.find_seeds(key, terms, types, 10, fulltext=fulltext)
                assert got == want, (terms, types, fulltext)
    exact = await store.find_seeds(key, ["dell"], named, 10, fulltext=False)
    assert [(e.entity_id, s) for e, s in exact] == [("e_dell", 1.0)]
    # aliases belong to named entities: a search over code types never matches one
    assert await store.find_seeds(key, ["dell"], ["function", "chunk"], 10) == []


# --- search ----------------------------------------------------------------------------------------


async def test_search_scores_depth_one_and_two(
    stack: Stack, config: TriBridConfig, corpus: str, reader: GraphView
) -> None:
    """Dell (exact, 1.0) is the only seed: "Dell" names it, so no longer name holding the word is
    looked up by prefix. depth 1: c1, c2 mention Dell: 1.0 (c1 first: it names Dell 3 times).
    depth 2 (x 0.8): Dell -0.8- Texas, mentioned by c3: 0.64 (and by c2, already at 1.0); Dell -0.6-
    Michael Dell, mentioned by c5: 0.48. Dell -0.4- Tech Expo is under the 0.5 floor."""
    result = await search(stack, reader, corpus, "Where is Dell headquartered?", settings(config))
    assert found(result) == [
        # c2 also names Texas, Dell's neighbour: the evidence it names adds up, 1 + 0.5 x 0.8 x t,
        # Texas's specificity t = ln(1 + 4/2) / ln(1 + 4/1) among Dell, Texas and Michael Dell
        # (4 chunks name one; Texas 2, Michael Dell 1)
        Found("c2", round(1 + 0.4 * math.log(3) / math.log(5), 6), 1, ("Dell Technologies", qname("c2"))),
        Found("c1", 1.0, 1, ("Dell Technologies", qname("c1"))),
        Found("c3", 0.64, 2, ("Dell Technologies", "Texas", qname("c3"))),
        Found("c5", 0.48, 2, ("Dell Technologies", "Michael Dell", qname("c5"))),
    ]
    one = await search(stack, reader, corpus, "Where is Dell headquartered?", settings(config, max_depth=1))
    assert [(f.chunk_id, f.score) for f in found(one)] == [("c1", 1.0), ("c2", 1.0)]
    # depth 3: Dell -0.8- Texas -0.9- Austin, mentioned by c4: 0.6 x 0.72
    three = await search(stack, reader, corpus, "Where is Dell headquartered?", settings(config, max_depth=3))
    assert found(three)[-1] == Found("c4", 0.432, 3, ("Dell Technologies", "Texas", "Austin", qname("c4")))


async def test_search_weighs_each_seed_by_its_specificity(
    stack: Stack, config: TriBridConfig, corpus: str, reader: GraphView
) -> None:
    """Dell (exact, 1.0) and Michael Dell ("Michael" starts his name: 0.7) are the seeds. Dell is
    named by c1 and c2, Michael Dell by c5 alone: the rarer seed keeps its score and Dell's is
    scaled by its specificity s = ln(1 + 3/2) / ln(1 + 3/1) (3 chunks name a seed). c2 also names
    Texas, Dell's neighbour: 0.5 x 0.8 x s x ln(1 + 4/2) / ln(1 + 4/1), its specificity among the
    seeds and Texas (4 chunks name one of them)."""
    s = math.log(2.5) / math.log(4)
    texas = 0.4 * s * math.log(3) / math.log(5)
    result = await search(
        stack, reader, corpus, "Where is Dell headquartered, asked Michael", settings(config)
    )
    assert found(result) == [
        Found("c2", round(s + texas, 6), 1, ("Dell Technologies", qname("c2"))),
        Found("c5", 0.7, 1, ("Michael Dell", qname("c5"))),
        Found("c1", round(s, 6), 1, ("Dell Technologies", qname("c1"))),
        Found("c3", round(0.64 * s, 6), 2, ("Dell Technologies", "Texas", qname("c3"))),
    ]


async def test_search_provenance(stack: Stack, config: TriBridConfig, corpus: str, reader: GraphView) -> None:
    result = await search(stack, reader, corpus, "dell", settings(config))
    c3 = result.provenance["c3"]
    assert c3.seed_entity == "Dell Technologies" and c3.seed_match == "exact" and c3.hops == 2
    assert list(c3.relationship_types) == ["related_to", "mentions"]
    assert [(e.strength, e.count) for e in c3.edges] == [(0.8, 0), (0.0, 2)]
    assert c3.graph_score == pytest.approx(0.64)
    detail = {c.chunk.chunk_id: c.detail for c in result.chunks}["c3"]
    assert detail == "seed=Dell Technologies depth=2 via=related_to,mentions graph_score=0.6400"


async def test_search_related_min_strength(
    stack: Stack, config: TriBridConfig, corpus: str, reader: GraphView
) -> None:
    """Texas's RELATED_TO edges: Dell 0.8, Austin 0.9. A floor above 0.8 keeps only Austin. c2 names
    Texas and Dell: above the floor Dell is evidence too (1.0 + 0.5 x 0.8 x its
    specificity), below it c2 ties c3."""
    cases = {0.5: ["c2", "c3", "c4", "c1"], 0.85: ["c3", "c2", "c4"], 0.95: ["c3", "c2"]}
    for floor, chunks in cases.items():
        result = await search(stack, reader, corpus, "texas", settings(config, related_min_strength=floor))
        assert [f.chunk_id for f in found(result)] == chunks, floor
    # at 0.5: c4 via Austin 0.8 x 0.9 = 0.72, c1 via Dell 0.8 x 0.8 = 0.64
    scores = {
        f.chunk_id: f.score for f in found(await search(stack, reader, corpus, "texas", settings(config)))
    }
    # c2: 1 + 0.5 x 0.8 x Dell's specificity among Texas, Dell and Austin, ln(1 + 4/2) / ln(1 + 4/1)
    assert scores == {"c3": 1.0, "c2": round(1 + 0.4 * math.log(3) / math.log(5), 6), "c4": 0.72, "c1": 0.64}


async def test_search_ties_are_deterministic(
    stack: Stack, config: TriBridConfig, corpus: str, reader: GraphView
) -> None:
    """Equal scores: more mentions of the entity first, then chunk id; fan-out keeps the strongest."""
    texas = await search(stack, reader, corpus, "texas", settings(config, max_depth=1))
    # one seed keeps its score (no specificity to weigh), however many chunks name it
    assert [(f.chunk_id, f.score) for f in found(texas)] == [("c3", 1.0), ("c2", 1.0)]  # 2 mentions, 1
    narrow = await search(stack, reader, corpus, "texas", settings(config, max_depth=1, max_fanout=1))
    assert [f.chunk_id for f in found(narrow)] == ["c3"]
    both = await search(stack, reader, corpus, "Tech Expo and Austin", settings(config, max_depth=1))
    # "Tech" starts a word of "Dell Technologies" too, but the question's "Tech" is Tech Expo's:
    # an exact name holds it, so it is not looked up by prefix
    assert [(f.chunk_id, f.score) for f in found(both)] == [("c4", 1.0), ("c6", 1.0)]


# --- expansion -------------------------------------------------------------------------------------


async def test_expansion_depth_one_and_two(
    stack: Stack, config: TriBridConfig, corpus: str, reader: GraphView
) -> None:
    """From c1 (mentions Dell; SIMILAR_TO c6 0.75, c4 0.65 < 0.7).
    depth 1: c2 shares Dell (1.0); c6 is similar (0.75). depth 2 (x 0.8): c3 shares Texas with c2
    (1.0 -> 0.8); c5 mentions Michael Dell, RELATED_TO Dell at 0.6 (0.48)."""
    cfg = settings(config)
    one = await expand(stack, reader, corpus, ["c1"], 1, cfg)
    assert found(one) == [
        Found("c2", 1.0, 1, (qname("c1"), "Dell Technologies", qname("c2"))),
        Found("c6", 0.75, 1, (qname("c1"), qname("c6"))),
    ]
    two = await expand(stack, reader, corpus, ["c1"], 2, cfg)
    assert found(two) == [
        Found("c2", 1.0, 1, (qname("c1"), "Dell Technologies", qname("c2"))),
        Found("c3", 0.8, 2, (qname("c1"), "Dell Technologies", qname("c2"), "Texas", qname("c3"))),
        Found("c6", 0.75, 1, (qname("c1"), qname("c6"))),
        Found("c5", 0.48, 2, (qname("c1"), "Dell Technologies", "Michael Dell", qname("c5"))),
    ]
    c6 = two.provenance["c6"]
    assert c6.seed_entity == "c1" and list(c6.relationship_types) == ["similar_to"]
    assert [e.similarity for e in c6.edges] == [0.75] and c6.graph_score == pytest.approx(0.75)
    c3 = two.provenance["c3"]
    assert [e.count for e in c3.edges] == [3, 1, 1, 2]


async def test_expansion_similar_to_threshold_and_inputs_left_out(
    stack: Stack, config: TriBridConfig, corpus: str, reader: GraphView
) -> None:
    low = await expand(stack, reader, corpus, ["c1"], 1, settings(config, similar_to_threshold=0.6))
    assert [(f.chunk_id, f.score) for f in found(low)] == [("c2", 1.0), ("c6", 0.75), ("c4", 0.65)]
    high = await expand(stack, reader, corpus, ["c1"], 1, settings(config, similar_to_threshold=0.8))
    assert [f.chunk_id for f in found(high)] == ["c2"]
    # the given chunks are never answers, and each reached chunk is reached from its best start
    both = await expand(stack, reader, corpus, ["c1", "c2"], 1, settings(config))
    assert [(f.chunk_id, f.path[0]) for f in found(both)] == [("c3", qname("c2")), ("c6", qname("c1"))]


# --- through the service ---------------------------------------------------------------------------


async def rpc_search(
    stack: Stack, corpus_id: str, query: str, **options: object
) -> list[common_pb2.ChunkMatch]:
    async with stack.channel("graph") as channel:
        request = common_pb2.SearchRequest(
            corpus_id=corpus_id, query=query, top_k=20, options=graph_options(**options)
        )
        reply = await graph_pb2_grpc.GraphSearchStub(channel).Search(request, timeout=30)
    return list(reply.matches)


async def test_service_search_and_expand(stack: Stack, corpus: str) -> None:
    matches = await rpc_search(stack, corpus, "Where is Dell headquartered?")
    # as test_search_scores_depth_one_and_two
    assert [(m.chunk_id, round(m.score, 6)) for m in matches] == [
        ("c2", round(1 + 0.4 * math.log(3) / math.log(5), 6)),  # names Dell and its neighbour Texas
        ("c1", 1.0),
        ("c3", 0.64),
        ("c5", 0.48),
    ]
    graph = matches[2].explain[0].graph
    assert graph.seed_entity == "Dell Technologies" and list(graph.path) == [
        "Dell Technologies",
        "Texas",
        qname("c3"),
    ]
    deeper = await rpc_search(stack, corpus, "Where is Dell headquartered?", document_max_hops=3)
    assert [m.chunk_id for m in deeper] == ["c2", "c1", "c3", "c5", "c4"]
    async with stack.channel("graph") as channel:
        reply = await graph_pb2_grpc.GraphSearchStub(channel).ExpandContext(
            graph_pb2.ExpandContextRequest(corpus_id=corpus, chunk_ids=["c1"], max_hops=2), timeout=30
        )
    assert [(m.chunk_id, round(m.score, 6), m.expansion_hops) for m in reply.matches] == [
        ("c2", 1.0, 1),
        ("c3", 0.8, 2),
        ("c6", 0.75, 1),
        ("c5", 0.48, 2),
    ]


async def test_service_uses_the_query_recognizer(stack: Stack, config: TriBridConfig, corpus: str) -> None:
    asked: list[str] = []

    def recognize(query: str) -> list[str]:
        asked.append(query)
        return ["Texas"]

    servicer = GraphServicer(
        config.graph,
        config.limits,
        await stack.resources.pool(),
        stack.resources.graph(),
        named_entity_types=config.entities.types.values(),
        query_entities=recognize,
    )
    request = common_pb2.SearchRequest(corpus_id=corpus, query="the office in TX", top_k=5)
    reply = await servicer.Search(request, None)  # type: ignore[arg-type]  # no error: no context needed
    assert [m.chunk_id for m in reply.matches] == ["c2", "c3", "c4", "c1"]
    assert asked == ["the office in TX"]


async def test_the_question_recognizer_is_loaded_at_start_when_documents_are_indexed(
    stack: Stack, config: TriBridConfig, corpus: str
) -> None:
    """`warm_up` (started by the service's build) runs the recognizer once, before any question,
    when a corpus holds documents; without a recognizer there is nothing to load."""
    asked: list[str] = []

    def recognize(query: str) -> list[str]:
        asked.append(query)
        return []

    pool, store = await stack.resources.pool(), stack.resources.graph()
    servicer = GraphServicer(config.graph, config.limits, pool, store, query_entities=recognize)
    assert (await servicer.warm_up()).recognizer is True
    assert asked == ["warm up"]
    assert (await GraphServicer(config.graph, config.limits, pool, store).warm_up()).recognizer is False


async def test_mixed_corpus_code_answers_unchanged(stack: Stack) -> None:
    """A corpus with code and documents answers code questions exactly as a code-only one, and
    document questions from its document graph."""
    code_edges = [Relation(a, b, t) for a, b, t in FIXTURE_EDGES]
    async with (
        graph_corpus(stack, "gleg", fixture_entities, code_edges) as fixture_corpus,
        document_corpus(stack, with_code=True) as mixed,
    ):
        for query, options in (
            ("who calls checkout", {"max_hops": 2}),
            ("checkout", {}),
            ("what does checkout call", {}),
        ):
            code_only = await rpc_search(stack, fixture_corpus, query, **options)
            both = await rpc_search(stack, mixed, query, **options)
            assert [(m.chunk_id, m.score, m.explain[0].graph.path[:]) for m in both] == [
                (m.chunk_id, m.score, m.explain[0].graph.path[:]) for m in code_only
            ], query
        assert [m.chunk_id for m in await rpc_search(stack, mixed, "texas")] == ["c2", "c3", "c4", "c1"]
        async with stack.channel("graph") as channel:
            stub = graph_pb2_grpc.GraphSearchStub(channel)
            request = graph_pb2.ExpandContextRequest(chunk_ids=["chunk-checkout"], max_hops=1)
            request.corpus_id = fixture_corpus
            code_only_expanded = await stub.ExpandContext(request, timeout=30)
            request.corpus_id = mixed
            mixed_expanded = await stub.ExpandContext(request, timeout=30)
        assert [(m.chunk_id, m.score) for m in mixed_expanded.matches] == [
            (m.chunk_id, m.score) for m in code_only_expanded.matches
        ]
        assert mixed_expanded.matches


async def test_bad_document_max_hops(stack: Stack, corpus: str) -> None:
    for depth, message in (
        (4, "options.graph.document_max_hops: Input should be less than or equal to 3"),
        (0, "options.graph.document_max_hops: Input should be greater than or equal to 1"),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await rpc_search(stack, corpus, "dell", document_max_hops=depth)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert message in (err.value.details() or "")


async def test_named_relationship_types_narrow_the_walk(
    stack: Stack, config: TriBridConfig, corpus: str, reader: GraphView
) -> None:
    similar_only = settings(config, relationship_types=frozenset({"similar_to"}))
    assert found(await search(stack, reader, corpus, "texas", similar_only)) == []
    assert [f.chunk_id for f in found(await expand(stack, reader, corpus, ["c1"], 2, similar_only))] == ["c6"]
    mentions_only = settings(config, relationship_types=frozenset({"mentions"}))
    # no RELATED_TO: Texas's own chunks only; expansion through shared entities only
    assert [f.chunk_id for f in found(await search(stack, reader, corpus, "texas", mentions_only))] == [
        "c3",
        "c2",
    ]
    expanded = await expand(stack, reader, corpus, ["c1"], 2, mentions_only)
    assert [(f.chunk_id, f.score) for f in found(expanded)] == [("c2", 1.0), ("c3", 0.8)]
    async with stack.channel("graph") as channel:
        reply = await graph_pb2_grpc.GraphSearchStub(channel).ExpandContext(
            graph_pb2.ExpandContextRequest(
                corpus_id=corpus, chunk_ids=["c1"], max_hops=2, relationship_types=["similar_to"]
            ),
            timeout=30,
        )
    assert [m.chunk_id for m in reply.matches] == ["c6"]
    assert await rpc_search(stack, corpus, "texas", relationship_types=["calls"]) == []


@pytest.fixture(scope="module")
async def indexed_corpus(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> str:
    """tests/fixtures/knowledge through the real indexer: its document graph and named entities."""
    root = tmp_path_factory.mktemp("knowledge") / "docs"
    shutil.copytree(KNOWLEDGE, root)
    corpus_id = f"gdoc-indexed-{uuid.uuid4().hex[:8]}"
    await index_corpus(stack, corpus_id, root)
    return corpus_id


async def indexed_graph(stack: Stack, corpus_id: str) -> tuple[list[Entity], list[Relation]]:
    generation = await corpus_generation(await stack.resources.pool(), corpus_id)
    assert generation is not None
    store, key = stack.resources.graph(), graph_key(corpus_id, generation)
    return await store.get_entities(key, await store.entity_ids(key)), await store.all_relations(key)


async def test_expansion_over_an_indexed_corpus(stack: Stack, indexed_corpus: str) -> None:
    """The indexer's own document graph: a chunk's SIMILAR_TO neighbours come back at depth 1
    scored by their stored similarity."""
    _, relations = await indexed_graph(stack, indexed_corpus)
    similar = [r for r in relations if r.type == "similar_to"]
    start = min(r.source_id for r in similar)
    want = {}
    for r in similar:
        if start in (r.source_id, r.target_id):
            want[r.target_id if r.source_id == start else r.source_id] = round(r.similarity, 6)
    async with stack.channel("graph") as channel:
        reply = await graph_pb2_grpc.GraphSearchStub(channel).ExpandContext(
            graph_pb2.ExpandContextRequest(
                corpus_id=indexed_corpus, chunk_ids=[start], max_hops=1, relationship_types=["similar_to"]
            ),
            timeout=30,
        )
    assert {m.chunk_id: round(m.score, 6) for m in reply.matches} == want
    assert all(m.expansion_hops == 1 for m in reply.matches)
    assert [m.score for m in reply.matches] == sorted((m.score for m in reply.matches), reverse=True)


async def test_search_over_an_indexed_corpus(stack: Stack, indexed_corpus: str) -> None:
    """The entity most chunks mention, named in a question: every chunk mentioning it first, at
    depth 1 with at least 1.0; then what its RELATED_TO neighbours lead to."""
    entities, relations = await indexed_graph(stack, indexed_corpus)
    named = {e.entity_id: e for e in entities if e.type in stack.cfg.entities.types.values()}
    mentions = [r for r in relations if r.type == "mentions"]
    assert named and mentions  # the indexer found entities
    chunks_of: dict[str, list[Relation]] = {}
    for r in mentions:
        chunks_of.setdefault(r.target_id, []).append(r)
    top = min(named, key=lambda eid: (-len(chunks_of.get(eid, [])), eid))
    want = [r.source_id for r in sorted(chunks_of[top], key=lambda r: (-r.count, r.source_id))]
    matches = await rpc_search(stack, indexed_corpus, f"What do the documents say about {named[top].name}?")
    # first every chunk that names it (1.0, and more for each of its neighbours a chunk names too)
    assert sorted(m.chunk_id for m in matches[: len(want)]) == sorted(want)
    assert all(m.score >= 1.0 and m.explain[0].graph.hops == 1 for m in matches[: len(want)])
    assert [m.score for m in matches] == sorted((m.score for m in matches), reverse=True)
    first = matches[0].explain[0].graph
    assert first.seed_entity == named[top].name and list(first.relationship_types) == ["mentions"]
    assert all(m.score < 1.0 for m in matches[len(want) :])
