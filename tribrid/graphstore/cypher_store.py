"""GraphStore logic shared by the Cypher backends; an adapter only supplies `_run` and a Dialect."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tribrid.config import ENTITY_TYPES, RELATIONSHIP_TYPES
from tribrid.graphstore import cypher
from tribrid.graphstore.base import (
    NO_COMMUNITY,
    Direction,
    GraphPath,
    Neighbour,
    TraversalHit,
    check_corpus_id,
    check_direction,
    check_entity,
    check_entity_types,
    check_max_hops,
    check_relationship_types,
    clean_strings,
    corpus_of_key,
)
from tribrid.graphstore.cypher import Dialect
from tribrid.models import Entity, EntityHit, Relation

Row = dict[str, Any]


@dataclass(frozen=True, slots=True)
class _Route:
    """How a traversal first reached an entity."""

    hops: int
    seed_rank: int
    seed_id: str
    relationship_types: tuple[str, ...]
    path: tuple[str, ...]

    def sort_key(self) -> tuple[int, tuple[str, ...], tuple[str, ...]]:
        return (self.seed_rank, self.relationship_types, self.path)


# Fulltext candidates fetched per term before classifying them (exact / prefix / fuzzy).
_FULLTEXT_CANDIDATES = 60  # exact matches come from indexed lookups; these only add prefix and fuzzy ones
# Frontier nodes expanded per neighbour query in a traversal (it stops once `limit` are reached).
_EXPAND_BATCH = 16
# Fuzzy (one edit) fulltext matching only for terms at least this long: shorter ones match noise.
_FUZZY_MIN_LEN = 5


def _batches(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _entity_row(key: str, entity: Entity) -> Row:
    return {
        "id": entity.entity_id,
        "corpus_id": key,  # the generation's key: it partitions a shared database (Neo4j)
        "type": entity.type,
        "name": entity.name,
        "qualified_name": entity.qualified_name,
        "file_path": entity.file_path,
        "start_line": entity.start_line,
        "end_line": entity.end_line,
        "chunk_id": entity.chunk_id,
        "name_lower": entity.name.lower(),
        "qname_lower": entity.qualified_name.lower(),
        "unresolved": list(entity.unresolved),
    }


def _entity_from_row(row: Row) -> Entity:
    return Entity(
        entity_id=str(row["id"]),
        corpus_id=corpus_of_key(str(row["corpus_id"])),
        type=str(row["type"]),
        name=str(row["name"]),
        qualified_name=str(row["qualified_name"]),
        file_path=str(row["file_path"]),
        start_line=int(row["start_line"]),
        end_line=int(row["end_line"]),
        chunk_id=str(row["chunk_id"]),
        unresolved=tuple(row.get("unresolved") or ()),
    )


def _cap_fanout(
    rows: Sequence[Row], max_fanout: int, seen: Mapping[str, object]
) -> list[tuple[str, str, str]]:
    """(source, label, target) of one breadth-first step, at most `max_fanout` per source
    (0 = all): the first by (target id, label) among targets not in `seen`, so a dense node cannot
    blow up the next hop and the choice is deterministic. Done here rather than in Cypher, where
    FalkorDB took 0.5-3 s for the ORDER BY + collect + slice that the plain step does in ~10 ms."""
    by_source: dict[str, list[tuple[str, str]]] = {}
    for row in rows:
        target = str(row["target_id"])
        if target not in seen:
            by_source.setdefault(str(row["source_id"]), []).append((target, str(row["label"])))
    capped: list[tuple[str, str, str]] = []
    for source in sorted(by_source):
        pairs = sorted(set(by_source[source]))
        capped.extend(
            (source, label, target) for target, label in (pairs[:max_fanout] if max_fanout > 0 else pairs)
        )
    return capped


class CypherGraphStore(ABC):
    """Implements GraphStore with the shared Cypher in `cypher`; subclasses connect and run it."""

    dialect: Dialect

    def __init__(self, batch_size: int) -> None:
        self._batch_size = batch_size
        self._schema_ready: set[str] = set()

    @abstractmethod
    async def _run(self, corpus_id: str, query: str, params: Row, *, write: bool) -> list[Row]:
        """Run one query for the corpus and return its rows as column-name dicts."""

    @abstractmethod
    async def ping(self) -> None: ...

    @abstractmethod
    async def close(self) -> None: ...

    async def _write(self, corpus_id: str, query: str, **params: Any) -> list[Row]:
        return await self._run(corpus_id, query, {"corpus_id": corpus_id, **params}, write=True)

    async def _read(self, corpus_id: str, query: str, **params: Any) -> list[Row]:
        return await self._run(corpus_id, query, {"corpus_id": corpus_id, **params}, write=False)

    # --- schema -------------------------------------------------------------------------------

    async def ensure_schema(self, corpus_id: str) -> None:
        check_corpus_id(corpus_id)
        for statement in self.dialect.schema_statements:
            try:
                await self._run(corpus_id, statement, {}, write=True)
            except Exception as exc:
                if not self.dialect.is_existing_index_error(exc):
                    raise
        self._schema_ready.add(corpus_id)

    async def _ensure_schema_once(self, corpus_id: str) -> None:
        # Writers call this so MERGE never runs unindexed, even if the caller forgot ensure_schema.
        if corpus_id not in self._schema_ready:
            await self.ensure_schema(corpus_id)

    # --- writes -------------------------------------------------------------------------------

    async def upsert_entities(self, corpus_id: str, entities: Sequence[Entity]) -> int:
        check_corpus_id(corpus_id)
        for entity in entities:
            check_entity(corpus_id, entity)
        if not entities:
            return 0
        await self._ensure_schema_once(corpus_id)
        written = 0
        for batch in _batches(entities, self._batch_size):
            rows = await self._write(
                corpus_id, cypher.UPSERT_ENTITIES, rows=[_entity_row(corpus_id, e) for e in batch]
            )
            written += int(rows[0]["written"]) if rows else 0
        return written

    async def upsert_relations(self, corpus_id: str, relations: Sequence[Relation]) -> int:
        check_corpus_id(corpus_id)
        check_relationship_types([r.type for r in relations])
        if not relations:
            return 0
        await self._ensure_schema_once(corpus_id)
        written = 0
        for rel_type in RELATIONSHIP_TYPES:  # one query per label: Cypher can't parameterize it
            rows = [{"source": r.source_id, "target": r.target_id} for r in relations if r.type == rel_type]
            query = cypher.upsert_relations(rel_type)
            for batch in _batches(rows, self._batch_size):
                result = await self._write(corpus_id, query, rows=list(batch))
                written += int(result[0]["written"]) if result else 0
        return written

    async def delete_relations(self, corpus_id: str, relations: Sequence[Relation]) -> int:
        check_corpus_id(corpus_id)
        check_relationship_types([r.type for r in relations])
        deleted = 0
        for rel_type in RELATIONSHIP_TYPES:
            rows = [{"source": r.source_id, "target": r.target_id} for r in relations if r.type == rel_type]
            query = cypher.delete_relations(rel_type)
            for batch in _batches(rows, self._batch_size):
                result = await self._write(corpus_id, query, rows=list(batch))
                deleted += int(result[0]["deleted"]) if result else 0
        return deleted

    async def copy_graph(self, source: str, target: str) -> None:
        """Portable copy through the shared Cypher; adapters with a native copy override it."""
        check_corpus_id(source)
        await self.delete_corpus(target)
        await self._ensure_schema_once(target)
        after = ""
        while True:
            rows = await self._read(source, cypher.ALL_ENTITY_ROWS, after=after, batch=self._batch_size)
            if not rows:
                break
            copied = [{**row["row"], "corpus_id": target} for row in rows]
            await self._write(target, cypher.UPSERT_ENTITIES, rows=copied)
            after = str(rows[-1]["id"])
        await self.upsert_relations(target, await self.all_relations(source))

    async def delete_files(self, corpus_id: str, file_paths: Sequence[str]) -> int:
        check_corpus_id(corpus_id)
        paths = clean_strings(file_paths)
        deleted = 0
        for batch in _batches(paths, self._batch_size):
            deleted += await self._delete_in_batches(
                corpus_id, cypher.DELETE_FILE_ENTITIES, file_paths=list(batch)
            )
        return deleted

    async def delete_corpus(self, corpus_id: str) -> None:
        check_corpus_id(corpus_id)
        await self._delete_in_batches(corpus_id, cypher.DELETE_CORPUS_ENTITIES)
        self._schema_ready.discard(corpus_id)

    async def _delete_in_batches(self, corpus_id: str, query: str, **params: Any) -> int:
        total = 0
        while True:
            rows = await self._write(corpus_id, query, batch=self._batch_size, **params)
            deleted = int(rows[0]["deleted"]) if rows else 0
            total += deleted
            if deleted < self._batch_size:
                return total

    # --- reads --------------------------------------------------------------------------------

    async def find_seeds(
        self,
        corpus_id: str,
        terms: Sequence[str],
        entity_types: Sequence[str],
        limit: int,
        *,
        fuzzy: bool = True,
    ) -> list[tuple[Entity, float]]:
        check_corpus_id(corpus_id)
        types = check_entity_types(entity_types)
        lowered = clean_strings([t.strip().lower() for t in terms])
        if not lowered or not types or limit <= 0:
            return []
        best: dict[str, tuple[Entity, float]] = {}

        def offer(entity: Entity, score: float) -> None:
            current = best.get(entity.entity_id)
            if current is None or score > current[1]:
                best[entity.entity_id] = (entity, score)

        exact_queries = [
            self._read(corpus_id, query, terms=lowered, entity_types=types)
            for query in (cypher.FIND_EXACT_BY_NAME, cypher.FIND_EXACT_BY_QNAME)
        ]
        # Dotted terms are qualified names: exact lookups only (their last part is a term too).
        words = [t for t in lowered if "." not in t]
        fulltext = self.dialect.fulltext_query()
        fulltext_queries = [
            self._read(
                corpus_id,
                fulltext,
                q=self.dialect.fulltext_text(word, fuzzy=fuzzy and len(word) >= _FUZZY_MIN_LEN),
                entity_types=types,
                limit=_FULLTEXT_CANDIDATES,
            )
            for word in words
        ]
        results = await asyncio.gather(*exact_queries, *fulltext_queries)
        for rows in results:
            for row in rows:
                entity = _entity_from_row(row)
                offer(entity, _seed_score(entity, lowered))
        ranked = sorted(best.values(), key=lambda pair: (-pair[1], pair[0].entity_id))
        return ranked[:limit]

    async def expand(
        self,
        corpus_id: str,
        seed_ids: Sequence[str],
        max_hops: int,
        relationship_types: Sequence[str],
        limit: int,
    ) -> list[EntityHit]:
        hits = await self.traverse(
            corpus_id, sorted(clean_strings(seed_ids)), max_hops, relationship_types, limit=limit
        )
        return [EntityHit(h.entity, h.hops, h.seed_id, h.relationship_types) for h in hits]

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
        check_corpus_id(corpus_id)
        check_max_hops(max_hops)
        check_direction(direction)
        rel_types = check_relationship_types(relationship_types)
        seeds = clean_strings(seed_ids)
        if not seeds or not rel_types or limit <= 0:
            return []
        routes, paths = await self._breadth_first(
            corpus_id, seeds, max_hops, rel_types, limit, direction, max_fanout
        )
        ranked = sorted(
            (route.hops, route.sort_key(), entity_id) for entity_id, route in routes.items() if route.hops > 0
        )
        # the best routes make the cut; hits are listed by hops, then id
        chosen = [entity_id for _, _, entity_id in sorted(ranked[:limit], key=lambda r: (r[0], r[2]))]
        entities = {e.entity_id: e for e in await self.get_entities(corpus_id, chosen, with_unresolved=False)}
        return [
            TraversalHit(
                entities[eid],
                routes[eid].hops,
                routes[eid].seed_id,
                routes[eid].relationship_types,
                routes[eid].path,
                paths[eid],
            )
            for eid in chosen
            if eid in entities
        ]

    async def _breadth_first(
        self,
        corpus_id: str,
        seeds: list[str],
        max_hops: int,
        rel_types: list[str],
        limit: int,
        direction: Direction = "both",
        max_fanout: int = 0,
        stop_at: str | None = None,
    ) -> tuple[dict[str, _Route], dict[str, int]]:
        """Multi-source BFS: exact minimum hops, and shortest-path counts through what it expanded.

        Each hop expands its frontier best route first (seed rank, relation types, path), in
        batches, and stops as soon as `limit` entities are reached: the rest of a dense hop would
        only be fetched and parsed to be cut (a hop-2 frontier of ~100 nodes can return 2,000+
        rows when ~20 more entities are wanted).
        """
        routes = {seed: _Route(0, rank, seed, (), (seed,)) for rank, seed in enumerate(seeds)}
        paths = dict.fromkeys(seeds, 1)
        query = cypher.neighbours(rel_types, direction)
        frontier = list(seeds)
        batch_size = self._batch_size if stop_at is not None else _EXPAND_BATCH
        for hop in range(1, max_hops + 1):
            found: dict[str, _Route] = {}
            seen_edges: set[tuple[str, str, str]] = set()
            for batch in _batches(frontier, batch_size):
                if len(routes) + len(found) - len(seeds) >= limit:
                    break
                rows = await self._read(corpus_id, query, ids=list(batch))
                for source, label, target in _cap_fanout(rows, max_fanout, routes):
                    if target in routes or (source, label, target) in seen_edges:
                        continue
                    seen_edges.add((source, label, target))
                    via = routes[source]
                    step = cypher.REL_TYPES_BY_LABEL[label]
                    route = _Route(
                        hop, via.seed_rank, via.seed_id, (*via.relationship_types, step), (*via.path, target)
                    )
                    paths[target] = paths.get(target, 0) + paths[source]
                    best = found.get(target)
                    if best is None or route.sort_key() < best.sort_key():
                        found[target] = route
            routes.update(found)
            frontier = sorted(found, key=lambda target: (found[target].sort_key(), target))
            # Later hops rank after this one, so once `limit` hits exist the rest can't make the cut.
            if not frontier or len(routes) - len(seeds) >= limit or stop_at in found:
                break
        return routes, paths

    async def neighbors(
        self,
        corpus_id: str,
        entity_id: str,
        relationship_types: Sequence[str],
        direction: Direction,
        limit: int,
    ) -> list[Neighbour]:
        check_corpus_id(corpus_id)
        check_direction(direction)
        rel_types = check_relationship_types(relationship_types)
        if not rel_types or limit <= 0 or not clean_strings([entity_id]):
            return []
        sides: list[Direction] = ["out", "in"] if direction == "both" else [direction]
        found: list[tuple[str, str, str]] = []
        for side in sides:
            query = cypher.neighbours(rel_types, side)
            rows = await self._read(corpus_id, query, ids=[entity_id])
            for _source, label, target in _cap_fanout(rows, limit, {}):
                found.append((side, cypher.REL_TYPES_BY_LABEL[label], target))
        found.sort(key=lambda item: (item[0] != "out", item[1], item[2]))
        found = found[:limit]
        entities = {e.entity_id: e for e in await self.get_entities(corpus_id, [t for _, _, t in found])}
        return [
            Neighbour(entities[target], rel_type, "out" if side == "out" else "in")
            for side, rel_type, target in found
            if target in entities
        ]

    async def shortest_path(
        self, corpus_id: str, source_id: str, target_id: str, max_hops: int, relationship_types: Sequence[str]
    ) -> GraphPath | None:
        check_corpus_id(corpus_id)
        check_max_hops(max_hops)
        rel_types = check_relationship_types(relationship_types)
        if not await self.get_entities(corpus_id, [source_id]) or not rel_types:
            return None
        if source_id == target_id:
            return GraphPath((source_id,), ())
        # Hop by hop until the target's hop: its route is then final (ties settled within the hop).
        routes, _ = await self._breadth_first(
            corpus_id, [source_id], max_hops, rel_types, limit=2**62, stop_at=target_id
        )
        route = routes.get(target_id)
        return GraphPath(route.path, route.relationship_types) if route is not None else None

    async def get_entities(
        self, corpus_id: str, entity_ids: Sequence[str], *, with_unresolved: bool = True
    ) -> list[Entity]:
        check_corpus_id(corpus_id)
        ids = clean_strings(entity_ids)
        query = cypher.GET_ENTITIES if with_unresolved else cypher.GET_ENTITY_FIELDS
        found: dict[str, Entity] = {}
        for batch in _batches(ids, self._batch_size):
            for row in await self._read(corpus_id, query, ids=list(batch)):
                entity = _entity_from_row(row)
                found[entity.entity_id] = entity
        return [found[eid] for eid in ids if eid in found]

    async def entities_by_chunks(self, corpus_id: str, chunk_ids: Sequence[str]) -> list[Entity]:
        check_corpus_id(corpus_id)
        found: dict[str, Entity] = {}
        for batch in _batches(clean_strings(chunk_ids), self._batch_size):
            for row in await self._read(corpus_id, cypher.ENTITIES_BY_CHUNKS, chunk_ids=list(batch)):
                entity = _entity_from_row(row)
                found[entity.entity_id] = entity
        return [found[eid] for eid in sorted(found)]

    async def find_by_qualified_name(self, corpus_id: str, qualified_name: str) -> list[Entity]:
        check_corpus_id(corpus_id)
        if not clean_strings([qualified_name]):
            return []
        rows = await self._read(
            corpus_id,
            cypher.FIND_BY_QNAME,
            qname_lower=qualified_name.lower(),
            qualified_name=qualified_name,
        )
        return sorted((_entity_from_row(row) for row in rows), key=lambda e: e.entity_id)

    async def entity_ids(self, corpus_id: str) -> list[str]:
        check_corpus_id(corpus_id)
        ids: list[str] = []
        after = ""
        while True:
            rows = await self._read(corpus_id, cypher.ENTITY_IDS, after=after, batch=self._batch_size)
            ids.extend(str(row["id"]) for row in rows)
            if len(rows) < self._batch_size:
                return ids
            after = ids[-1]

    async def unresolved_refs(self, corpus_id: str) -> dict[str, tuple[str, ...]]:
        check_corpus_id(corpus_id)
        found: dict[str, tuple[str, ...]] = {}
        after = ""
        while True:
            rows = await self._read(corpus_id, cypher.UNRESOLVED_REFS, after=after, batch=self._batch_size)
            found.update((str(row["id"]), tuple(row["unresolved"])) for row in rows)
            if len(rows) < self._batch_size:
                return found
            after = str(rows[-1]["id"])

    async def set_communities(self, corpus_id: str, membership: Mapping[str, int]) -> int:
        check_corpus_id(corpus_id)
        rows = [
            {"id": eid, "community": int(c)} for eid, c in sorted(membership.items()) if "\x00" not in eid
        ]
        written = 0
        for batch in _batches(rows, self._batch_size):
            result = await self._write(corpus_id, cypher.SET_COMMUNITIES, rows=list(batch))
            written += int(result[0]["written"]) if result else 0
        return written

    async def community_of(self, corpus_id: str, entity_ids: Sequence[str]) -> dict[str, int]:
        check_corpus_id(corpus_id)
        found: dict[str, int] = {}
        for batch in _batches(clean_strings(entity_ids), self._batch_size):
            for row in await self._read(corpus_id, cypher.COMMUNITY_OF, ids=list(batch)):
                community = row["community"]
                if community is not None and int(community) != NO_COMMUNITY:
                    found[str(row["id"])] = int(community)
        return found

    async def community_count(self, corpus_id: str) -> int:
        check_corpus_id(corpus_id)
        rows = await self._read(corpus_id, cypher.COUNT_COMMUNITIES)
        return int(rows[0]["n"]) if rows else 0

    async def all_relations(self, corpus_id: str) -> list[Relation]:
        check_corpus_id(corpus_id)
        relations = [
            Relation(str(row["source"]), str(row["target"]), cypher.REL_TYPES_BY_LABEL[str(row["label"])])
            for row in await self._read(corpus_id, cypher.ALL_RELATIONS)
            if str(row["label"]) in cypher.REL_TYPES_BY_LABEL
        ]
        return sorted(relations, key=lambda r: (r.source_id, r.type, r.target_id))

    async def counts(self, corpus_id: str) -> dict[str, int]:
        check_corpus_id(corpus_id)
        result: dict[str, int] = {"entities": 0, "relationships": 0}
        result.update({f"entities.{t}": 0 for t in ENTITY_TYPES})
        result.update({f"relationships.{t}": 0 for t in RELATIONSHIP_TYPES})
        for row in await self._read(corpus_id, cypher.COUNT_ENTITIES):
            result[f"entities.{row['type']}"] = int(row["n"])
            result["entities"] += int(row["n"])
        for row in await self._read(corpus_id, cypher.COUNT_RELATIONSHIPS):
            label = str(row["type"])
            result[f"relationships.{cypher.REL_TYPES_BY_LABEL.get(label, label.lower())}"] = int(row["n"])
            result["relationships"] += int(row["n"])
        return result


def _seed_score(entity: Entity, terms: Sequence[str]) -> float:
    """The best match class of an entity over the (lower-cased) terms; see GraphStore.find_seeds."""
    name, qname = entity.name.lower(), entity.qualified_name.lower()
    if name in terms or qname in terms:
        return cypher.EXACT_SCORE
    if any(name.startswith(term) for term in terms):
        return cypher.PREFIX_SCORE
    return cypher.FUZZY_SCORE
