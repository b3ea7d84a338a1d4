"""GraphStore logic shared by the Cypher backends; an adapter only supplies `_run` and a Dialect."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from tribrid.config import ENTITY_TYPES, RELATIONSHIP_TYPES
from tribrid.graphstore import cypher
from tribrid.graphstore.base import (
    check_corpus_id,
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
    seed_id: str
    relationship_types: tuple[str, ...]

    def sort_key(self) -> tuple[str, tuple[str, ...]]:
        return (self.seed_id, self.relationship_types)


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
    )


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
        self, corpus_id: str, terms: Sequence[str], entity_types: Sequence[str], limit: int
    ) -> list[tuple[Entity, float]]:
        check_corpus_id(corpus_id)
        types = check_entity_types(entity_types)
        lowered = clean_strings([t.strip().lower() for t in terms])
        if not lowered or not types or limit <= 0:
            return []
        rows = await self._read(
            corpus_id,
            cypher.FIND_SEEDS,
            terms=lowered,
            entity_types=types,
            limit=limit,
            exact_score=cypher.EXACT_SCORE,
            prefix_score=cypher.PREFIX_SCORE,
            substring_score=cypher.SUBSTRING_SCORE,
        )
        return [(_entity_from_row(row), float(row["score"])) for row in rows]

    async def expand(
        self,
        corpus_id: str,
        seed_ids: Sequence[str],
        max_hops: int,
        relationship_types: Sequence[str],
        limit: int,
    ) -> list[EntityHit]:
        check_corpus_id(corpus_id)
        check_max_hops(max_hops)
        rel_types = check_relationship_types(relationship_types)
        seeds = sorted(clean_strings(seed_ids))
        if not seeds or not rel_types or limit <= 0:
            return []
        routes = await self._breadth_first(corpus_id, seeds, max_hops, rel_types, limit)
        ranked = sorted((route.hops, entity_id) for entity_id, route in routes.items() if route.hops > 0)
        chosen = [entity_id for _, entity_id in ranked[:limit]]
        entities = {e.entity_id: e for e in await self.get_entities(corpus_id, chosen)}
        return [
            EntityHit(entities[eid], routes[eid].hops, routes[eid].seed_id, routes[eid].relationship_types)
            for eid in chosen
            if eid in entities
        ]

    async def _breadth_first(
        self, corpus_id: str, seeds: list[str], max_hops: int, rel_types: list[str], limit: int
    ) -> dict[str, _Route]:
        """Multi-source BFS, one query per hop: exact minimum hops, no path enumeration."""
        routes = {seed: _Route(0, seed, ()) for seed in seeds}
        query = cypher.neighbours(rel_types)
        frontier = seeds
        for hop in range(1, max_hops + 1):
            found: dict[str, _Route] = {}
            for batch in _batches(frontier, self._batch_size):
                for row in await self._read(corpus_id, query, ids=list(batch)):
                    target = str(row["target_id"])
                    if target in routes:
                        continue
                    via = routes[str(row["source_id"])]
                    step = cypher.REL_TYPES_BY_LABEL[str(row["label"])]
                    route = _Route(hop, via.seed_id, (*via.relationship_types, step))
                    best = found.get(target)
                    if best is None or route.sort_key() < best.sort_key():
                        found[target] = route
            routes.update(found)
            frontier = sorted(found)
            # Later hops rank after this one, so once `limit` hits exist the rest can't make the cut.
            if not frontier or len(routes) - len(seeds) >= limit:
                break
        return routes

    async def get_entities(self, corpus_id: str, entity_ids: Sequence[str]) -> list[Entity]:
        check_corpus_id(corpus_id)
        ids = clean_strings(entity_ids)
        found: dict[str, Entity] = {}
        for batch in _batches(ids, self._batch_size):
            for row in await self._read(corpus_id, cypher.GET_ENTITIES, ids=list(batch)):
                entity = _entity_from_row(row)
                found[entity.entity_id] = entity
        return [found[eid] for eid in ids if eid in found]

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
