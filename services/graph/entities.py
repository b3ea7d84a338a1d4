"""The entity API's logic: naming an entity, its relations (EntitySearch), its chunks, a chunk's
entities, the edges of neighbours and paths, and the operators' Cypher queries' input and output.

Plain functions over a graph reader (the committed generation's snapshot or the store) and the
chunk rows in PostgreSQL; the servicer (service.py) only checks requests and builds replies.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import asyncpg
from google.protobuf import json_format, struct_pb2

from tribrid.config import CODE_ENTITY_TYPES, DOCUMENT_NODE_TYPES, MAX_DOCUMENT_HOPS, RELATIONSHIP_TYPES
from tribrid.graphstore import GraphStore
from tribrid.graphstore.base import CypherResult, GraphPath, GraphView
from tribrid.models import Entity, Relation
from tribrid.options import invalid, not_found
from tribrid.search_common import ScoredChunk
from tribrid.stores.postgres import fetch_chunks
from tribrid.v1 import common_pb2, graph_pb2

# A plain name that fits more entities than this lists only the first ones in its error.
_CANDIDATES_SHOWN = 10
# Documents and chunks: the graph's structure, not things a question names. EntitySearch does not
# list them (EntityChunks and ChunkEntities do), and a plain name never means one (a chunk's name
# is its section breadcrumb, which a named entity's name could equal).
STRUCTURAL_TYPES = frozenset(DOCUMENT_NODE_TYPES)
# What EntitySearch walks by default: every relationship type but the ones that only link
# structural nodes (a chunk MENTIONS an entity, a chunk is SIMILAR_TO a chunk).
ENTITY_RELATION_TYPES: tuple[str, ...] = tuple(
    t for t in RELATIONSHIP_TYPES if t not in ("mentions", "similar_to")
)
MAX_SEARCH_HOPS = MAX_DOCUMENT_HOPS
MAX_SEARCH_LIMIT = 200
DEFAULT_SEARCH_LIMIT = 20
MAX_CHUNKS_LIMIT = 500
DEFAULT_CHUNKS_LIMIT = 50
# A Cypher parameter's name goes into the query's parameter header (FalkorDB): identifiers only.
_PARAMETER_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
# The parameter every operator's query gets: the committed graph's key.
RESERVED_PARAMETER = "corpus_id"


# --- naming an entity ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GraphTypes:
    """What a committed graph holds, read once per generation."""

    named: tuple[str, ...]  # entity types a name can mean: every stored type but documents and chunks
    imported_relations: tuple[str, ...]  # relationship types beyond the indexer's own (an import's)
    relations: tuple[str, ...]  # every relationship type the graph holds, sorted


async def graph_types(store: GraphStore, key: str) -> GraphTypes:
    counts = await store.counts(key)  # "entities.<type>" and "relationships.<type>" -> how many

    def kinds(group: str) -> set[str]:
        return {name.removeprefix(group) for name in counts if name.startswith(group)}

    return GraphTypes(
        named=tuple(sorted(kinds("entities.") - STRUCTURAL_TYPES)),
        imported_relations=tuple(sorted(kinds("relationships.") - set(RELATIONSHIP_TYPES))),
        relations=tuple(sorted(kinds("relationships."))),
    )


async def candidates(
    store: GraphStore, key: str, name: str, types: Sequence[str], limit: int
) -> list[Entity]:
    """Entities a name the graph does not hold may mean, best first: a name or alias that starts
    with it ("Dell" -> Dell Technologies), holds it as a word (Michael Dell), or is one edit from a
    word of it ("Micheal" -> Michael); by the store's seed ranking, then id."""
    terms = [name, *name.split()] if len(name.split()) > 1 else [name]
    if not types:
        return []
    found = await store.find_seeds(key, terms, list(types), limit, fuzzy=True, fulltext=True)
    return [entity for entity, _ in found]


async def _in_order(store: GraphStore, key: str, ids: Sequence[str]) -> list[Entity]:
    by_id = {e.entity_id: e for e in await store.get_entities(key, list(ids))}
    return [by_id[i] for i in ids if i in by_id]


async def resolve(
    store: GraphStore,
    key: str,
    ref: graph_pb2.EntityRef,
    what: str,
    types: Sequence[str] = (),
    spelled: Callable[[str], Awaitable[list[str]]] | None = None,
    near: Callable[[str, int], Awaitable[list[str]]] | None = None,
) -> Entity:
    """The one entity `ref` names: by id, by qualified name, or by a plain name that fits exactly one
    (see `by_name`), else by another spelling of a name (`spelled`: the ids a text spells, such as
    "Wang Xifeng" for 王熙凤). A plain name that fits none but resembles some (`near`: the ids of
    the named entities whose names or spellings it resembles, best first; else `candidates` among
    `types`, the store's lookup, which also knows code symbols) is INVALID_ARGUMENT listing them
    best first, like an ambiguous one; NOT_FOUND when none does."""
    named = [f for f in ("entity_id", "qualified_name", "name") if getattr(ref, f)]
    if len(named) != 1:
        raise invalid(f"{what}: set exactly one of entity_id, qualified_name or name")
    if ref.entity_id:
        found = await store.get_entities(key, [ref.entity_id])
    elif ref.qualified_name:
        found = await store.find_by_qualified_name(key, ref.qualified_name)
    else:
        found = await by_name(store, key, ref.name)
        if not found and spelled is not None:
            found = await store.get_entities(key, await spelled(ref.name))
    named_as = ref.entity_id or ref.qualified_name or ref.name
    if not found and ref.name:
        nearest = await _in_order(store, key, await near(ref.name, _CANDIDATES_SHOWN)) if near else []
        nearest = nearest or await candidates(store, key, ref.name, types, _CANDIDATES_SHOWN)
        if nearest:
            shown = ", ".join(_candidate(e) for e in nearest)
            raise invalid(
                f"{what} {named_as!r} names no entity; the nearest, best first: {shown};"
                " name one by its name or id"
            )
    if not found:
        raise not_found(f"{what} {named_as!r} not found")
    # `from m import f` makes an import entity named like m.f's definition: the name means that
    definitions = [e for e in found if e.type != "import"]
    found = definitions or found
    if len(found) > 1:
        shown = ", ".join(_candidate(e) for e in found[:_CANDIDATES_SHOWN])
        more = f" and {len(found) - _CANDIDATES_SHOWN} more" if len(found) > _CANDIDATES_SHOWN else ""
        raise invalid(
            f"{what} {named_as!r} is ambiguous: {len(found)} entities fit: {shown}{more}; "
            "name one by its qualified name or id"
        )
    return found[0]


def _candidate(entity: Entity) -> str:
    where = f", {entity.file_path}:{entity.start_line}" if entity.file_path else f", id {entity.entity_id}"
    return f"{entity.qualified_name} ({entity.type}{where})"


async def by_name(store: GraphStore, key: str, name: str) -> list[Entity]:
    """Entities `name` names, by id: an id or a qualified name if it is one; else a plain name,
    case-insensitive: an entity's name or alias ("Dell", "dell technologies"), or the end of a code
    entity's qualified name after a dot ("Cart.total"). Never a document or a chunk by plain name."""
    found = await store.get_entities(key, [name])
    if not found:
        found = await store.find_by_qualified_name(key, name)
    if found:
        return found
    wanted = name.lower()
    candidates = {e.entity_id: e for e in await store.find_by_name(key, wanted)}
    last = wanted.rsplit(".", 1)[-1]
    if last != wanted:
        for e in await store.find_by_name(key, last):
            qualified = e.qualified_name.lower()
            if qualified == wanted or qualified.endswith("." + wanted):
                candidates[e.entity_id] = e
    return [candidates[eid] for eid in sorted(candidates) if candidates[eid].type not in STRUCTURAL_TYPES]


# --- replies' parts -----------------------------------------------------------------------------


def edge_properties(relation: Relation | None) -> common_pb2.EdgeProperties:
    if relation is None:
        return common_pb2.EdgeProperties()
    return common_pb2.EdgeProperties(
        count=relation.count,
        strength=relation.strength,
        similarity=relation.similarity,
        inferred=relation.inferred,
        confidence=relation.confidence if relation.inferred else 0.0,
        attributes=attributes(relation.properties),
    )


def attributes(properties: str) -> struct_pb2.Struct | None:
    """An imported node's or edge's properties (stored as JSON) as a Struct; None for none."""
    if not properties:
        return None
    values = struct_pb2.Struct()
    values.update(json.loads(properties))
    return values


def graph_entity(
    entity: Entity,
    community: int,
    relationship_type: str = "",
    direction: str = "",
    edge: Relation | None = None,
) -> graph_pb2.GraphEntity:
    return graph_pb2.GraphEntity(
        entity_id=entity.entity_id,
        type=entity.type,
        name=entity.name,
        qualified_name=entity.qualified_name,
        file_path=entity.file_path,
        start_line=entity.start_line,
        end_line=entity.end_line,
        chunk_id=entity.chunk_id,
        community=community,
        relationship_type=relationship_type,
        direction=direction,
        unresolved=list(entity.unresolved),
        edge=edge_properties(edge) if edge is not None else None,
        aliases=list(entity.aliases),
        attributes=attributes(entity.properties),
    )


def _counted(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def is_named(entity: Entity) -> bool:
    """A named entity of a document (person, organization, ...): neither code nor structure."""
    return entity.type not in CODE_ENTITY_TYPES and entity.type not in STRUCTURAL_TYPES


async def describe(reader: GraphView, key: str, entities: Iterable[Entity]) -> dict[str, str]:
    """Entity id -> a line saying what it is: for a named entity how often, in how many chunks and
    documents it is mentioned; for a code entity its kind, qualified name and location."""
    unique = {e.entity_id: e for e in entities}
    named = sorted(eid for eid, e in unique.items() if is_named(e))
    mentions = await reader.relations_of(key, named, ["mentions"], "in") if named else []
    chunks = sorted({r.source_id for r in mentions})
    contains = await reader.relations_of(key, chunks, ["contains"], "in") if chunks else []
    document_of = {r.target_id: r.source_id for r in contains}
    times: dict[str, int] = {}
    chunks_of: dict[str, set[str]] = {}
    for r in mentions:
        times[r.target_id] = times.get(r.target_id, 0) + max(r.count, 1)
        chunks_of.setdefault(r.target_id, set()).add(r.source_id)
    described: dict[str, str] = {}
    for eid, e in unique.items():
        if is_named(e):
            in_chunks = chunks_of.get(eid, set())
            documents = {document_of[c] for c in in_chunks if c in document_of}
            described[eid] = (
                f"{e.type} mentioned {_counted(times.get(eid, 0), 'time')} in "
                f"{_counted(len(in_chunks), 'chunk')} of {_counted(len(documents), 'document')}"
            )
        elif e.file_path and e.type not in STRUCTURAL_TYPES:
            described[eid] = f"{e.type} {e.qualified_name} at {e.file_path}:{e.start_line}-{e.end_line}"
        else:
            described[eid] = f"{e.type} {e.qualified_name}"
    return described


# --- EntitySearch -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FoundRelation:
    """An edge EntitySearch met, from the side the walk came from (`source`)."""

    hops: int
    source: Entity
    relation: Relation
    direction: Literal["out", "in"]  # "out": stored source -> target
    target: Entity


async def walk_relations(
    reader: GraphView, key: str, start: Entity, relationship_types: Sequence[str], max_hops: int
) -> list[FoundRelation]:
    """Breadth-first from `start` over these relationship types, either direction, `max_hops` steps:
    step d lists every edge from an entity first reached at step d-1 to one first reached at step
    d (never one to a document or a chunk). Ordered by hops, source id, type, target id."""
    entities = {start.entity_id: start}
    seen = {start.entity_id}
    frontier = [start.entity_id]
    found: list[FoundRelation] = []
    for level in range(1, max_hops + 1):
        if not frontier:
            break
        steps: list[tuple[str, Relation, Literal["out", "in"], str]] = [
            (r.source_id, r, "out", r.target_id)
            for r in await reader.relations_of(key, frontier, relationship_types, "out")
        ]
        steps += [
            (r.target_id, r, "in", r.source_id)
            for r in await reader.relations_of(key, frontier, relationship_types, "in")
        ]
        new_ids = sorted({far for *_, far in steps if far not in seen})
        reached = {
            e.entity_id: e
            for e in await reader.get_entities(key, new_ids, with_unresolved=False)
            if e.type not in STRUCTURAL_TYPES
        }
        kept = sorted(
            (step for step in steps if step[3] in reached),
            key=lambda s: (s[0], s[1].type, s[3], s[2]),
        )
        found += [FoundRelation(level, entities[near], r, d, reached[far]) for near, r, d, far in kept]
        entities.update(reached)
        seen.update(new_ids)
        frontier = sorted({far for *_, far in kept})
    return found


# EntitySearch's name for two entities named in one chunk (no stored edge: read from MENTIONS).
CO_MENTIONED = "co_mentioned"
# The chunks listed per co-mention.
_CO_MENTION_CHUNKS = 10


@dataclass(frozen=True, slots=True)
class CoMention:
    target: Entity
    chunks: int  # how many chunks name both
    chunk_ids: tuple[str, ...]  # the first of them: most mentions of the two first, then id


async def co_mentions(reader: GraphView, key: str, start: Entity, linked: set[str]) -> list[CoMention]:
    """The named entities that share a chunk with `start` and are not in `linked`, most shared
    chunks first (then id). RELATED_TO needs two names together in `related_min_chunks` chunks; one
    chunk that names both is a relation stated once, and this is how it is found."""
    mentions = await reader.relations_of(key, [start.entity_id], ["mentions"], "in")
    own = {m.source_id: m.count for m in mentions}
    together: dict[str, list[tuple[int, str]]] = {}
    for m in await reader.relations_of(key, sorted(own), ["mentions"], "out"):
        if m.target_id != start.entity_id and m.target_id not in linked:
            together.setdefault(m.target_id, []).append((-(own[m.source_id] + m.count), m.source_id))
    entities = {
        e.entity_id: e for e in await reader.get_entities(key, sorted(together), with_unresolved=False)
    }
    found = [
        CoMention(
            entities[eid], len(chunks), tuple(chunk for _, chunk in sorted(chunks)[:_CO_MENTION_CHUNKS])
        )
        for eid, chunks in together.items()
        if eid in entities and is_named(entities[eid])
    ]
    return sorted(found, key=lambda c: (-c.chunks, c.target.entity_id))


async def entity_search(
    reader: GraphView,
    key: str,
    start: Entity,
    relationship_types: Sequence[str],
    max_hops: int,
    limit: int,
    with_co_mentions: bool = True,
) -> graph_pb2.EntitySearchResponse:
    """Relations of `start` (walk_relations), then its co-mentions when asked and it is named."""
    found = (
        await walk_relations(reader, key, start, relationship_types, max_hops) if relationship_types else []
    )
    co: list[CoMention] = []
    if with_co_mentions and is_named(start):
        linked = {f.target.entity_id for f in found}
        co = await co_mentions(reader, key, start, linked)
    shown = found[:limit]
    shown_co = co[: max(0, limit - len(shown))]
    targets = [f.target for f in shown] + [c.target for c in shown_co]
    described = await describe(reader, key, targets)
    ids = [start.entity_id, *(f.source.entity_id for f in shown), *(e.entity_id for e in targets)]
    communities = await reader.community_of(key, ids)
    origin = graph_entity(start, communities.get(start.entity_id, -1))
    relations = [
        graph_pb2.EntityRelation(
            source=graph_entity(f.source, communities.get(f.source.entity_id, -1)),
            relation=f.relation.type,
            direction=f.direction,
            target=graph_entity(f.target, communities.get(f.target.entity_id, -1)),
            description=described[f.target.entity_id],
            properties=edge_properties(f.relation),
            hops=f.hops,
        )
        for f in shown
    ]
    relations += [
        graph_pb2.EntityRelation(
            source=origin,
            relation=CO_MENTIONED,
            direction="both",
            target=graph_entity(c.target, communities.get(c.target.entity_id, -1)),
            description=described[c.target.entity_id],
            properties=common_pb2.EdgeProperties(count=c.chunks),
            hops=1,
            chunk_ids=list(c.chunk_ids),
        )
        for c in shown_co
    ]
    return graph_pb2.EntitySearchResponse(entity=origin, relations=relations, total=len(found) + len(co))


# --- chunks -------------------------------------------------------------------------------------


async def entity_chunks(
    reader: GraphView, pool: asyncpg.Pool, corpus_id: str, key: str, entity: Entity, limit: int
) -> list[ScoredChunk]:
    """The chunks of an entity, best first: the chunks that mention a named entity (score = the
    mention count; then by chunk id), a document's chunks (in reading order), or the chunk that
    holds a code entity (or is the chunk), then the document chunks that name it."""
    if entity.chunk_id:
        rows = await fetch_chunks(pool, corpus_id, [entity.chunk_id])
        own = [ScoredChunk(row, 1.0, f"entity={entity.qualified_name}") for row in rows.values()]
        return own + (await _mentioning(reader, pool, corpus_id, key, entity, limit - len(own)))
    if entity.type == "document":
        contained = await reader.relations_of(key, [entity.entity_id], ["contains"], "out")
        rows = await fetch_chunks(pool, corpus_id, [r.target_id for r in contained])
        ordered = sorted(rows.values(), key=lambda row: (row.start_line, row.chunk_id))[:limit]
        return [ScoredChunk(row, 1.0, f"document={entity.qualified_name}") for row in ordered]
    return await _mentioning(reader, pool, corpus_id, key, entity, limit)


async def _mentioning(
    reader: GraphView, pool: asyncpg.Pool, corpus_id: str, key: str, entity: Entity, limit: int
) -> list[ScoredChunk]:
    """The chunks that MENTION an entity, most mentions first (score = the count), then id."""
    if limit <= 0:
        return []
    mentions = await reader.relations_of(key, [entity.entity_id], ["mentions"], "in")
    by_count = sorted(mentions, key=lambda r: (-r.count, r.source_id))[:limit]
    rows = await fetch_chunks(pool, corpus_id, [r.source_id for r in by_count])
    return [
        ScoredChunk(rows[r.source_id], float(r.count), f"mentions {entity.name} {_counted(r.count, 'time')}")
        for r in by_count
        if r.source_id in rows
    ]


async def chunk_entities(
    reader: GraphView, pool: asyncpg.Pool, corpus_id: str, key: str, chunk_id: str
) -> graph_pb2.ChunkEntitiesResponse:
    """The named entities a chunk mentions (most mentions first, then id) and the code entities
    defined in it (by id); NOT_FOUND for a chunk the corpus's committed generation lacks."""
    if not chunk_id:
        raise invalid("chunk_id is empty: name the chunk")
    if not await fetch_chunks(pool, corpus_id, [chunk_id]):
        raise not_found(f"chunk {chunk_id!r} not found in corpus {corpus_id!r}")
    mentions = sorted(
        await reader.relations_of(key, [chunk_id], ["mentions"], "out"),
        key=lambda r: (-r.count, r.target_id),
    )
    mentioned = {e.entity_id: e for e in await reader.get_entities(key, [r.target_id for r in mentions])}
    defined = [e for e in await reader.entities_by_chunks(key, [chunk_id]) if e.type not in STRUCTURAL_TYPES]
    communities = await reader.community_of(key, [*mentioned, *(e.entity_id for e in defined)])
    return graph_pb2.ChunkEntitiesResponse(
        mentions=[
            graph_entity(mentioned[r.target_id], communities.get(r.target_id, -1), "mentions", "out", edge=r)
            for r in mentions
            if r.target_id in mentioned
        ],
        defined=[graph_entity(e, communities.get(e.entity_id, -1)) for e in defined],
    )


# --- edges of Neighbors and PathBetween ---------------------------------------------------------


async def neighbour_edges(
    reader: GraphView, key: str, entity_id: str, relationship_types: Sequence[str]
) -> dict[tuple[str, str, str], Relation]:
    """(direction seen from the entity, type, neighbour id) -> the edge, for each edge of it."""
    edges = {
        ("out", r.type, r.target_id): r
        for r in await reader.relations_of(key, [entity_id], relationship_types, "out")
    }
    edges.update(
        {
            ("in", r.type, r.source_id): r
            for r in await reader.relations_of(key, [entity_id], relationship_types, "in")
        }
    )
    return edges


async def path_edges(reader: GraphView, key: str, path: GraphPath) -> list[Relation | None]:
    """The stored edge of each step of a path (walked regardless of direction)."""
    types = sorted(set(path.relationship_types))
    if not types:
        return []
    stored = {
        (r.source_id, r.type, r.target_id): r
        for r in await reader.relations_of(key, path.entity_ids, types, "out")
    }
    steps = zip(path.entity_ids, path.relationship_types, path.entity_ids[1:], strict=False)
    return [stored.get((a, t, b)) or stored.get((b, t, a)) for a, t, b in steps]


# --- CypherQuery --------------------------------------------------------------------------------


def _whole_numbers(value: object) -> object:
    # JSON (and so Struct) has only doubles: 10 arrives as 10.0, which Cypher's LIMIT refuses.
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, list):
        return [_whole_numbers(v) for v in value]
    if isinstance(value, dict):
        return {k: _whole_numbers(v) for k, v in value.items()}
    return value


def cypher_parameters(parameters: struct_pb2.Struct) -> dict[str, object]:
    """A request's parameters as query parameters; INVALID_ARGUMENT for a name that is not an
    identifier or is the reserved $corpus_id."""
    values: dict[str, object] = json_format.MessageToDict(parameters)
    for name in values:
        if name == RESERVED_PARAMETER:
            raise invalid(
                f"parameters.{name}: reserved: $corpus_id is always the corpus's committed graph key"
            )
        if not _PARAMETER_NAME.match(name):
            raise invalid(f"parameters: {name!r} is not a parameter name (letters, digits and '_', 1..64)")
    return {name: _whole_numbers(value) for name, value in values.items()}


def cypher_response(result: CypherResult) -> graph_pb2.CypherQueryResponse:
    return graph_pb2.CypherQueryResponse(
        columns=list(result.columns),
        rows=[
            graph_pb2.CypherRow(values=[json.dumps(v, ensure_ascii=False, sort_keys=True) for v in row])
            for row in result.rows
        ],
        truncated=result.truncated,
    )
