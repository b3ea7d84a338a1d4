"""A committed graph in memory (graphstore.snapshot) answers exactly as the store it was read from."""

from __future__ import annotations

import inspect
import itertools
import random
import threading
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from typing import Any, cast

import pytest

from services.graph.snapshot import GraphSnapshot
from services.graph.snapshot_loader import load_apart
from tests.integration.test_graphstore import (
    ALL_ENTITY_TYPES,
    ALL_REL_TYPES,
    BACKENDS,
    backend_config,
    ent,
    new_corpus_id,
)
from tribrid.config import TriBridConfig
from tribrid.graphstore import GraphStore, open_graph_store
from tribrid.graphstore.base import DIRECTIONS, graph_key
from tribrid.models import Entity, Relation

# Names sharing words and prefixes, so seeds come by every route: exact, prefix, fulltext word, typo.
_WORDS = ["parse", "parser", "render", "load", "loads", "client", "config", "node", "graph", "walk"]
_REFS = ["requests.get", "json.dumps", "os.path.join"]


def random_graph(corpus_id: str, seed: int) -> tuple[list[Entity], list[Relation]]:
    """80 entities of every type, three to a chunk, and ~240 relations of every type."""
    rng = random.Random(seed)
    entities = [
        replace(
            ent(
                corpus_id,
                f"e{i:03d}",
                name := rng.choice(_WORDS) + rng.choice(["", "_all", "_one", "er", "s"]),
                type_=rng.choice(ALL_ENTITY_TYPES),
                qualified_name=f"pkg.{rng.choice(_WORDS)}.{name}",
            ),
            chunk_id=f"chunk-{i // 3}",
            unresolved=tuple(rng.sample(_REFS, rng.randint(0, 2))),
        )
        for i in range(80)
    ]
    relations = {
        Relation(f"e{rng.randrange(80):03d}", f"e{rng.randrange(80):03d}", rng.choice(ALL_REL_TYPES))
        for _ in range(240)
    }
    return entities, [
        _with_properties(r, rng) for r in sorted(relations, key=lambda r: (r.source_id, r.target_id, r.type))
    ]


def _with_properties(relation: Relation, rng: random.Random) -> Relation:
    """Some relations carry each kind of property: a snapshot keeps each distinct value once."""
    kind = rng.randrange(6)
    if kind == 1 and relation.type in ("calls", "inherits"):  # the only edges the indexer infers
        return replace(relation, inferred=True, confidence=rng.choice([0.5, 1 / 3, 1.0]))
    if kind == 2:
        return replace(relation, count=rng.randint(1, 4), strength=round(rng.random(), 6))
    if kind == 3:
        return replace(relation, similarity=round(rng.uniform(0.5, 1.0), 6))
    if kind == 4:
        return replace(relation, properties=rng.choice(['{"role": "member"}', '{"since": 3}']))
    return relation


@pytest.fixture(params=BACKENDS)
async def store(request: pytest.FixtureRequest, config: TriBridConfig) -> AsyncIterator[GraphStore]:
    graph_store = open_graph_store(backend_config(config.graph_store, request.param))
    yield graph_store
    await graph_store.close()


async def stored_graph(store: GraphStore, seed: int) -> str:
    """A new corpus's `random_graph` written to `store`, with communities; its graph key."""
    corpus_id = new_corpus_id()
    key = graph_key(corpus_id, 1)
    entities, relations = random_graph(corpus_id, seed=seed)
    await store.ensure_schema(key)
    await store.upsert_entities(key, entities)
    await store.upsert_relations(key, relations)
    await store.set_communities(key, {e.entity_id: i % 4 - 1 for i, e in enumerate(entities)})
    return key


@pytest.fixture
async def loaded(store: GraphStore) -> AsyncIterator[tuple[str, GraphSnapshot]]:
    key = await stored_graph(store, seed=11)
    try:
        yield key, await GraphSnapshot.load(store, key)
    finally:
        await store.delete_corpus(key)


async def test_traversals_match_the_store(store: GraphStore, loaded: tuple[str, GraphSnapshot]) -> None:
    key, snapshot = loaded
    rng = random.Random(5)
    ids = [f"e{i:03d}" for i in range(80)]
    cases = 0
    for direction in DIRECTIONS:
        for rel_types in (ALL_REL_TYPES, ["calls"], ["contains", "inherits", "references"]):
            for max_hops, max_fanout, limit in ((1, 0, 1000), (2, 3, 1000), (3, 0, 12), (4, 2, 40)):
                seeds = [*rng.sample(ids, rng.randint(1, 4)), "not-an-entity"]
                args = (key, seeds, max_hops, rel_types)
                options = {"direction": direction, "max_fanout": max_fanout, "limit": limit}
                want = await store.traverse(*args, **options)  # type: ignore[arg-type]
                assert await snapshot.traverse(*args, **options) == want, (seeds, options)  # type: ignore[arg-type]
                cases += bool(want)
    assert cases > 20  # most cases reach something: the comparison is not of empty lists


async def test_seeds_and_lookups_match_the_store(
    store: GraphStore, loaded: tuple[str, GraphSnapshot]
) -> None:
    key, snapshot = loaded
    for terms in (["parse"], ["PARSER", "walk"], ["pkg.graph.nodes", "loads"], ["rendr"], ["conf", "x"]):
        for types, limit in ((ALL_ENTITY_TYPES, 20), (["function", "class"], 5), ([], 5)):
            for fuzzy in (True, False):
                want = await store.find_seeds(key, terms, types, limit, fuzzy=fuzzy)
                assert await snapshot.find_seeds(key, terms, types, limit, fuzzy=fuzzy) == want, terms
    asked = ["e005", "nope", "e001", "e005", "e079"]
    for with_unresolved in (True, False):
        want_entities = await store.get_entities(key, asked, with_unresolved=with_unresolved)
        assert await snapshot.get_entities(key, asked, with_unresolved=with_unresolved) == want_entities
    chunks = ["chunk-3", "chunk-0", "nope", "chunk-3"]
    assert await snapshot.entities_by_chunks(key, chunks) == await store.entities_by_chunks(key, chunks)
    assert await snapshot.community_of(key, asked) == await store.community_of(key, asked)
    assert await snapshot.unresolved_refs(key) == await store.unresolved_refs(key)


async def test_relations_match_the_store(store: GraphStore, loaded: tuple[str, GraphSnapshot]) -> None:
    key, snapshot = loaded
    rng = random.Random(9)
    ids = [f"e{i:03d}" for i in range(80)]
    found = 0
    for direction in ("out", "in"):
        for rel_types in (ALL_REL_TYPES, ["calls"], ["contains", "inherits", "references"], ["nope"]):
            for nodes in ([*rng.sample(ids, 5), "not-an-entity"], ids, []):
                want = await store.relations_of(key, nodes, rel_types, direction)  # type: ignore[arg-type]
                assert await snapshot.relations_of(key, nodes, rel_types, direction) == want  # type: ignore[arg-type]
                found += len(want)
    assert found > 240  # properties included, since each relation is compared whole
    pairs = [(a, b) for a in ids[:20] for b in ids]
    assert await snapshot.inferred_edges(key, pairs) == await store.inferred_edges(key, pairs)
    assert await snapshot.inferred_edges(key, pairs)  # some of them are inferred


class CountingFulltext:
    """The real store, with the terms each fulltext question asked it about recorded."""

    def __init__(self, store: GraphStore) -> None:
        self.store = store
        self.asked: list[list[str]] = []

    async def fulltext_ids_by_term(
        self, corpus_id: str, terms: Sequence[str], entity_types: Sequence[str], *, fuzzy: bool = True
    ) -> dict[str, list[str]]:
        self.asked.append(list(terms))
        return await self.store.fulltext_ids_by_term(corpus_id, terms, entity_types, fuzzy=fuzzy)


async def test_fulltext_by_term_asked_together_or_alone(
    store: GraphStore, loaded: tuple[str, GraphSnapshot]
) -> None:
    key, _ = loaded
    for terms in (["parse", "walk", "Parse"], ["rendr", "pkg.graph.nodes"], ["zzz"]):
        by_term = await store.fulltext_ids_by_term(key, terms, ALL_ENTITY_TYPES)
        # one answer per lower-cased term without a dot (a dotted name is only looked up exactly)
        assert set(by_term) == {t.lower() for t in terms if "." not in t}
        for term, ids in by_term.items():  # the same as asking about the term alone
            assert ids == (await store.fulltext_ids_by_term(key, [term], ALL_ENTITY_TYPES))[term]
    assert (await store.fulltext_ids_by_term(key, ["parse"], ALL_ENTITY_TYPES))["parse"]  # not all empty


async def test_kept_fulltext_answers_are_the_stores(
    store: GraphStore, loaded: tuple[str, GraphSnapshot]
) -> None:
    key, _ = loaded
    counting = CountingFulltext(store)
    snapshot = await GraphSnapshot.load(store, key, fulltext_cache_terms=3)
    snapshot._fulltext = counting  # type: ignore[assignment]  # the same store, its questions counted

    async def asks(terms: list[str], types: list[str] = ALL_ENTITY_TYPES, fuzzy: bool = True) -> list[str]:
        """The terms these seeds had to be asked of the store about; the seeds are the store's."""
        counting.asked.clear()
        want = await store.find_seeds(key, terms, types, 20, fuzzy=fuzzy)
        assert await snapshot.find_seeds(key, terms, types, 20, fuzzy=fuzzy) == want
        return [term for asked in counting.asked for term in asked]

    assert await asks(["parse", "walk"]) == ["parse", "walk"]
    assert await asks(["walk", "parse"]) == []
    assert await asks(["parse", "rendr"]) == ["rendr"]
    assert await asks(["loads"]) == ["loads"]  # four terms: the least recently used ("walk") goes
    assert snapshot._fulltext_cache is not None and len(snapshot._fulltext_cache) == 3
    assert await asks(["walk"]) == ["walk"]
    assert await asks(["rendr", "loads"]) == []
    # another question for the same word: other entity types, or fuzzy matching turned off
    assert await asks(["loads"], ["class", "function"]) == ["loads"]
    assert await asks(["loads"], fuzzy=False) == ["loads"]
    # words under FUZZY_MIN_LEN are never matched fuzzily: one question either way
    assert await asks(["conf"], fuzzy=False) == ["conf"]
    assert await asks(["conf"]) == []
    # an answer handed out is the caller's: changing it leaves the kept one alone
    handed = await snapshot.fulltext_ids_by_term(key, ["loads"], ALL_ENTITY_TYPES)
    assert handed["loads"]
    handed["loads"].clear()
    assert await snapshot.fulltext_ids_by_term(
        key, ["loads"], ALL_ENTITY_TYPES
    ) == await store.fulltext_ids_by_term(key, ["loads"], ALL_ENTITY_TYPES)


async def test_a_snapshot_answers_only_for_its_own_graph(loaded: tuple[str, GraphSnapshot]) -> None:
    key, snapshot = loaded
    with pytest.raises(ValueError, match="this snapshot holds graph"):
        await snapshot.get_entities(graph_key("other", 1), ["e001"])
    assert [e.entity_id for e in await snapshot.get_entities(key, ["e001"])] == ["e001"]


async def test_a_kind_of_walk_is_kept_once_whatever_the_order_and_only_a_few_kinds_are_kept(
    store: GraphStore, loaded: tuple[str, GraphSnapshot]
) -> None:
    key, snapshot = loaded
    seeds = ["e001", "e040"]
    kinds = [list(kind) for n in range(1, 6) for kind in itertools.combinations(ALL_REL_TYPES, n)]
    pairs = [kind for kind in kinds if len(kind) == 2][:5]
    for count, rel_types in enumerate(pairs, start=1):
        forward = await snapshot.traverse(key, seeds, 2, rel_types)
        assert await snapshot.traverse(key, seeds, 2, rel_types[::-1]) == forward
        assert len(snapshot._walks) == count  # the reversed list is the same kind
    for rel_types in kinds:  # all 31 sets of types: requests choose them
        await snapshot.traverse(key, seeds, 2, rel_types)
    assert len(snapshot._walks) == 8
    assert await snapshot.traverse(key, seeds, 2, kinds[0]) == await store.traverse(key, seeds, 2, kinds[0])


async def test_inferred_edges_keep_their_confidence_in_the_store_and_the_snapshot(store: GraphStore) -> None:
    corpus_id = new_corpus_id()
    key = graph_key(corpus_id, 1)
    entities = [ent(corpus_id, x, f"fn_{x}") for x in "abcde"]
    relations = [
        Relation("a", "b", "calls"),  # proven
        Relation("a", "c", "calls", inferred=True, confidence=0.5),
        Relation("a", "d", "calls", inferred=True, confidence=0.5),
        Relation("b", "c", "references"),
        Relation("e", "b", "inherits", inferred=True, confidence=1.0),  # a base inferred by name
        Relation("e", "a", "inherits"),
    ]
    await store.ensure_schema(key)
    try:
        await store.upsert_entities(key, entities)
        assert await store.upsert_relations(key, relations) == 6
        stored = await store.all_relations(key)
        assert stored == sorted(relations, key=lambda r: (r.source_id, r.type, r.target_id))
        snapshot = await GraphSnapshot.load(store, key)
        asked = [
            ("a", "b"),
            ("a", "c"),
            ("c", "a"),
            ("a", "d"),
            ("b", "c"),
            ("e", "b"),
            ("e", "a"),
            ("x", "y"),
        ]
        # proven edges are left out
        expected = {("a", "c"): 0.5, ("a", "d"): 0.5, ("e", "b"): 1.0}
        assert await store.inferred_edges(key, asked) == expected
        assert await snapshot.inferred_edges(key, asked) == expected
        assert await store.inferred_edges(key, []) == {}
    finally:
        await store.delete_corpus(key)


class _ThreadNoting:
    """A store that notes the thread of each call, and whether it was closed."""

    def __init__(self, inner: GraphStore) -> None:
        self._inner = inner
        self.threads: set[int] = set()
        self.closed = False

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not inspect.iscoroutinefunction(attr):
            return attr

        async def call(*args: Any, **kwargs: Any) -> Any:
            self.threads.add(threading.get_ident())
            if name == "close":
                self.closed = True
            return await attr(*args, **kwargs)

        return call


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_snapshot_loaded_apart_reads_its_own_store_off_the_loop_and_answers_the_same(
    backend: str, config: TriBridConfig
) -> None:
    cfg = backend_config(config.graph_store, backend)
    store = open_graph_store(cfg)
    key = await stored_graph(store, seed=17)
    opened: list[_ThreadNoting] = []

    def open_store() -> GraphStore:
        opened.append(_ThreadNoting(open_graph_store(cfg)))
        return cast(GraphStore, opened[-1])

    try:
        here = await GraphSnapshot.load(store, key)
        apart = await load_apart(open_store, key, store, 0)
        assert len(opened) == 1 and opened[0].closed
        assert opened[0].threads and threading.get_ident() not in opened[0].threads
        ids = [f"e{i:03d}" for i in range(80)]
        for direction in DIRECTIONS:
            args = (key, ids[::7], 3, ALL_REL_TYPES)
            want = await here.traverse(*args, direction=direction, limit=100)
            assert want and await apart.traverse(*args, direction=direction, limit=100) == want
        for terms in (["parse"], ["rendr", "walk"]):
            want_seeds = await here.find_seeds(key, terms, ALL_ENTITY_TYPES, 20, fuzzy=True)
            assert (
                want_seeds
                and await apart.find_seeds(key, terms, ALL_ENTITY_TYPES, 20, fuzzy=True) == want_seeds
            )
        # a load that fails is the awaiting caller's error
        with pytest.raises(Exception, match=r"127\.0\.0\.1:1\b"):
            broken = cfg.model_copy(update={"falkordb_port": 1, "neo4j_uri": "bolt://127.0.0.1:1"})
            await load_apart(lambda: open_graph_store(broken), key, store, 0)
    finally:
        await store.delete_corpus(key)
        await store.close()
