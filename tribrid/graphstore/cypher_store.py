"""GraphStore logic shared by the Cypher backends; an adapter only supplies `_run` and a Dialect."""

from __future__ import annotations

import asyncio
import sys
from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Literal

from tribrid.graphstore import cypher, seeds, traversal
from tribrid.graphstore.base import (
    NO_COMMUNITY,
    CypherRejected,
    CypherResult,
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
from tribrid.graphstore.traversal import batches
from tribrid.models import Entity, Relation

Row = dict[str, Any]


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
        "aliases": list(entity.aliases),
        "aliases_lower": [alias.lower() for alias in entity.aliases],
        "aliases_text": " | ".join(entity.aliases),
        "properties": entity.properties,
        "imported": entity.imported,
    }


def relation_properties(relation: Relation) -> Row:
    """The properties a relation stores: only those set (a code edge stores none)."""
    props: Row = {}
    if relation.inferred:
        props["inferred"] = True
        props["confidence"] = relation.confidence
    if relation.count:
        props["count"] = relation.count
    if relation.strength:
        props["strength"] = relation.strength
    if relation.similarity:
        props["similarity"] = relation.similarity
    if relation.properties:
        props["properties"] = relation.properties
    return props


def relation_from_row(source: str, label: str, target: str, props: Mapping[str, Any] | None) -> Relation:
    props = props or {}
    inferred = bool(props.get("inferred", False))
    return Relation(
        # interned, as entity ids are (_entity_from_row): a graph read in whole holds each id once,
        # not once per relation end
        sys.intern(source),
        sys.intern(target),
        cypher.relationship_type(label),
        inferred=inferred,
        confidence=float(props["confidence"]) if inferred else 1.0,
        count=int(props.get("count", 0)),
        strength=float(props.get("strength", 0.0)),
        similarity=float(props.get("similarity", 0.0)),
        properties=str(props.get("properties", "")),
    )


def _entity_from_row(row: Row) -> Entity:
    return Entity(
        entity_id=sys.intern(str(row["id"])),
        corpus_id=corpus_of_key(str(row["corpus_id"])),
        type=str(row["type"]),
        name=str(row["name"]),
        qualified_name=str(row["qualified_name"]),
        file_path=str(row["file_path"]),
        start_line=int(row["start_line"]),
        end_line=int(row["end_line"]),
        chunk_id=str(row["chunk_id"]),
        unresolved=tuple(row.get("unresolved") or ()),
        aliases=tuple(row.get("aliases") or ()),
        properties=str(row.get("properties") or ""),
        imported=bool(row.get("imported") or False),
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
    async def _run_read_only(
        self, corpus_id: str, query: str, params: Row, *, max_rows: int, timeout_ms: int
    ) -> CypherResult:
        """Run an operator's query in the database's read-only mode, time-limited (see cypher_query)."""

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
        rows = [_entity_row(corpus_id, e) for e in entities]
        return await self._upsert_entity_rows(corpus_id, rows)

    async def _upsert_entity_rows(self, corpus_id: str, rows: Sequence[Row]) -> int:
        written = 0
        for entity_type in check_entity_types([str(row["type"]) for row in rows]):
            # one query per type: its label is query text
            query = cypher.upsert_entities(entity_type)
            of_type = [row for row in rows if row["type"] == entity_type]
            for batch in batches(of_type, self._batch_size):
                result = await self._write(corpus_id, query, rows=list(batch))
                written += int(result[0]["written"]) if result else 0
        return written

    async def upsert_relations(self, corpus_id: str, relations: Sequence[Relation]) -> int:
        check_corpus_id(corpus_id)
        rel_types = check_relationship_types([r.type for r in relations])
        if not relations:
            return 0
        await self._ensure_schema_once(corpus_id)
        written = 0
        for rel_type in rel_types:  # one query per label: Cypher can't parameterize it
            rows = [
                {"source": r.source_id, "target": r.target_id, "props": relation_properties(r)}
                for r in relations
                if r.type == rel_type
            ]
            query = cypher.upsert_relations(rel_type)
            for batch in batches(rows, self._batch_size):
                result = await self._write(corpus_id, query, rows=list(batch))
                written += int(result[0]["written"]) if result else 0
        return written

    async def delete_relations(self, corpus_id: str, relations: Sequence[Relation]) -> int:
        check_corpus_id(corpus_id)
        rel_types = check_relationship_types([r.type for r in relations])
        deleted = 0
        for rel_type in rel_types:
            rows = [{"source": r.source_id, "target": r.target_id} for r in relations if r.type == rel_type]
            query = cypher.delete_relations(rel_type)
            for batch in batches(rows, self._batch_size):
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
            await self._upsert_entity_rows(target, copied)
            after = str(rows[-1]["id"])
        await self.upsert_relations(target, await self.all_relations(source))

    async def delete_files(self, corpus_id: str, file_paths: Sequence[str]) -> int:
        check_corpus_id(corpus_id)
        paths = clean_strings(file_paths)
        deleted = 0
        for batch in batches(paths, self._batch_size):
            deleted += await self._delete_in_batches(
                corpus_id, cypher.DELETE_FILE_ENTITIES, file_paths=list(batch)
            )
        return deleted

    async def delete_entities(self, corpus_id: str, entity_ids: Sequence[str]) -> int:
        check_corpus_id(corpus_id)
        deleted = 0
        for batch in batches(clean_strings(entity_ids), self._batch_size):
            rows = await self._write(corpus_id, cypher.DELETE_ENTITIES, ids=list(batch))
            deleted += int(rows[0]["deleted"]) if rows else 0
        return deleted

    async def entities_in_files(self, corpus_id: str, file_paths: Sequence[str]) -> list[Entity]:
        check_corpus_id(corpus_id)
        paths = [path for path in dict.fromkeys(file_paths) if "\x00" not in path and path]
        found: dict[str, Entity] = {}
        if "" in file_paths:
            for row in await self._read(corpus_id, cypher.FREE_ENTITIES):
                entity = _entity_from_row(row)
                found[entity.entity_id] = entity
        for batch in batches(paths, self._batch_size):
            for row in await self._read(corpus_id, cypher.ENTITIES_IN_FILES, file_paths=list(batch)):
                entity = _entity_from_row(row)
                found[entity.entity_id] = entity
        return [found[eid] for eid in sorted(found)]

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
        fulltext: bool = True,
    ) -> list[tuple[Entity, float]]:
        check_corpus_id(corpus_id)
        types = check_entity_types(entity_types)
        lowered = seeds.lowered_terms(terms)
        if not lowered or not types or limit <= 0:
            return []
        queries = [
            self._read(corpus_id, query, terms=lowered, entity_types=types)
            for query in (cypher.FIND_EXACT_BY_NAME, cypher.FIND_EXACT_BY_QNAME)
        ]
        queries += [
            self._read(corpus_id, cypher.find_exact_by_alias(entity_type), terms=lowered)
            for entity_type in seeds.aliased_types(types)
        ]
        words = seeds.fulltext_words(lowered) if fulltext else []
        if words:
            queries.append(self._fulltext(corpus_id, cypher.ENTITY_FIELDS, words, types, fuzzy=fuzzy))
        rows = [row for result in await asyncio.gather(*queries) for row in result]
        return seeds.rank_seeds(map(_entity_from_row, rows), lowered, limit)

    async def fulltext_ids_by_term(
        self, corpus_id: str, terms: Sequence[str], entity_types: Sequence[str], *, fuzzy: bool = True
    ) -> dict[str, list[str]]:
        check_corpus_id(corpus_id)
        types = check_entity_types(entity_types)
        words = seeds.fulltext_words(seeds.lowered_terms(terms))
        if not words or not types:
            return {}
        word_of = dict(zip(self._fulltext_texts(words, fuzzy=fuzzy), words, strict=True))
        rows = await self._fulltext(corpus_id, "q AS text, e.id AS id", words, types, fuzzy=fuzzy)
        found: dict[str, list[str]] = {word: [] for word in words}
        for row in rows:
            found[word_of[str(row["text"])]].append(str(row["id"]))
        return {word: sorted(ids) for word, ids in found.items()}

    def _fulltext_texts(self, words: Sequence[str], *, fuzzy: bool) -> list[str]:
        """Each word as a fulltext query: a prefix, or with `fuzzy` a prefix or one edit away."""
        min_len = seeds.FUZZY_MIN_LEN
        return [self.dialect.fulltext_text(word, fuzzy=fuzzy and len(word) >= min_len) for word in words]

    async def _fulltext(
        self, corpus_id: str, columns: str, words: list[str], types: list[str], *, fuzzy: bool
    ) -> list[Row]:
        """One query for every word: its first FULLTEXT_CANDIDATES fulltext hits each."""
        return await self._read(
            corpus_id,
            self.dialect.fulltext_query(columns),
            queries=self._fulltext_texts(words, fuzzy=fuzzy),
            entity_types=types,
            limit=seeds.FULLTEXT_CANDIDATES,
        )

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
        walk_of = traversal.checked_walk(seed_ids, max_hops, relationship_types, direction, limit)
        if walk_of is None:
            return []
        sources, rel_types = walk_of
        step = self._neighbour_step(corpus_id, rel_types, direction, max_fanout)
        walk = await traversal.breadth_first(step, sources, max_hops, limit)
        chosen = traversal.chosen_hits(walk, limit)
        entities = {e.entity_id: e for e in await self.get_entities(corpus_id, chosen, with_unresolved=False)}
        return traversal.traversal_hits(chosen, walk, entities)

    def _neighbour_step(
        self, corpus_id: str, rel_types: list[str], direction: Direction, max_fanout: int
    ) -> traversal.Step:
        """A breadth-first step as one `cypher.neighbours` query."""
        query = cypher.neighbours(rel_types, direction)

        async def step(ids: list[str], seen: Collection[str]) -> list[traversal.Edge]:
            rows = await self._read(corpus_id, query, ids=ids)
            edges = ((str(row["source_id"]), str(row["label"]), str(row["target_id"])) for row in rows)
            return traversal.cap_fanout(edges, max_fanout, seen)

        return step

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
            for _source, label, target in await self._neighbour_step(corpus_id, rel_types, side, limit)(
                [entity_id], ()
            ):
                found.append((side, cypher.relationship_type(label), target))
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
        step = self._neighbour_step(corpus_id, rel_types, "both", 0)
        walk = await traversal.breadth_first(
            step, [source_id], max_hops, limit=2**62, stop_at=target_id, batch_size=self._batch_size
        )
        if target_id not in walk:
            return None
        route = walk.route(target_id)
        return GraphPath(route.path, route.relationship_types)

    async def get_entities(
        self, corpus_id: str, entity_ids: Sequence[str], *, with_unresolved: bool = True
    ) -> list[Entity]:
        check_corpus_id(corpus_id)
        ids = clean_strings(entity_ids)
        query = cypher.GET_ENTITIES if with_unresolved else cypher.GET_ENTITY_FIELDS
        found: dict[str, Entity] = {}
        for batch in batches(ids, self._batch_size):
            for row in await self._read(corpus_id, query, ids=list(batch)):
                entity = _entity_from_row(row)
                found[entity.entity_id] = entity
        return [found[eid] for eid in ids if eid in found]

    async def entities_by_chunks(self, corpus_id: str, chunk_ids: Sequence[str]) -> list[Entity]:
        check_corpus_id(corpus_id)
        found: dict[str, Entity] = {}
        for batch in batches(clean_strings(chunk_ids), self._batch_size):
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

    async def find_by_name(self, corpus_id: str, name: str) -> list[Entity]:
        check_corpus_id(corpus_id)
        if not clean_strings([name]):
            return []
        found = {
            str(row["id"]): _entity_from_row(row)
            for query in (cypher.FIND_BY_NAME, cypher.FIND_BY_ALIAS)
            for row in await self._read(corpus_id, query, name_lower=name.lower())
        }
        return [found[eid] for eid in sorted(found)]

    async def most_mentioned(self, corpus_id: str, limit: int) -> list[tuple[str, int]]:
        check_corpus_id(corpus_id)
        if limit <= 0:
            return []
        rows = await self._read(corpus_id, cypher.MOST_MENTIONED, limit=limit)
        return [(str(row["id"]), int(row["chunks"])) for row in rows]

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
        for batch in batches(rows, self._batch_size):
            result = await self._write(corpus_id, cypher.SET_COMMUNITIES, rows=list(batch))
            written += int(result[0]["written"]) if result else 0
        return written

    async def community_of(self, corpus_id: str, entity_ids: Sequence[str]) -> dict[str, int]:
        check_corpus_id(corpus_id)
        found: dict[str, int] = {}
        for batch in batches(clean_strings(entity_ids), self._batch_size):
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
            relation_from_row(str(row["source"]), str(row["label"]), str(row["target"]), row["props"])
            for row in await self._read(corpus_id, cypher.ALL_RELATIONS)
        ]
        return sorted(relations, key=lambda r: (r.source_id, r.type, r.target_id))

    async def relations_of(
        self,
        corpus_id: str,
        node_ids: Sequence[str],
        relationship_types: Sequence[str],
        direction: Literal["out", "in"],
    ) -> list[Relation]:
        check_corpus_id(corpus_id)
        rel_types = check_relationship_types(relationship_types)
        ids = clean_strings(node_ids)
        if not rel_types or not ids:
            return []
        query = cypher.neighbours(rel_types, check_direction(direction), with_properties=True)
        found: list[Relation] = []
        for batch in batches(ids, self._batch_size):
            for row in await self._read(corpus_id, query, ids=list(batch)):
                near, far = str(row["source_id"]), str(row["target_id"])
                source, target = (near, far) if direction == "out" else (far, near)
                found.append(relation_from_row(source, str(row["label"]), target, row["props"]))
        return sorted(found, key=lambda r: (r.source_id, r.type, r.target_id))

    async def inferred_edges(
        self, corpus_id: str, pairs: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], float]:
        check_corpus_id(corpus_id)
        wanted = sorted({(str(a), str(b)) for a, b in pairs})
        if not wanted:
            return {}
        rows = await self._read(corpus_id, cypher.INFERRED_EDGES, pairs=[list(p) for p in wanted])
        return {(str(row["source"]), str(row["target"])): float(row["confidence"]) for row in rows}

    async def cypher_query(
        self, corpus_id: str, query: str, parameters: Mapping[str, object], *, max_rows: int, timeout_ms: int
    ) -> CypherResult:
        check_corpus_id(corpus_id)
        reason = cypher.write_clause(query, self.dialect.read_procedures)
        if reason is not None:
            raise CypherRejected(f"only read-only queries run here: {reason}")
        params: Row = {**parameters, "corpus_id": corpus_id}
        return await self._run_read_only(corpus_id, query, params, max_rows=max_rows, timeout_ms=timeout_ms)

    async def counts(self, corpus_id: str) -> dict[str, int]:
        check_corpus_id(corpus_id)
        result: dict[str, int] = {"entities": 0, "relationships": 0}
        for row in await self._read(corpus_id, cypher.COUNT_ENTITIES):
            result[f"entities.{row['type']}"] = int(row["n"])
            result["entities"] += int(row["n"])
        for row in await self._read(corpus_id, cypher.COUNT_RELATIONSHIPS):
            label = str(row["type"])
            result[f"relationships.{cypher.relationship_type(label)}"] = int(row["n"])
            result["relationships"] += int(row["n"])
        return result
