"""The graph-store interface every backend implements, plus the input checks they share."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple, Protocol, runtime_checkable

from tribrid.config import GRAPH_TYPE_PATTERN
from tribrid.models import Entity, Relation

MAX_HOPS = 5  # mirrors GraphSearchConfig.max_hops (le=5)

# A corpus's graph is stored once per index generation, under its own key, so a new generation
# is built beside the one being searched and an interrupted run never shows through.
GENERATION_SEPARATOR = "@g"
_TYPE_NAME = re.compile(GRAPH_TYPE_PATTERN)


def graph_key(corpus_id: str, generation: int) -> str:
    """The store key of one generation of a corpus's graph (what every method takes as corpus_id)."""
    return f"{check_corpus_id(corpus_id)}{GENERATION_SEPARATOR}{generation}"


def corpus_of_key(key: str) -> str:
    """The corpus a graph key belongs to (a plain corpus id is its own key)."""
    corpus, separator, generation = key.rpartition(GENERATION_SEPARATOR)
    return corpus if separator and generation.isdigit() else key


# Edge direction of a traversal step: "out" follows a -> b, "in" follows a <- b.
Direction = Literal["both", "out", "in"]
DIRECTIONS: tuple[Direction, ...] = ("both", "out", "in")
NO_COMMUNITY = -1


class TraversalHit(NamedTuple):  # a tuple: a search makes a hundred of them (a dataclass cost 5x)
    """An entity reached by `traverse`: its best shortest route and how many shortest routes exist."""

    entity: Entity
    hops: int
    seed_id: str
    relationship_types: tuple[str, ...]
    # Entity ids from the seed to the entity (hops + 1 entries).
    path: tuple[str, ...]
    # Number of distinct shortest paths from any seed (edge-distinct, counted breadth-first).
    supporting_paths: int


@dataclass(frozen=True, slots=True)
class Neighbour:
    """One entity next to another, the relationship type linking them and its direction."""

    entity: Entity
    relationship_type: str
    direction: Literal["out", "in"]


@dataclass(frozen=True, slots=True)
class GraphPath:
    """Entities along a path (source first) and the stored relationship type of each step."""

    entity_ids: tuple[str, ...]
    relationship_types: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CypherResult:
    """An operator's read-only query's answer: its columns, and its rows of JSON-ready values (nodes
    as {"labels", "properties"}, relationships as {"type", "properties"}, paths as {"nodes",
    "relationships"}); `truncated` when more rows came back than were asked for."""

    columns: tuple[str, ...]
    rows: list[tuple[object, ...]]
    truncated: bool


class CypherRejected(ValueError):
    """An operator's query that would write: refused before, or by, the database."""


class CypherTimedOut(TimeoutError):
    """An operator's query that ran past its time limit (the database stopped it)."""


class CypherFailed(ValueError):
    """An operator's query the database could not run (syntax, unknown function, ...)."""


@runtime_checkable
class GraphView(Protocol):
    """What a search reads from one corpus's graph: a store, or a snapshot of a committed generation."""

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
        """Entities whose name, qualified name or alias matches a term, case-insensitively
        (without their unresolved references: `get_entities` has them).

        Score per entity is its best over the terms: 1.0 (exact) when the name, the qualified
        name or an alias (named-entity types only: seeds.aliased_types) equals the term, 0.7
        (prefix) when the name starts with it, 0.4 (fuzzy) for any other fulltext-index hit (a
        word of the qualified name starts with the term, or, with `fuzzy`, a word is one edit
        away from a term of 5+ characters). Exact matches use an index on the lower-cased names;
        the rest come from the fulltext index, never a scan (aliases: a scan of the named-entity
        types' nodes by label). Without `fulltext` only exact matches count (a document search's
        word n-grams, most of which name nothing). Ordered by score (desc),
        then entity id.
        """
        ...

    async def fulltext_ids_by_term(
        self, corpus_id: str, terms: Sequence[str], entity_types: Sequence[str], *, fuzzy: bool = True
    ) -> dict[str, list[str]]:
        """The fulltext-index candidates `find_seeds` reads, term by term: each lower-cased term
        without a dot -> the ids (sorted) of its first 60 hits among these entity types (by index
        score, then id). Asked about several terms, one query."""
        ...

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
        """Breadth-first from the seeds over the given relation types and direction, 1..max_hops.

        Seeds are given in priority order: when shortest routes tie, the earlier seed wins, then
        the smaller type sequence, then the smaller path. At most `max_fanout` new neighbours per
        node and hop (0 = no cap; the first by neighbour id). Seeds are not hits. Ordered by
        hops, then entity id; at most `limit` hits. Hit entities come without their unresolved
        references (`get_entities` has them).
        """
        ...

    async def get_entities(
        self, corpus_id: str, entity_ids: Sequence[str], *, with_unresolved: bool = True
    ) -> list[Entity]:
        """The stored entities among these ids, in the order asked (unknown ids are skipped);
        `with_unresolved=False` leaves their unresolved references out (a smaller reply)."""
        ...

    async def entities_by_chunks(self, corpus_id: str, chunk_ids: Sequence[str]) -> list[Entity]:
        """Entities defined in these chunks, ordered by entity id."""
        ...

    async def unresolved_refs(self, corpus_id: str) -> dict[str, tuple[str, ...]]:
        """Entity id -> its stored unresolved references, for the entities that have any."""
        ...

    async def community_of(self, corpus_id: str, entity_ids: Sequence[str]) -> dict[str, int]:
        """Community of each of these entities that has one stored (>= 0)."""
        ...

    async def relations_of(
        self,
        corpus_id: str,
        node_ids: Sequence[str],
        relationship_types: Sequence[str],
        direction: Literal["out", "in"],
    ) -> list[Relation]:
        """The stored relations of these types that leave ("out") or enter ("in") these nodes,
        with their properties; ordered by source, type, then target."""
        ...

    async def inferred_edges(
        self, corpus_id: str, pairs: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], float]:
        """(source id, target id) -> confidence, for the edges among these pairs that were inferred
        by name (`calls` by method name, `inherits` by class name); proven edges are left out."""
        ...


@runtime_checkable
class GraphStore(GraphView, Protocol):
    """Code-graph storage for one or more corpora: entities (nodes) and typed relations (edges).

    Every method takes the corpus id; data of different corpora never mix.
    """

    async def ensure_schema(self, corpus_id: str) -> None:
        """Create the indexes this store relies on; safe to call any number of times."""
        ...

    async def upsert_entities(self, corpus_id: str, entities: Sequence[Entity]) -> int:
        """Insert or update entities by id; returns how many were written."""
        ...

    async def upsert_relations(self, corpus_id: str, relations: Sequence[Relation]) -> int:
        """Insert relations (once per source, target and type); returns how many have both endpoints.

        Relations whose endpoints are not stored are skipped. Unknown types raise ValueError.
        """
        ...

    async def delete_files(self, corpus_id: str, file_paths: Sequence[str]) -> int:
        """Delete the entities of these files and their relations; returns entities deleted."""
        ...

    async def delete_entities(self, corpus_id: str, entity_ids: Sequence[str]) -> int:
        """Delete these entities and their relations; returns how many were deleted."""
        ...

    async def entities_in_files(self, corpus_id: str, file_paths: Sequence[str]) -> list[Entity]:
        """The entities of these files ("" names those of no file: named entities), by id."""
        ...

    async def delete_corpus(self, corpus_id: str) -> None:
        """Delete everything stored for the corpus."""
        ...

    async def neighbors(
        self,
        corpus_id: str,
        entity_id: str,
        relationship_types: Sequence[str],
        direction: Direction,
        limit: int,
    ) -> list[Neighbour]:
        """Entities one relation away, ordered by direction ("out" first), type, then entity id."""
        ...

    async def shortest_path(
        self, corpus_id: str, source_id: str, target_id: str, max_hops: int, relationship_types: Sequence[str]
    ) -> GraphPath | None:
        """A shortest path ignoring edge direction (ties: smallest type sequence, then ids), or None."""
        ...

    async def find_by_qualified_name(self, corpus_id: str, qualified_name: str) -> list[Entity]:
        """Entities with exactly this qualified name (case-sensitive), ordered by entity id."""
        ...

    async def find_by_name(self, corpus_id: str, name: str) -> list[Entity]:
        """Entities whose short name is `name`, case-insensitive, ordered by entity id."""
        ...

    async def entity_ids(self, corpus_id: str) -> list[str]:
        """Every stored entity id, sorted."""
        ...

    async def most_mentioned(self, corpus_id: str, limit: int) -> list[tuple[str, int]]:
        """(entity id, chunks that MENTION it) of the most mentioned entities, most first, then id."""
        ...

    async def set_communities(self, corpus_id: str, membership: Mapping[str, int]) -> int:
        """Store each entity's community number (-1 = none); returns how many entities were set."""
        ...

    async def community_count(self, corpus_id: str) -> int:
        """Number of distinct communities (>= 0) stored; 0 when never computed."""
        ...

    async def all_relations(self, corpus_id: str) -> list[Relation]:
        """Every stored relation, ordered by source, type and target."""
        ...

    async def delete_relations(self, corpus_id: str, relations: Sequence[Relation]) -> int:
        """Delete these relations (endpoints stay); returns how many were deleted."""
        ...

    async def copy_graph(self, source: str, target: str) -> None:
        """Replace whatever is stored under `target` with a copy of `source` (empty if missing)."""
        ...

    async def cypher_query(
        self, corpus_id: str, query: str, parameters: Mapping[str, object], *, max_rows: int, timeout_ms: int
    ) -> CypherResult:
        """An operator's Cypher query, read-only, on the graph stored under `corpus_id` (also passed
        as $corpus_id): at most `max_rows` rows, stopped after `timeout_ms`. Raises CypherRejected
        for a query that writes, CypherTimedOut, or CypherFailed."""
        ...

    async def counts(self, corpus_id: str) -> dict[str, int]:
        """Totals ("entities", "relationships") and per type present ("entities.<type>",
        "relationships.<type>"; the schema is open, so absent types are not listed)."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...


def check_corpus_id(corpus_id: str) -> str:
    if not isinstance(corpus_id, str) or not corpus_id or "\x00" in corpus_id:
        raise ValueError(f"corpus_id must be a non-empty string without NUL, got {corpus_id!r}")
    return corpus_id


def check_max_hops(max_hops: int) -> int:
    # It is formatted into the query text (Cypher can't parameterize a path length): be strict.
    if type(max_hops) is not int or not 1 <= max_hops <= MAX_HOPS:
        raise ValueError(f"max_hops must be an int in 1..{MAX_HOPS}, got {max_hops!r}")
    return max_hops


def _check_type_names(what: str, names: Sequence[str]) -> list[str]:
    # The schema is open (types come from config), but a type name is formatted into Cypher text as
    # a label: only plain identifiers pass.
    bad = sorted({name for name in names if not isinstance(name, str) or not _TYPE_NAME.match(name)}, key=str)
    if bad:
        raise ValueError(f"{what} {bad} are not type names (lower-case letters, digits and '_', 1..40)")
    return sorted(set(names))


def check_entity_types(entity_types: Sequence[str]) -> list[str]:
    return _check_type_names("entity types", entity_types)


def check_direction(direction: str) -> Direction:
    for known in DIRECTIONS:
        if direction == known:
            return known
    raise ValueError(f"unknown direction {direction!r}; allowed: {list(DIRECTIONS)}")


def check_relationship_types(relationship_types: Sequence[str]) -> list[str]:
    return _check_type_names("relationship types", relationship_types)


def check_entity(corpus_id: str, entity: Entity) -> None:
    if entity.corpus_id != corpus_of_key(corpus_id):
        raise ValueError(
            f"entity {entity.entity_id!r} belongs to corpus {entity.corpus_id!r}, not {corpus_id!r}"
        )
    if not _TYPE_NAME.match(entity.type):
        raise ValueError(f"entity {entity.entity_id!r} has type {entity.type!r}, not a type name")
    if not entity.entity_id:
        raise ValueError("entity id must not be empty")
    # FalkorDB cuts a query at a NUL byte in any string parameter; no real name or path has one.
    texts = (
        entity.entity_id,
        entity.name,
        entity.qualified_name,
        entity.file_path,
        entity.chunk_id,
        *entity.aliases,
    )
    if any("\x00" in text for text in texts):
        raise ValueError(f"entity {entity.entity_id!r} has a NUL character in a text field")


def clean_strings(values: Sequence[str]) -> list[str]:
    """Unique non-empty values in first-seen order; values with NUL are dropped (never stored)."""
    return [v for v in dict.fromkeys(values) if v and "\x00" not in v]
