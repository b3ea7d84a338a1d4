"""One committed graph generation held in memory, answering what a search reads from it.

A committed generation never changes, so a reader can load it once (entities, relations and
communities: a few bulk queries) and then walk it without a round trip per frontier batch or a
parse of every hit's fields, which is where a search's time went. Only fulltext matching stays in
the database (its tokenizing, prefix and fuzzy rules are the index's own): it answers with ids.

Answers are the store's: the same seed ranking (`seeds`) and the same walk
(`traversal.breadth_first`) over the same edges. Load it only for a generation that is no longer
written to: later writes are not seen.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from itertools import chain
from typing import Literal

from cachetools import LRUCache

from tribrid.graphstore import cypher, seeds, traversal
from tribrid.graphstore.base import (
    NO_COMMUNITY,
    Direction,
    GraphStore,
    GraphView,
    TraversalHit,
    check_corpus_id,
    check_direction,
    check_entity_types,
    check_relationship_types,
    clean_strings,
)
from tribrid.models import Entity, Relation

# Adjacency lists kept per snapshot, one per kind of walk (relationship types and direction); a
# search uses the configured kind unless it overrides them.
_MAX_WALKS = 8

# node id -> (neighbour id, relation label) pairs of one kind of walk, sorted
_Adjacency = dict[str, list[tuple[str, str]]]


def _index(entities: Iterable[Entity], key_of: Callable[[Entity], str]) -> dict[str, list[str]]:
    """Lookup key -> ids of the entities with that key."""
    found: dict[str, list[str]] = {}
    for entity in entities:
        found.setdefault(key_of(entity), []).append(entity.entity_id)
    return found


class GraphSnapshot(GraphView):
    """The graph stored under one key, in memory; fulltext matching is asked of `fulltext`."""

    def __init__(
        self,
        key: str,
        entities: Iterable[Entity],
        relations: Iterable[Relation],
        *,
        unresolved: Mapping[str, tuple[str, ...]],
        communities: Mapping[str, int],
        fulltext: GraphView,
        fulltext_cache_terms: int = 0,
    ) -> None:
        self.key = check_corpus_id(key)
        self._fulltext = fulltext
        # (term, entity types, fuzzy) -> the fulltext index's candidate ids: this generation's index
        # never changes, so a term's answer holds; at most `fulltext_cache_terms`, least recently used out.
        self._fulltext_cache: LRUCache[tuple[str, tuple[str, ...], bool], tuple[str, ...]] | None = (
            LRUCache(maxsize=fulltext_cache_terms) if fulltext_cache_terms > 0 else None
        )
        # Entities as searches read them, without their unresolved references (kept apart).
        self._entities = {e.entity_id: replace(e, unresolved=()) for e in entities}
        self._unresolved = {eid: refs for eid, refs in unresolved.items() if eid in self._entities and refs}
        self._communities = {
            eid: c for eid, c in communities.items() if eid in self._entities and c != NO_COMMUNITY
        }
        # the store's indexed exact lookups: lower-cased name and qualified name; chunk id
        self._by_name = _index(self._entities.values(), lambda e: e.name.lower())
        self._by_qname = _index(self._entities.values(), lambda e: e.qualified_name.lower())
        self._by_chunk = _index(self._entities.values(), lambda e: e.chunk_id)
        self._by_alias: dict[str, list[str]] = {}
        for entity in self._entities.values():
            for alias in sorted({alias.lower() for alias in entity.aliases}):
                self._by_alias.setdefault(alias, []).append(entity.entity_id)
        # the relations themselves (with their properties), by source and by target; the walks'
        # adjacency lists are made from them
        self._relations_out: dict[str, list[Relation]] = {}
        self._relations_in: dict[str, list[Relation]] = {}
        self._inferred: dict[tuple[str, str], float] = {}  # inferred edges: (source, target) -> confidence
        # requests choose the kind of walk (31 type sets x 3 directions): the most recently used kept
        self._walks: LRUCache[tuple[tuple[str, ...], Direction], _Adjacency] = LRUCache(maxsize=_MAX_WALKS)
        for relation in sorted(relations, key=lambda r: (r.source_id, r.type, r.target_id)):
            if relation.source_id not in self._entities or relation.target_id not in self._entities:
                continue
            self._relations_out.setdefault(relation.source_id, []).append(relation)
            self._relations_in.setdefault(relation.target_id, []).append(relation)
            if relation.inferred:
                pair = (relation.source_id, relation.target_id)
                self._inferred[pair] = max(relation.confidence, self._inferred.get(pair, 0.0))

    @classmethod
    async def load(cls, store: GraphStore, key: str, *, fulltext_cache_terms: int = 0) -> GraphSnapshot:
        """Read the graph stored under `key`; fulltext questions go on to `store`, and the answers
        for up to `fulltext_cache_terms` terms are kept."""
        ids = await store.entity_ids(key)
        # One read at a time, the relations by batches of their sources: the whole graph's replies
        # at once were the graph service's peak memory (30k chunks: 355 MB, 300 allowed).
        entities = await store.get_entities(key, ids, with_unresolved=False)
        counts = await store.counts(key)
        types = [k.removeprefix("relationships.") for k in counts if k.startswith("relationships.")]
        relations = await store.relations_of(key, ids, types, "out") if types else []
        unresolved = await store.unresolved_refs(key)
        communities = await store.community_of(key, ids)
        return cls(
            key,
            entities,
            relations,
            unresolved=unresolved,
            communities=communities,
            fulltext=store,
            fulltext_cache_terms=fulltext_cache_terms,
        )

    async def inferred_edges(
        self, corpus_id: str, pairs: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], float]:
        self._check(corpus_id)
        return {pair: self._inferred[pair] for pair in pairs if pair in self._inferred}

    async def relations_of(
        self,
        corpus_id: str,
        node_ids: Sequence[str],
        relationship_types: Sequence[str],
        direction: Literal["out", "in"],
    ) -> list[Relation]:
        self._check(corpus_id)
        wanted = set(check_relationship_types(relationship_types))
        side = self._relations_out if check_direction(direction) == "out" else self._relations_in
        found = {
            (r.source_id, r.type, r.target_id): r
            for node in clean_strings(node_ids)
            for r in side.get(node, ())
            if r.type in wanted
        }
        return [found[key] for key in sorted(found)]

    def _check(self, corpus_id: str) -> None:
        if corpus_id != self.key:
            raise ValueError(f"this snapshot holds graph {self.key!r}, not {corpus_id!r}")

    def _with_unresolved(self, entity_id: str) -> Entity:
        entity = self._entities[entity_id]
        refs = self._unresolved.get(entity_id)
        return replace(entity, unresolved=refs) if refs else entity

    async def find_seeds(
        self,
        corpus_id: str,
        terms: Sequence[str],
        entity_types: Sequence[str],
        limit: int,
        *,
        fuzzy: bool = True,
        fulltext: bool = True,
    ) -> list[tuple[Entity, float]]:
        self._check(corpus_id)
        types = check_entity_types(entity_types)
        lowered = seeds.lowered_terms(terms)
        if not lowered or not types or limit <= 0:
            return []
        aliased = set(seeds.aliased_types(types))
        exact = chain.from_iterable(
            chain(
                self._by_name.get(term, ()),
                self._by_qname.get(term, ()),
                (eid for eid in self._by_alias.get(term, ()) if self._entities[eid].type in aliased),
            )
            for term in lowered
        )
        by_term = await self.fulltext_ids_by_term(corpus_id, lowered, types, fuzzy=fuzzy) if fulltext else {}
        matched = chain(exact, chain.from_iterable(by_term.values()))
        wanted = set(types)
        entities = (self._entities[eid] for eid in matched if eid in self._entities)
        return seeds.rank_seeds((e for e in entities if e.type in wanted), lowered, limit)

    async def fulltext_ids_by_term(
        self, corpus_id: str, terms: Sequence[str], entity_types: Sequence[str], *, fuzzy: bool = True
    ) -> dict[str, list[str]]:
        self._check(corpus_id)
        types = tuple(check_entity_types(entity_types))
        words = seeds.fulltext_words(seeds.lowered_terms(terms))
        if not words or not types:
            return {}

        def key(word: str) -> tuple[str, tuple[str, ...], bool]:
            return word, types, fuzzy and len(word) >= seeds.FUZZY_MIN_LEN  # what its query depends on

        cache = self._fulltext_cache
        found: dict[str, list[str]] = {}
        for word in words:
            if cache is not None and (ids := cache.get(key(word))) is not None:
                found[word] = list(ids)  # the caller's own list
        missing = [word for word in words if word not in found]
        if missing:
            asked = await self._fulltext.fulltext_ids_by_term(corpus_id, missing, types, fuzzy=fuzzy)
            for word in missing:
                found[word] = asked.get(word, [])
                if cache is not None:
                    cache[key(word)] = tuple(found[word])
        return found

    async def traverse(
        self,
        corpus_id: str,
        seed_ids: Sequence[str],
        max_hops: int,
        relationship_types: Sequence[str],
        *,
        direction: Direction = "both",
        max_fanout: int = 0,
        limit: int = 1000,
    ) -> list[TraversalHit]:
        self._check(corpus_id)
        walk_of = traversal.checked_walk(seed_ids, max_hops, relationship_types, direction, limit)
        if walk_of is None:
            return []
        sources, rel_types = walk_of
        step = self._neighbour_step(self._adjacency(rel_types, direction), max_fanout)
        walk = await traversal.breadth_first(step, sources, max_hops, limit)
        return traversal.traversal_hits(traversal.chosen_hits(walk, limit), walk, self._entities)

    def _adjacency(self, rel_types: list[str], direction: Direction) -> _Adjacency:
        """Node id -> its (neighbour id, label) pairs over these types and direction, each once and
        sorted: the order `traversal.cap_fanout` picks from. Made once per kind of walk."""
        key = (tuple(rel_types), direction)  # sorted and unique: check_relationship_types
        adjacency = self._walks.get(key)
        if adjacency is None:
            labels = {cypher.relationship_label(t) for t in rel_types}
            sides = {"both": ("out", "in"), "out": ("out",), "in": ("in",)}[direction]
            pairs: dict[str, set[tuple[str, str]]] = {}
            for side in sides:
                by_node = self._relations_out if side == "out" else self._relations_in
                for node, relations in by_node.items():
                    found = pairs.setdefault(node, set())
                    for r in relations:
                        label = cypher.relationship_label(r.type)
                        if label in labels:
                            found.add((r.target_id if side == "out" else r.source_id, label))
            adjacency = {node: sorted(found) for node, found in pairs.items() if found}
            self._walks[key] = adjacency
        return adjacency

    @staticmethod
    def _neighbour_step(adjacency: _Adjacency, max_fanout: int) -> traversal.Step:
        """A breadth-first step over sorted adjacency lists: what the store's step returns,
        without sorting or de-duplicating each time."""

        async def step(ids: list[str], seen: Collection[str]) -> list[traversal.Edge]:
            edges: list[traversal.Edge] = []
            for source in ids:
                kept = 0
                for target, label in adjacency.get(source, ()):
                    if target not in seen:
                        edges.append((source, label, target))
                        kept += 1
                        if kept == max_fanout:  # never true for 0 (no cap)
                            break
            return edges

        return step

    async def get_entities(
        self, corpus_id: str, entity_ids: Sequence[str], *, with_unresolved: bool = True
    ) -> list[Entity]:
        self._check(corpus_id)
        ids = [eid for eid in clean_strings(entity_ids) if eid in self._entities]
        if not with_unresolved:
            return [self._entities[eid] for eid in ids]
        return [self._with_unresolved(eid) for eid in ids]

    async def entities_by_chunks(self, corpus_id: str, chunk_ids: Sequence[str]) -> list[Entity]:
        self._check(corpus_id)
        ids = {eid for chunk_id in clean_strings(chunk_ids) for eid in self._by_chunk.get(chunk_id, ())}
        return [self._with_unresolved(eid) for eid in sorted(ids)]

    async def unresolved_refs(self, corpus_id: str) -> dict[str, tuple[str, ...]]:
        self._check(corpus_id)
        return dict(self._unresolved)

    async def community_of(self, corpus_id: str, entity_ids: Sequence[str]) -> dict[str, int]:
        self._check(corpus_id)
        return {eid: self._communities[eid] for eid in clean_strings(entity_ids) if eid in self._communities}
