"""GraphSearch gRPC servicer.

Every call reads the corpus's current index generation and works on that generation's graph
(graph_key(corpus_id, generation)); an unknown corpus is NOT_FOUND.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

import asyncpg
import grpc
from pydantic import TypeAdapter, ValidationError

from services.graph import entities
from services.graph.chunk_rows import GenerationRows
from services.graph.documents import (
    DocumentSettings,
    QueryEntities,
    document_expansion,
    document_search,
    merge_results,
    query_recognizer,
)
from services.graph.external import ExternalNames
from services.graph.near_names import NearNames
from services.graph.per_graph import PerGraph
from services.graph.recent_graphs import RecentGraphs
from services.graph.romanized import RomanizedNames, with_romanized
from services.graph.search import GraphResult, expand_context, graph_search
from services.graph.snapshot import GraphSnapshot
from services.graph.snapshot_loader import load_apart
from tribrid.config import (
    CODE_ENTITY_TYPES,
    DOCUMENT_RELATIONSHIP_TYPES,
    MAX_DOCUMENT_HOPS,
    RELATIONSHIP_TYPES,
    GraphSearchConfig,
    GraphTypeName,
    LimitsConfig,
)
from tribrid.corpus_profile import CorpusProfiles
from tribrid.entity_linking import EntityLinker, KnownEntity
from tribrid.graphstore import GraphStore
from tribrid.graphstore.base import (
    CypherFailed,
    CypherRejected,
    CypherTimedOut,
    Direction,
    GraphView,
    graph_key,
)
from tribrid.models import Entity
from tribrid.ner import EntityRecognizer
from tribrid.options import (
    RequestError,
    enum_value_name,
    invalid,
    merge_options,
    not_found,
    validation_error,
    with_options,
)
from tribrid.question import learned, read
from tribrid.question.contract import from_proto
from tribrid.resources import Resources
from tribrid.search_common import (
    ScoredChunk,
    leg_response,
    validate_corpus_id,
    validate_search,
)
from tribrid.server import ServiceSpec
from tribrid.stores.corpus_versions import CorpusVersions
from tribrid.stores.postgres import corpus_version
from tribrid.text import PROSE_LANGUAGES
from tribrid.v1 import common_pb2, graph_pb2, graph_pb2_grpc, legs_pb2

log = logging.getLogger(__name__)

_RELATIONSHIP_TYPE: TypeAdapter[str] = TypeAdapter(GraphTypeName)
# Chunk rows of the hits kept between searches (services/graph/chunk_rows.py): 875 bytes each
# (measured), so 3.5 MB, the top answers of a few hundred questions; the leg held 292 MB at 100k
# chunks against a 300 MB target (docs/benchmarks.md).
KEPT_CHUNK_ROWS = 4_000
_CYPHER_OFF = (
    "CypherQuery is off: an operator turns it on with graph.cypher_enabled: true in the graph "
    "service's config (or TRIBRID_GRAPH__CYPHER_ENABLED=true)"
)


class WarmedUp(NamedTuple):
    """What a start loaded before the first request: the question NER, and the corpora whose
    graphs were used last (their snapshots and what a search reads beside them)."""

    recognizer: bool
    graphs: list[str]


class GraphKinds(NamedTuple):
    """What a committed graph holds: code entities, documents (chunk nodes), or both."""

    code: bool
    documents: bool


def _relationship_type(value: str, path: str) -> str:
    try:
        # Cypher users write labels in upper case (MEMBER_OF); the graph's types are lower case.
        return _RELATIONSHIP_TYPE.validate_python(value.lower())
    except ValidationError as err:
        raise validation_error(err, path) from None


def _edge_direction(value: int) -> Direction:
    if value == graph_pb2.EDGE_DIRECTION_UNSPECIFIED:
        return "both"
    name = enum_value_name(graph_pb2.EdgeDirection.DESCRIPTOR, value, "direction")
    return "both" if name == "both" else "out" if name == "out" else "in"


def _in_range(name: str, value: int, low: int, high: int) -> int:
    if not low <= value <= high:
        raise invalid(f"{name}: must be between {low} and {high}; got {value}")
    return value


class GraphServicer(graph_pb2_grpc.GraphSearchServicer):
    def __init__(
        self,
        cfg: GraphSearchConfig,
        limits: LimitsConfig,
        pool: asyncpg.Pool,
        store: GraphStore,
        named_entity_types: Iterable[str] = (),
        query_entities: QueryEntities | None = None,
        versions: CorpusVersions | None = None,
        open_store: Callable[[], GraphStore] | None = None,
    ) -> None:
        """`named_entity_types`: what a document search seeds on (the values of the config's
        entities.types); `query_entities`: NER on a question (names), or None to look up its
        words only; `versions`: the corpora's committed generations as kept between changes, or
        None to read them on every request; `open_store`: a new store, for each snapshot load in
        a thread of its own (snapshot_loader), or None to load on `store` on this loop."""
        self._cfg = cfg
        self._open_store = open_store
        self._versions = versions
        self._limits = limits
        self._pool = pool
        self._rows = GenerationRows(pool, KEPT_CHUNK_ROWS)
        self._store = store
        self._named_types = sorted(set(named_entity_types))
        self._query_entities = query_entities
        self._external = ExternalNames()
        self._profiles = CorpusProfiles(pool)
        # None: the graph is too big to hold, searches walk it in the store.
        self._snapshots: PerGraph[GraphSnapshot | None] = PerGraph(cfg.snapshot_max_graphs)
        # What a graph holds: code is searched as always; documents (chunk nodes) are also walked
        # as a document graph. A code-only graph is searched exactly as before.
        self._kinds: PerGraph[GraphKinds] = PerGraph(cfg.snapshot_max_graphs)
        # The entity and relationship types a graph holds (an imported graph brings its own).
        self._types: PerGraph[entities.GraphTypes] = PerGraph(cfg.snapshot_max_graphs)
        # The names and aliases of a graph's named entities, to find them in questions in any script.
        self._linkers: PerGraph[EntityLinker] = PerGraph(cfg.snapshot_max_graphs)
        # What a name that fits none may have meant (`_near_names`).
        self._near: PerGraph[tuple[NearNames, RomanizedNames]] = PerGraph(cfg.snapshot_max_graphs)
        self._recent = RecentGraphs(pool)

    async def _graph(self, corpus_id: str, *, used: bool = True) -> tuple[str, str]:
        """The committed graph's key, and the life of its corpus (`corpus_version`); `used`: a
        request's use, noted for the next start's warm-up (a warm-up itself is none)."""
        validate_corpus_id(corpus_id)
        if self._versions is not None:
            version = await self._versions.get(corpus_id)
        else:
            version = await corpus_version(self._pool, corpus_id)
        if version is None:
            raise not_found(f"corpus {corpus_id!r} not found: index it first")
        if used:
            self._recent.used(corpus_id)
        return graph_key(corpus_id, version[0]), version[1]

    async def _key(self, corpus_id: str) -> str:
        return (await self._graph(corpus_id))[0]

    def _reader(self, key: str, life: str) -> GraphView:
        """What searches of the committed graph under `key` read: the graph in memory, read once
        per generation and then searched without a round trip per traversal step or entity (see
        graphstore.snapshot); else the store itself. The store answers while the snapshot loads
        (searches after a commit don't wait for it), and for graphs over `snapshot_max_entities`."""
        snapshot = self._snapshots.ready(key, life, lambda: self._load_snapshot(key))
        return self._store if snapshot is None else snapshot

    async def _load_snapshot(self, key: str) -> GraphSnapshot | None:
        limit = self._cfg.snapshot_max_entities
        if limit == 0 or (await self._store.counts(key))["entities"] > limit:
            return None
        cache_terms = self._cfg.fulltext_cache_terms
        if self._open_store is not None:
            return await load_apart(self._open_store, key, self._store, cache_terms)
        return await GraphSnapshot.load(self._store, key, fulltext_cache_terms=cache_terms)

    async def _graph_kinds(self, key: str, life: str) -> GraphKinds:
        async def load() -> GraphKinds:
            counts = await self._store.counts(key)
            code = any(counts.get(f"entities.{t}", 0) for t in CODE_ENTITY_TYPES)
            return GraphKinds(code=code, documents=counts.get("entities.chunk", 0) > 0)

        return await self._kinds.get(key, life, load)

    async def _graph_types(self, key: str, life: str) -> entities.GraphTypes:
        return await self._types.get(key, life, lambda: entities.graph_types(self._store, key))

    async def _relation(self, key: str, life: str, value: str, path: str) -> str:
        """A relationship type a request names: the system's own (`calls`, `mentions`, ...,
        `co_mentioned`) or one the graph's import brought, in any case; INVALID_ARGUMENT listing
        the graph's types for any other (a typo or a type of another graph would answer nothing)."""
        relation = _relationship_type(value, path)
        held = (await self._graph_types(key, life)).relations  # an import's types among them
        if relation in RELATIONSHIP_TYPES or relation == entities.CO_MENTIONED or relation in held:
            return relation
        raise invalid(
            f"{path}: this corpus's graph has no relationship type {value!r}; it has"
            f" {', '.join(held) or 'none'}, and {entities.CO_MENTIONED} between named entities"
        )

    async def _imported_types(self, key: str, life: str) -> list[str]:
        """An imported graph's relationship types in this graph (member_of, ...), sorted."""
        return list((await self._graph_types(key, life)).imported_relations)

    async def _named_in(self, key: str, life: str, query: str) -> list[str]:
        """The named entities whose name or alias the question holds (entity ids, most often named
        first, then id): the same matching as the indexer's linking of chunks, so a Chinese
        question finds 恰斯卡 where word lookups find nothing."""
        found = (await self._linker(key, life)).mentions(query)
        return sorted(found, key=lambda entity_id: (-found[entity_id], entity_id))

    async def _linker(self, key: str, life: str) -> EntityLinker:
        """The names and aliases of the graph's named entities, matched in any script, and a
        Chinese name also as English-language readers spell it (`romanized`; read once per
        graph)."""

        def build(named: list[Entity]) -> EntityLinker:
            return EntityLinker(KnownEntity(e.entity_id, with_romanized((e.name, *e.aliases))) for e in named)

        async def load() -> EntityLinker:
            return await asyncio.to_thread(build, await self._named_entities(key))

        return await self._linkers.get(key, life, load)

    async def _named_entities(self, key: str) -> list[Entity]:
        """The graph's named entities (recognized, imported or extracted: not code, documents or
        chunks)."""
        free = await self._store.entities_in_files(key, [""])
        return [e for e in free if entities.is_named(e)]

    async def _recognized(self, query: str) -> list[str]:
        """The entity names NER finds in a question (the model loads on first use, off the loop,
        unless `warm_up` loaded it at start)."""
        if self._query_entities is None:
            return []
        return list(await asyncio.to_thread(self._query_entities, query))

    async def warm_up(self) -> WarmedUp:
        """Load now what the first questions after a start would wait for."""
        recognizer = await self._warm_recognizer()
        started = time.perf_counter()
        recent = await self._recent.latest(self._cfg.snapshot_max_graphs)
        graphs = [corpus_id for corpus_id in recent if await self._warm_graph(corpus_id)]
        took_s = round(time.perf_counter() - started, 2)
        log.info("warmed up", extra={"recognizer": recognizer, "graphs": graphs, "took_s": took_s})
        return WarmedUp(recognizer, graphs)

    async def close(self) -> None:
        """What a stopping service finishes: the uses being written, and the corpus listener."""
        await self._recent.drain()
        if self._versions is not None:
            await self._versions.close()

    async def _warm_recognizer(self) -> bool:
        """Load the question NER's pipeline when any corpus holds documents (whose questions it
        reads): it took 1.7 s of a 2 s leg deadline here. A code-only deployment never loads it.
        True when it loaded."""
        if self._query_entities is None:
            return False
        documents = await self._pool.fetchval(
            "SELECT EXISTS (SELECT 1 FROM chunks WHERE language = ANY($1::text[]))", sorted(PROSE_LANGUAGES)
        )
        if not documents:
            return False
        await asyncio.to_thread(self._query_entities, "warm up")
        return True

    async def _warm_graph(self, corpus_id: str) -> bool:
        """Load a corpus's graph snapshot and what searches read beside it. False when the corpus
        is gone or its load failed (a search loads it again)."""
        try:
            key, life = await self._graph(corpus_id, used=False)
            await self._snapshots.get(key, life, lambda: self._load_snapshot(key))
            kinds = await self._graph_kinds(key, life)
            if kinds.documents:
                await self._graph_types(key, life)
                await self._linker(key, life)
        except RequestError:
            return False  # deleted since its last use
        except Exception as err:  # a start goes on; a search loads it again
            log.warning("warm-up of corpus %r's graph failed: %r", corpus_id, err)
            return False
        return True

    async def _resolve(self, key: str, life: str, ref: graph_pb2.EntityRef, what: str) -> Entity:
        types = await self._graph_types(key, life)

        async def spelled(name: str) -> list[str]:
            return (await self._linker(key, life)).named(name)

        async def near(name: str, limit: int) -> list[str]:
            typed, romanized = await self._near_names(key, life)
            return list(dict.fromkeys((*typed.nearest(name, limit), *romanized.nearest(name, limit))))[:limit]

        return await entities.resolve(self._store, key, ref, what, types.named, spelled, near)

    async def _near_names(self, key: str, life: str) -> tuple[NearNames, RomanizedNames]:
        """What a name that fits none may have meant: the graph's names as typed with a typo or in
        part, and its Chinese names' romanized spellings (read once per graph, on the first such
        name, from one read of its named entities)."""

        def build(named: list[Entity]) -> tuple[NearNames, RomanizedNames]:
            return (
                NearNames((e.entity_id, (e.name, *e.aliases), e.imported) for e in named),
                RomanizedNames((e.entity_id, (e.name, *e.aliases)) for e in named),
            )

        async def load() -> tuple[NearNames, RomanizedNames]:
            return await asyncio.to_thread(build, await self._named_entities(key))

        return await self._near.get(key, life, load)

    async def _community(self, key: str, found: list[Entity]) -> dict[str, int]:
        return await self._store.community_of(key, [e.entity_id for e in found])

    async def _response(
        self,
        corpus_id: str,
        scored: list[ScoredChunk],
        started: float,
        include_content: bool,
        provenance: Mapping[str, common_pb2.GraphProvenance] | None = None,
    ) -> common_pb2.SearchResponse:
        return await leg_response(
            self._pool, corpus_id, scored, legs_pb2.LEG_GRAPH, started, include_content, provenance
        )

    # --- RPCs -------------------------------------------------------------------------------------

    async def Search(
        self,
        request: common_pb2.SearchRequest,
        context: grpc.aio.ServicerContext[common_pb2.SearchRequest, common_pb2.SearchResponse],
    ) -> common_pb2.SearchResponse:
        started = time.perf_counter()
        options = request.options.graph
        cfg = with_options(self._cfg, options, "options.graph")
        params = validate_search(request, cfg.top_k, self._limits)
        reading = from_proto(request.reading, params.query)
        key, life = await self._graph(params.corpus_id)
        reader = self._reader(key, life)
        kinds = await self._graph_kinds(key, life)
        found = GraphResult([], {})
        if kinds.code or not kinds.documents:
            external = self._external.of(key, life)
            if reading is None:  # called directly: the leg reads the question itself
                reading = read(params.query, await self._profiles.get(params.corpus_id))
            found = await graph_search(
                reader,
                self._rows.at(key),
                key,
                params,
                cfg,
                external,
                reading,
                bool(options.relationship_types),
            )
        if kinds.documents:
            walked = cfg.relationship_types if options.relationship_types else DOCUMENT_RELATIONSHIP_TYPES
            types = await self._graph_types(key, life)
            named = sorted(set(self._named_types) | set(types.named))
            documents = DocumentSettings.of(
                cfg, named, relationship_types=walked, typed_relations=types.imported_relations
            )
            recognized = await self._recognized(params.query)
            linked = await self._named_in(key, life, params.query)
            in_documents = await document_search(
                reader, self._rows.at(key), key, params, documents, recognized, linked
            )
            found = merge_results(found, in_documents, params.top_k)
        return await self._response(
            params.corpus_id, found.chunks, started, request.include_content, found.provenance
        )

    async def ExpandContext(
        self,
        request: graph_pb2.ExpandContextRequest,
        context: grpc.aio.ServicerContext[graph_pb2.ExpandContextRequest, common_pb2.SearchResponse],
    ) -> common_pb2.SearchResponse:
        started = time.perf_counter()
        validate_corpus_id(request.corpus_id)
        changes: dict[str, Any] = {}
        if request.max_hops:
            changes["max_hops"] = request.max_hops
        if request.relationship_types:
            changes["relationship_types"] = list(request.relationship_types)
        cfg = merge_options(self._cfg, changes, "")
        top_k = _in_range("top_k", request.top_k or cfg.top_k, 1, self._limits.max_top_k)
        chunk_ids = [c for c in dict.fromkeys(request.chunk_ids) if c]
        if not chunk_ids:
            raise invalid("chunk_ids is empty: send the chunks to expand")
        key, life = await self._graph(request.corpus_id)
        reader = self._reader(key, life)
        kinds = await self._graph_kinds(key, life)
        if kinds.documents and not kinds.code and request.max_hops > MAX_DOCUMENT_HOPS:
            raise invalid(
                f"max_hops must be between 1 and {MAX_DOCUMENT_HOPS} on a corpus of documents,"
                f" got {request.max_hops}"
            )
        found = await expand_context(
            reader,
            self._rows.at(key),
            request.corpus_id,
            key,
            chunk_ids,
            cfg.max_hops,
            cfg.relationship_types,
            top_k,
            self._cfg,
        )
        if not kinds.documents:
            return await self._response(
                request.corpus_id, found.chunks, started, request.include_content, found.provenance
            )
        # Documents: up to max_hops, at most MAX_DOCUMENT_HOPS (asking more of a corpus of documents
        # alone is refused above; a corpus of code and documents walks its code further), over the
        # document edge kinds the request names (all when it names none).
        depth = min(cfg.max_hops, MAX_DOCUMENT_HOPS)
        walked = cfg.relationship_types if request.relationship_types else DOCUMENT_RELATIONSHIP_TYPES
        settings = DocumentSettings.of(self._cfg, self._named_types, depth, walked)
        in_documents = await document_expansion(
            reader, self._rows.at(key), request.corpus_id, key, chunk_ids, depth, top_k, settings
        )
        found = merge_results(found, in_documents, top_k)
        response = await self._response(
            request.corpus_id, found.chunks, started, request.include_content, found.provenance
        )
        for match in response.matches:
            provenance = in_documents.provenance.get(match.chunk_id)
            if provenance is not None and found.provenance.get(match.chunk_id) is provenance:
                match.expansion_hops = provenance.hops
        return response

    async def Neighbors(
        self,
        request: graph_pb2.NeighborsRequest,
        context: grpc.aio.ServicerContext[graph_pb2.NeighborsRequest, graph_pb2.EntitiesResponse],
    ) -> graph_pb2.EntitiesResponse:
        validate_corpus_id(request.corpus_id)
        direction = _edge_direction(request.direction)
        limit = _in_range("limit", request.limit or self._cfg.max_fanout, 1, self._cfg.max_neighbors)
        key, life = await self._graph(request.corpus_id)
        rel_types = (
            [await self._relation(key, life, request.relationship_type, "relationship_type")]
            if request.relationship_type
            else [*RELATIONSHIP_TYPES, *await self._imported_types(key, life)]
        )
        entity = await self._resolve(key, life, request.entity, "entity")
        found = await self._store.neighbors(key, entity.entity_id, rel_types, direction, limit)
        communities = await self._community(key, [n.entity for n in found])
        edges = await entities.neighbour_edges(self._reader(key, life), key, entity.entity_id, rel_types)
        return graph_pb2.EntitiesResponse(
            entities=[
                entities.graph_entity(
                    n.entity,
                    communities.get(n.entity.entity_id, -1),
                    n.relationship_type,
                    n.direction,
                    edges.get((n.direction, n.relationship_type, n.entity.entity_id)),
                )
                for n in found
            ]
        )

    async def PathBetween(
        self,
        request: graph_pb2.PathBetweenRequest,
        context: grpc.aio.ServicerContext[graph_pb2.PathBetweenRequest, graph_pb2.PathResponse],
    ) -> graph_pb2.PathResponse:
        validate_corpus_id(request.corpus_id)
        longest = self._cfg.max_path_hops
        max_hops = _in_range("max_hops", request.max_hops or longest, 1, longest)
        key, life = await self._graph(request.corpus_id)
        source = await self._resolve(key, life, request.source, "source")
        target = await self._resolve(key, life, request.target, "target")
        walked = [*RELATIONSHIP_TYPES, *await self._imported_types(key, life)]
        path = await self._store.shortest_path(key, source.entity_id, target.entity_id, max_hops, walked)
        if path is None:
            return graph_pb2.PathResponse(found=False)
        along = await self._store.get_entities(key, list(path.entity_ids))
        communities = await self._community(key, along)
        edges = await entities.path_edges(self._reader(key, life), key, path)
        return graph_pb2.PathResponse(
            found=True,
            entities=[entities.graph_entity(e, communities.get(e.entity_id, -1)) for e in along],
            relationship_types=list(path.relationship_types),
            edges=[entities.edge_properties(edge) for edge in edges],
        )

    async def EntityChunks(
        self,
        request: graph_pb2.EntityChunksRequest,
        context: grpc.aio.ServicerContext[graph_pb2.EntityChunksRequest, common_pb2.SearchResponse],
    ) -> common_pb2.SearchResponse:
        started = time.perf_counter()
        validate_corpus_id(request.corpus_id)
        limit = _in_range(
            "limit", request.limit or entities.DEFAULT_CHUNKS_LIMIT, 1, entities.MAX_CHUNKS_LIMIT
        )
        key, life = await self._graph(request.corpus_id)
        entity = await self._resolve(key, life, request.entity, "entity")
        scored = await entities.entity_chunks(
            self._reader(key, life), self._pool, request.corpus_id, key, entity, limit
        )
        # The chunks an entity names are what the caller asked for: always with their content.
        return await self._response(request.corpus_id, scored, started, include_content=True)

    async def EntitySearch(
        self,
        request: graph_pb2.EntitySearchRequest,
        context: grpc.aio.ServicerContext[graph_pb2.EntitySearchRequest, graph_pb2.EntitySearchResponse],
    ) -> graph_pb2.EntitySearchResponse:
        validate_corpus_id(request.corpus_id)
        max_hops = _in_range("max_hops", request.max_hops or 1, 1, entities.MAX_SEARCH_HOPS)
        limit = _in_range(
            "limit", request.limit or entities.DEFAULT_SEARCH_LIMIT, 1, entities.MAX_SEARCH_LIMIT
        )
        key, life = await self._graph(request.corpus_id)
        relation = await self._relation(key, life, request.relation, "relation") if request.relation else ""
        if relation == entities.CO_MENTIONED:
            rel_types = []
        elif relation:
            rel_types = [relation]
        else:
            rel_types = [*entities.ENTITY_RELATION_TYPES, *await self._imported_types(key, life)]
        entity = await self._resolve(key, life, request.entity, "entity")
        return await entities.entity_search(
            self._reader(key, life),
            key,
            entity,
            rel_types,
            max_hops,
            limit,
            with_co_mentions=relation in ("", entities.CO_MENTIONED),
        )

    async def ChunkEntities(
        self,
        request: graph_pb2.ChunkEntitiesRequest,
        context: grpc.aio.ServicerContext[graph_pb2.ChunkEntitiesRequest, graph_pb2.ChunkEntitiesResponse],
    ) -> graph_pb2.ChunkEntitiesResponse:
        key, life = await self._graph(request.corpus_id)
        return await entities.chunk_entities(
            self._reader(key, life), self._pool, request.corpus_id, key, request.chunk_id
        )

    async def CypherQuery(
        self,
        request: graph_pb2.CypherQueryRequest,
        context: grpc.aio.ServicerContext[graph_pb2.CypherQueryRequest, graph_pb2.CypherQueryResponse],
    ) -> graph_pb2.CypherQueryResponse:
        if not self._cfg.cypher_enabled:
            raise RequestError(grpc.StatusCode.FAILED_PRECONDITION, _CYPHER_OFF)
        validate_corpus_id(request.corpus_id)
        if not request.query.strip():
            raise invalid("query is empty: send a read-only Cypher query")
        max_rows = self._cfg.cypher_max_rows
        limit = _in_range("limit", request.limit or max_rows, 1, max_rows)
        parameters = entities.cypher_parameters(request.parameters)
        key = await self._key(request.corpus_id)
        timeout_ms = self._cfg.cypher_timeout_ms
        try:
            result = await self._store.cypher_query(
                key, request.query, parameters, max_rows=limit, timeout_ms=timeout_ms
            )
        except CypherRejected as err:
            raise RequestError(grpc.StatusCode.PERMISSION_DENIED, f"query: {err}") from None
        except CypherTimedOut as err:
            raise RequestError(
                grpc.StatusCode.DEADLINE_EXCEEDED, f"query: {err} (graph.cypher_timeout_ms)"
            ) from None
        except CypherFailed as err:
            raise invalid(f"query: {err}") from None
        return entities.cypher_response(result)

    async def Stats(
        self,
        request: graph_pb2.GraphStatsRequest,
        context: grpc.aio.ServicerContext[graph_pb2.GraphStatsRequest, graph_pb2.GraphStatsResponse],
    ) -> graph_pb2.GraphStatsResponse:
        top = _in_range("top_entities", request.top_entities or 10, 1, 100)
        key = await self._key(request.corpus_id)
        counts = await self._store.counts(key)
        mentioned = await self._store.most_mentioned(key, top)
        found = await self._store.get_entities(key, [eid for eid, _ in mentioned])
        described = await entities.describe(self._store, key, found)
        by_id = {e.entity_id: e for e in found}
        return graph_pb2.GraphStatsResponse(
            top_entities=[
                graph_pb2.TopEntity(
                    entity=entities.graph_entity(by_id[eid], -1), chunks=chunks, description=described[eid]
                )
                for eid, chunks in mentioned
                if eid in by_id
            ],
            entities_by_type={
                k.removeprefix("entities."): v for k, v in counts.items() if k.startswith("entities.")
            },
            relationships_by_type={
                k.removeprefix("relationships."): v
                for k, v in counts.items()
                if k.startswith("relationships.")
            },
            entities=counts.get("entities", 0),
            relationships=counts.get("relationships", 0),
            communities=await self._store.community_count(key),
        )


async def build(res: Resources) -> ServiceSpec:
    await asyncio.to_thread(learned.load)  # the reader's weights before the first question, not on it
    pool = await res.pool(search=True)
    versions = CorpusVersions(pool, res.cfg.postgres)
    servicer = GraphServicer(
        res.cfg.graph,
        res.cfg.limits,
        pool,
        res.graph(),
        named_entity_types=res.cfg.entities.types.values(),
        query_entities=query_recognizer(
            # torch hidden from spaCy's import only where no other service could import it meanwhile
            EntityRecognizer(res.cfg.entities, without_torch=res.hosted == ("graph",))
        )
        if res.cfg.entities.enabled
        else None,
        versions=versions,
        open_store=res.open_graph_store,
    )
    return ServiceSpec(
        full_name=graph_pb2.DESCRIPTOR.services_by_name["GraphSearch"].full_name,
        register=lambda server: graph_pb2_grpc.add_GraphSearchServicer_to_server(servicer, server),
        on_stop=servicer.close,
        warm_up=servicer.warm_up,  # after the start: a killed leg is back within its 2 s
    )
