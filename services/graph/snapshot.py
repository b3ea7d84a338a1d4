"""One committed graph generation held in memory, answering what a search reads from it.

A committed generation never changes, so a reader can load it once (entities, relations and
communities: a few bulk queries) and then walk it without a round trip per frontier batch or a
parse of every hit's fields, which is where a search's time went. Only fulltext matching stays in
the database (its tokenizing, prefix and fuzzy rules are the index's own): it answers with ids.

It is kept compact, because the graph leg holds it for every corpus it serves (100k chunks:
176k entities, 478k relations). Entities are numbered in id order; relations, walks and lookups
are arrays of those numbers, and a `Relation` is made only when one is asked for.

Answers are the store's: the same seed ranking (`seeds`) and the same walk
(`traversal.breadth_first`) over the same edges. Load it only for a generation that is no longer
written to: later writes are not seen.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from itertools import chain
from typing import Literal, NamedTuple, TypeVar

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

# Entities read at once while loading, with their outgoing relations after them.
_LOAD_BATCH = 4096

# Relations handed out are kept for the next caller, up to this many (~150 bytes each).
_MADE_RELATIONS = 100_000

# A relation's properties: (inferred, confidence, count, strength, similarity, properties).
_Properties = tuple[bool, float, int, float, float, str]
_PLAIN: _Properties = (False, 1.0, 0, 0.0, 0.0, "")

_Shared = TypeVar("_Shared", str, int)


def _properties(relation: Relation) -> _Properties:
    r = relation
    return (r.inferred, r.confidence, r.count, r.strength, r.similarity, r.properties)


class _Walk(NamedTuple):
    """One kind of walk: entity i's (neighbour, label) pairs are at start[i]:start[i + 1] of
    `neighbours` and `labels`, sorted by (neighbour id, label), each pair once."""

    start: array[int]
    neighbours: array[int]  # entity numbers
    labels: array[int]  # indexes into label_names, which are sorted
    label_names: list[str]


class _Graph:
    """Entities numbered in id order, and the relations between them as columns of those numbers
    in (source, type, target) order, indexed by source and by target. Properties are kept once
    per distinct value. Fill it with `add_entities` (in id order) and `add_communities`, then
    `add_unresolved` and `add_relations`, then `seal` it."""

    def __init__(self, ids: Iterable[str]) -> None:
        """`ids`: the ids of the entities to come (an entity's chunk is an entity too)."""
        # entities as searches read them: their unresolved references are kept apart
        self.rows: list[Entity] = []
        self.number: dict[str, int] = {}
        # entity id -> unresolved references, for the entities that have them
        self.unresolved: dict[str, tuple[str, ...]] = {}
        self.communities: array[int] = array("i")  # by entity number; NO_COMMUNITY for none
        # While loading, one object per distinct value (a file path, a type, a called name,
        # a line number): a store's reply holds a copy per entity.
        self._shared: dict[str | int, str | int] = {eid: eid for eid in ids}
        self.sources: array[int] = array("i")
        self.targets: array[int] = array("i")
        self.types: array[int] = array("H")  # indexes into type_names
        self.type_names: list[str] = []
        self._type_index: dict[str, int] = {}
        self.properties: array[int] = array("i")  # indexes into property_values
        self.property_values: list[_Properties] = [_PLAIN]
        self._property_index: dict[_Properties, int] = {_PLAIN: 0}
        # start arrays over entity numbers: relation indexes by source (they are in source order),
        # and by target (in_order lists them in target order)
        self.out_start: array[int] = array("i")
        self.in_start: array[int] = array("i")
        self.in_order: array[int] = array("i")
        self._made: dict[int, Relation] = {}  # relation index -> the Relation handed out

    def add_entities(self, entities: Iterable[Entity]) -> None:
        """The next entities, in id order: an entity's number is its place in that order."""
        share = self._share
        for e in entities:
            eid = share(e.entity_id)
            if self.rows and eid <= self.rows[-1].entity_id:
                raise ValueError(f"entities must come in id order: {eid!r} came late")
            self.number[eid] = len(self.rows)
            entity = replace(
                e,
                entity_id=eid,
                unresolved=(),
                corpus_id=share(e.corpus_id),
                type=share(e.type),
                name=share(e.name),
                file_path=share(e.file_path),
                start_line=share(e.start_line),
                end_line=share(e.end_line),
                chunk_id=share(e.chunk_id),
                aliases=tuple(map(share, e.aliases)),
            )
            self.rows.append(entity)
            self.communities.append(NO_COMMUNITY)

    def add_unresolved(self, unresolved: Mapping[str, tuple[str, ...]]) -> None:
        """Unresolved references of the entities added."""
        for eid, refs in unresolved.items():
            if refs and eid in self.number:
                self.unresolved[self.rows[self.number[eid]].entity_id] = tuple(map(self._share, refs))

    def add_communities(self, communities: Mapping[str, int]) -> None:
        """Community numbers of the entities added."""
        for eid, community in communities.items():
            if (number := self.number.get(eid)) is not None:
                self.communities[number] = community

    def _share(self, value: _Shared) -> _Shared:
        return self._shared.setdefault(value, value)  # type: ignore[return-value]

    def add_relations(self, relations: Iterable[Relation]) -> None:
        """Relations between known entities are kept; the others name no entity of this graph."""
        for r in relations:
            source, target = self.number.get(r.source_id), self.number.get(r.target_id)
            if source is None or target is None:
                continue
            self.sources.append(source)
            self.targets.append(target)
            self.types.append(self._type_index.setdefault(r.type, len(self._type_index)))
            if len(self._type_index) > len(self.type_names):
                self.type_names.append(r.type)
            values = _properties(r)
            self.properties.append(self._property_index.setdefault(values, len(self._property_index)))
            if len(self._property_index) > len(self.property_values):
                self.property_values.append(values)

    def seal(self) -> None:
        """Put the relations in (source, type, target) order and index them."""
        self._shared.clear()
        count, names = len(self.sources), self.type_names

        def key(i: int) -> tuple[int, str, int]:
            return self.sources[i], names[self.types[i]], self.targets[i]

        if any(key(i - 1) > key(i) for i in range(1, count)):  # the store's reads come in order
            order = sorted(range(count), key=key)
            for column in (self.sources, self.targets, self.types, self.properties):
                column[:] = array(column.typecode, (column[i] for i in order))
        self.out_start = _starts(self.sources, len(self.rows))
        self.in_start = _starts(self.targets, len(self.rows))
        # relation indexes by target, each target's in relation order (a counting sort: no list of
        # every index is made)
        self.in_order = array("i", bytes(4 * count))
        place = array("i", self.in_start)
        for i, target in enumerate(self.targets):
            self.in_order[place[target]] = i
            place[target] += 1

    def out_of(self, entity: int) -> range:
        """Indexes of the relations from this entity."""
        return range(self.out_start[entity], self.out_start[entity + 1])

    def into(self, entity: int) -> Sequence[int]:
        """Indexes of the relations to this entity."""
        return self.in_order[self.in_start[entity] : self.in_start[entity + 1]]

    def relation(self, i: int) -> Relation:
        """Relation number i, made once: a walk reads the same few (a seed's mentions) again and
        again, and making one costs about 5 us."""
        made = self._made.get(i)
        if made is None:
            values = self.property_values[self.properties[i]]
            inferred, confidence, count, strength, similarity, properties = values
            made = Relation(
                self.rows[self.sources[i]].entity_id,
                self.rows[self.targets[i]].entity_id,
                self.type_names[self.types[i]],
                inferred=inferred,
                confidence=confidence,
                count=count,
                strength=strength,
                similarity=similarity,
                properties=properties,
            )
            if len(self._made) < _MADE_RELATIONS:
                self._made[i] = made
        return made


def _starts(numbers: array[int], entities: int) -> array[int]:
    """Where each entity number's run begins once the numbers are sorted (and, last, where the
    runs end)."""
    starts = array("i", bytes(4 * (entities + 1)))
    for number in numbers:
        starts[number + 1] += 1
    for i in range(entities):
        starts[i + 1] += starts[i]
    return starts


class _EntitiesById(Mapping[str, Entity]):
    """Entity id -> entity, over the snapshot's numbering (what `traversal.traversal_hits` reads)."""

    def __init__(self, number: Mapping[str, int], rows: Sequence[Entity]) -> None:
        self._number, self._rows = number, rows

    def __getitem__(self, entity_id: str) -> Entity:
        return self._rows[self._number[entity_id]]

    def __contains__(self, entity_id: object) -> bool:
        return entity_id in self._number

    def __iter__(self) -> Iterator[str]:
        return iter(self._number)

    def __len__(self) -> int:
        return len(self._number)


class _HashIndex:
    """Entity numbers by a key of the entity, as two arrays sorted by the key's hash (then by
    number): a lookup bisects the hashes in C and checks the key of each candidate. A dict from
    key to numbers costs ~100 bytes per entity; this costs 12."""

    def __init__(self, rows: Sequence[Entity], key: Callable[[Entity], str]) -> None:
        self._rows, self._key = rows, key
        hashes = array("q", (hash(key(entity)) for entity in rows))
        self._numbers = array("i", sorted(range(len(rows)), key=hashes.__getitem__))
        self._hashes = array("q", (hashes[number] for number in self._numbers))

    def find(self, value: str) -> Iterator[int]:
        """The numbers of the entities whose key is `value`, in number order."""
        hashes, wanted = self._hashes, hash(value)
        at = bisect_left(hashes, wanted)
        while at < len(hashes) and hashes[at] == wanted:
            number = self._numbers[at]
            if self._key(self._rows[number]) == value:  # not another key with the same hash
                yield number
            at += 1


class GraphSnapshot(GraphView):
    """The graph stored under one key, in memory; fulltext matching is asked of `fulltext`."""

    def __init__(
        self,
        key: str,
        graph: _Graph,
        *,
        fulltext: GraphView,
        fulltext_cache_terms: int = 0,
    ) -> None:
        """`graph` is sealed: its entities and relations are final (`load` makes it)."""
        self.key = check_corpus_id(key)
        self._fulltext = fulltext
        # (term, entity types, fuzzy) -> the fulltext index's candidate ids: this generation's index
        # never changes, so a term's answer holds; at most `fulltext_cache_terms`, least recently used out.
        self._fulltext_cache: LRUCache[tuple[str, tuple[str, ...], bool], tuple[str, ...]] | None = (
            LRUCache(maxsize=fulltext_cache_terms) if fulltext_cache_terms > 0 else None
        )
        self._graph = graph
        self._rows, self._number = graph.rows, graph.number
        self._entities = _EntitiesById(self._number, self._rows)
        self._unresolved = graph.unresolved
        self._communities = graph.communities
        # the store's indexed exact lookups: lower-cased name and qualified name; chunk id
        self._by_name = _HashIndex(self._rows, lambda e: e.name.lower())
        self._by_qname = _HashIndex(self._rows, lambda e: e.qualified_name.lower())
        self._by_chunk = _HashIndex(self._rows, lambda e: e.chunk_id)
        self._by_alias: dict[str, list[int]] = {}  # few entities have aliases
        for number, entity in enumerate(self._rows):
            for alias in sorted({alias.lower() for alias in entity.aliases}):
                self._by_alias.setdefault(alias, []).append(number)
        # requests choose the kind of walk (31 type sets x 3 directions): the most recently used kept
        self._walks: LRUCache[tuple[tuple[str, ...], Direction], _Walk] = LRUCache(maxsize=_MAX_WALKS)

    @classmethod
    async def load(
        cls,
        store: GraphStore,
        key: str,
        *,
        fulltext: GraphStore | None = None,
        fulltext_cache_terms: int = 0,
    ) -> GraphSnapshot:
        """Read the graph stored under `key`; fulltext questions go on to `fulltext` (default:
        `store`), and the answers for up to `fulltext_cache_terms` terms are kept."""
        ids = sorted(set(await store.entity_ids(key)))
        graph = _Graph(ids)
        # a batch at a time: a whole graph's replies at once were the graph leg's peak memory
        for batch in traversal.batches(ids, _LOAD_BATCH):
            graph.add_entities(await store.get_entities(key, batch, with_unresolved=False))
            graph.add_communities(await store.community_of(key, batch))
        graph.add_unresolved(await store.unresolved_refs(key))
        counts = await store.counts(key)
        types = [k.removeprefix("relationships.") for k in counts if k.startswith("relationships.")]
        for batch in traversal.batches(ids, _LOAD_BATCH) if types else ():
            graph.add_relations(await store.relations_of(key, batch, types, "out"))
        graph.seal()
        return cls(
            key,
            graph,
            fulltext=store if fulltext is None else fulltext,
            fulltext_cache_terms=fulltext_cache_terms,
        )

    async def inferred_edges(
        self, corpus_id: str, pairs: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], float]:
        self._check(corpus_id)
        graph, found = self._graph, dict[tuple[str, str], float]()
        for pair in pairs:
            source, target = self._number.get(pair[0]), self._number.get(pair[1])
            if source is None or target is None:
                continue
            for i in graph.out_of(source):
                if graph.targets[i] == target:
                    inferred, confidence = graph.property_values[graph.properties[i]][:2]
                    if inferred:
                        found[pair] = max(confidence, found.get(pair, 0.0))
        return found

    async def relations_of(
        self,
        corpus_id: str,
        node_ids: Sequence[str],
        relationship_types: Sequence[str],
        direction: Literal["out", "in"],
    ) -> list[Relation]:
        self._check(corpus_id)
        graph = self._graph
        wanted = {
            graph.type_names.index(t)
            for t in check_relationship_types(relationship_types)
            if t in graph.type_names
        }
        side = graph.out_of if check_direction(direction) == "out" else graph.into
        found = {
            i
            for node in clean_strings(node_ids)
            if (number := self._number.get(node)) is not None
            for i in side(number)
            if graph.types[i] in wanted
        }
        return [graph.relation(i) for i in sorted(found)]  # relation order is (source, type, target)

    def _check(self, corpus_id: str) -> None:
        if corpus_id != self.key:
            raise ValueError(f"this snapshot holds graph {self.key!r}, not {corpus_id!r}")

    def _with_unresolved(self, entity: Entity) -> Entity:
        refs = self._unresolved.get(entity.entity_id)
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
        rows = self._rows
        exact = chain.from_iterable(
            chain(
                self._by_name.find(term),
                self._by_qname.find(term),
                (n for n in self._by_alias.get(term, ()) if rows[n].type in aliased),
            )
            for term in lowered
        )
        by_term = await self.fulltext_ids_by_term(corpus_id, lowered, types, fuzzy=fuzzy) if fulltext else {}
        matched = chain(
            (rows[n] for n in exact),
            (self._entities[eid] for eid in chain.from_iterable(by_term.values()) if eid in self._number),
        )
        wanted = set(types)
        return seeds.rank_seeds((e for e in matched if e.type in wanted), lowered, limit)

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
        step = self._neighbour_step(self._walk(rel_types, direction), max_fanout)
        walk = await traversal.breadth_first(step, sources, max_hops, limit)
        return traversal.traversal_hits(traversal.chosen_hits(walk, limit), walk, self._entities)

    def _walk(self, rel_types: list[str], direction: Direction) -> _Walk:
        """Each entity's (neighbour, label) pairs over these types and direction, each once and
        sorted: the order `traversal.cap_fanout` picks from. Made once per kind of walk."""
        key = (tuple(rel_types), direction)  # sorted and unique: check_relationship_types
        walk = self._walks.get(key)
        if walk is None:
            walk = self._make_walk(rel_types, direction)
            self._walks[key] = walk
        return walk

    def _make_walk(self, rel_types: list[str], direction: Direction) -> _Walk:
        graph = self._graph
        label_names = sorted({cypher.relationship_label(t) for t in rel_types})
        # a relation type's label number, -1 for a type not walked
        label_of_type = [
            label_names.index(name) if (name := cypher.relationship_label(t)) in label_names else -1
            for t in graph.type_names
        ]
        outgoing, incoming = direction in ("out", "both"), direction in ("in", "both")
        width = len(label_names)  # a pair is one int, neighbour * width + label: sorts as the pair does
        start, neighbours, labels = array("i", [0]), array("i"), array("H")
        for number in range(len(self._rows)):
            pairs: set[int] = set()
            if outgoing:
                for i in graph.out_of(number):
                    if (label := label_of_type[graph.types[i]]) >= 0:
                        pairs.add(graph.targets[i] * width + label)
            if incoming:
                for i in graph.into(number):
                    if (label := label_of_type[graph.types[i]]) >= 0:
                        pairs.add(graph.sources[i] * width + label)
            for pair in sorted(pairs):
                neighbour, label = divmod(pair, width)
                neighbours.append(neighbour)
                labels.append(label)
            start.append(len(neighbours))
        return _Walk(start, neighbours, labels, label_names)

    def _neighbour_step(self, walk: _Walk, max_fanout: int) -> traversal.Step:
        """A breadth-first step over sorted adjacency lists: what the store's step returns,
        without sorting or de-duplicating each time."""
        number, rows = self._number, self._rows
        start, neighbours, labels, label_names = walk

        async def step(ids: list[str], seen: Collection[str]) -> list[traversal.Edge]:
            edges: list[traversal.Edge] = []
            for source in ids:
                at = number.get(source)
                if at is None:
                    continue
                kept = 0
                for i in range(start[at], start[at + 1]):
                    target = rows[neighbours[i]].entity_id
                    if target not in seen:
                        edges.append((source, label_names[labels[i]], target))
                        kept += 1
                        if kept == max_fanout:  # never true for 0 (no cap)
                            break
            return edges

        return step

    async def get_entities(
        self, corpus_id: str, entity_ids: Sequence[str], *, with_unresolved: bool = True
    ) -> list[Entity]:
        self._check(corpus_id)
        rows = [self._entities[eid] for eid in clean_strings(entity_ids) if eid in self._number]
        return [self._with_unresolved(e) for e in rows] if with_unresolved else rows

    async def entities_by_chunks(self, corpus_id: str, chunk_ids: Sequence[str]) -> list[Entity]:
        self._check(corpus_id)
        numbers = {n for chunk_id in clean_strings(chunk_ids) for n in self._by_chunk.find(chunk_id)}
        return [self._with_unresolved(self._rows[n]) for n in sorted(numbers)]  # numbers are in id order

    async def unresolved_refs(self, corpus_id: str) -> dict[str, tuple[str, ...]]:
        self._check(corpus_id)
        return dict(self._unresolved)

    async def community_of(self, corpus_id: str, entity_ids: Sequence[str]) -> dict[str, int]:
        self._check(corpus_id)
        found: dict[str, int] = {}
        for eid in clean_strings(entity_ids):
            number = self._number.get(eid)
            if number is not None and (community := self._communities[number]) != NO_COMMUNITY:
                found[eid] = community
        return found
