"""GraphSearch gRPC servicer.

Every call reads the corpus's current index generation and works on that generation's graph
(graph_key(corpus_id, generation)); an unknown corpus is INVALID_ARGUMENT, as in Search.
"""

from __future__ import annotations

import time

import asyncpg
import grpc

from services.graph.external import ExternalNames
from services.graph.per_graph import PerGraph
from services.graph.search import (
    QUERY_DIRECTIONS,
    GraphSettings,
    QueryDirection,
    expand_context,
    graph_search,
)
from tribrid.config import ENTITY_TYPES, RELATIONSHIP_TYPES, TriBridConfig
from tribrid.graphstore import GraphStore
from tribrid.graphstore.base import DIRECTIONS, Direction, GraphReader, graph_key
from tribrid.graphstore.snapshot import GraphSnapshot
from tribrid.models import Entity
from tribrid.search_common import (
    RequestError,
    ScoredChunk,
    invalid,
    override,
    to_matches,
    validate_corpus_id,
    validate_search,
)
from tribrid.server import ServiceSpec
from tribrid.stores.postgres import fetch_chunks, graph_version
from tribrid.v1 import common_pb2, graph_pb2, graph_pb2_grpc

MAX_PATH_HOPS = 4
MAX_NEIGHBOURS = 1000


def _choose(requested: list[str], default: list[str], allowed: tuple[str, ...], what: str) -> list[str]:
    if not requested:
        return default
    unknown = sorted(set(requested) - set(allowed))
    if unknown:
        raise invalid(f"unknown {what} {unknown}; allowed: {', '.join(allowed)}")
    return requested


def not_found(message: str) -> RequestError:
    return RequestError(grpc.StatusCode.NOT_FOUND, message)


def _query_direction(value: str) -> QueryDirection:
    for known in QUERY_DIRECTIONS:
        if value == known:
            return known
    raise invalid(f"unknown direction {value!r}; allowed: {', '.join(QUERY_DIRECTIONS)}")


def _edge_direction(value: str) -> Direction:
    for known in DIRECTIONS:
        if (value or "both") == known:
            return known
    raise invalid(f"unknown direction {value!r}; allowed: {', '.join(DIRECTIONS)}")


def _graph_entity(
    entity: Entity, community: int, relationship_type: str = "", direction: str = ""
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
    )


class GraphServicer(graph_pb2_grpc.GraphSearchServicer):
    def __init__(self, cfg: TriBridConfig, pool: asyncpg.Pool, store: GraphStore) -> None:
        self._cfg = cfg
        self._pool = pool
        self._store = store
        self._external = ExternalNames()
        # None: the graph is too big to hold, searches walk it in the store.
        self._snapshots: PerGraph[GraphSnapshot | None] = PerGraph(cfg.graph.snapshot_max_graphs)

    # --- shared checks ----------------------------------------------------------------------------

    def _settings(self, ov: common_pb2.SearchOverrides) -> GraphSettings:
        gcfg = self._cfg.graph
        max_hops = override(ov, "max_hops", gcfg.max_hops)
        if not 1 <= max_hops <= 5:
            raise invalid(f"max_hops must be between 1 and 5, got {max_hops}")
        return GraphSettings(
            max_hops=max_hops,
            entity_types=_choose(
                list(ov.entity_types), list(gcfg.entity_types), ENTITY_TYPES, "entity_types"
            ),
            relationship_types=self._relationship_types(list(ov.relationship_types)),
            hop_decay=gcfg.hop_decay,
            max_seeds=gcfg.max_seeds,
            max_expansion=gcfg.max_expansion,
            direction=_query_direction(override(ov, "direction", "auto") or "auto"),
            explicit_relationship_types=bool(ov.relationship_types),
            max_fanout=gcfg.max_fanout,
            path_bonus=gcfg.path_bonus,
            community_boost=gcfg.community_boost if gcfg.include_communities else 0.0,
        )

    def _relationship_types(self, requested: list[str]) -> list[str]:
        return _choose(
            requested,
            list(self._cfg.graph.relationship_types),
            RELATIONSHIP_TYPES,
            "relationship_types",
        )

    async def _graph(self, corpus_id: str) -> tuple[str, str]:
        """The committed graph's key, and the life of its corpus (`graph_version`)."""
        validate_corpus_id(corpus_id)
        version = await graph_version(self._pool, corpus_id)
        if version is None:
            raise invalid(f"unknown corpus {corpus_id!r}: index it first")
        return graph_key(corpus_id, version[0]), version[1]

    async def _key(self, corpus_id: str) -> str:
        return (await self._graph(corpus_id))[0]

    def _reader(self, key: str, life: str) -> GraphReader:
        """What searches of the committed graph under `key` read: the graph in memory, read once
        per generation and then searched without a round trip per traversal step or entity (see
        graphstore.snapshot); else the store itself. The store answers while the snapshot loads
        (searches after a commit don't wait for it), and for graphs over `snapshot_max_entities`."""
        snapshot = self._snapshots.ready(key, life, lambda: self._load_snapshot(key))
        return self._store if snapshot is None else snapshot

    async def _load_snapshot(self, key: str) -> GraphSnapshot | None:
        limit = self._cfg.graph.snapshot_max_entities
        if limit == 0 or (await self._store.counts(key))["entities"] > limit:
            return None
        return await GraphSnapshot.load(
            self._store, key, fulltext_cache_terms=self._cfg.graph.fulltext_cache_terms
        )

    async def _resolve(self, key: str, ref: graph_pb2.EntityRef, what: str = "entity") -> Entity:
        if ref.entity_id:
            found = await self._store.get_entities(key, [ref.entity_id])
            if not found:
                raise not_found(f"{what} {ref.entity_id!r} not found")
            return found[0]
        if ref.qualified_name:
            named = await self._store.find_by_qualified_name(key, ref.qualified_name)
            if not named:
                raise not_found(f"{what} {ref.qualified_name!r} not found")
            return named[0]
        raise invalid(f"{what}: set entity_id or qualified_name")

    async def _community(self, key: str, entities: list[Entity]) -> dict[str, int]:
        return await self._store.community_of(key, [e.entity_id for e in entities])

    # --- RPCs -------------------------------------------------------------------------------------

    async def Search(
        self, request: common_pb2.SearchRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.SearchResponse:
        started = time.perf_counter()
        try:
            params = validate_search(
                request, self._cfg.graph.top_k, self._cfg.fusion.max_top_k, self._cfg.fusion.max_query_chars
            )
            settings = self._settings(request.overrides)
            key, life = await self._graph(params.corpus_id)
            reader = self._reader(key, life)
            external = self._external.of(key, life)
            found = await graph_search(reader, self._pool, key, params, settings, external)
        except RequestError as err:
            await context.abort(err.code, err.message)
        return common_pb2.SearchResponse(
            matches=to_matches(found.chunks, common_pb2.LEG_GRAPH, found.provenance),
            took_ms=(time.perf_counter() - started) * 1000,
        )

    async def ExpandContext(
        self, request: graph_pb2.ExpandContextRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.SearchResponse:
        started = time.perf_counter()
        gcfg = self._cfg.graph
        try:
            validate_corpus_id(request.corpus_id)
            max_hops = request.max_hops or gcfg.max_hops
            if not 1 <= max_hops <= 5:
                raise invalid(f"max_hops must be between 1 and 5, got {max_hops}")
            top_k = request.top_k or gcfg.top_k
            if not 1 <= top_k <= self._cfg.fusion.max_top_k:
                raise invalid(f"top_k must be between 1 and {self._cfg.fusion.max_top_k}, got {top_k}")
            rel_types = self._relationship_types(list(request.relationship_types))
            chunk_ids = [c for c in dict.fromkeys(request.chunk_ids) if c]
            if not chunk_ids:
                raise invalid("chunk_ids is empty: send the chunks to expand")
            key, life = await self._graph(request.corpus_id)
            settings = self._settings(common_pb2.SearchOverrides())
            found = await expand_context(
                self._reader(key, life),
                self._pool,
                request.corpus_id,
                key,
                chunk_ids,
                max_hops,
                rel_types,
                top_k,
                settings,
            )
        except RequestError as err:
            await context.abort(err.code, err.message)
        return common_pb2.SearchResponse(
            matches=to_matches(found.chunks, common_pb2.LEG_GRAPH, found.provenance),
            took_ms=(time.perf_counter() - started) * 1000,
        )

    async def Neighbors(
        self, request: graph_pb2.NeighborsRequest, context: grpc.aio.ServicerContext
    ) -> graph_pb2.EntitiesResponse:
        try:
            validate_corpus_id(request.corpus_id)
            direction = _edge_direction(request.direction)
            rel_types = (
                self._relationship_types([request.relationship_type])
                if request.relationship_type
                else list(RELATIONSHIP_TYPES)
            )
            limit = request.limit or self._cfg.graph.max_fanout
            if not 1 <= limit <= MAX_NEIGHBOURS:
                raise invalid(f"limit must be between 1 and {MAX_NEIGHBOURS}, got {limit}")
            key = await self._key(request.corpus_id)
            entity = await self._resolve(key, request.entity)
            found = await self._store.neighbors(key, entity.entity_id, rel_types, direction, limit)
            communities = await self._community(key, [n.entity for n in found])
        except RequestError as err:
            await context.abort(err.code, err.message)
        return graph_pb2.EntitiesResponse(
            entities=[
                _graph_entity(
                    n.entity, communities.get(n.entity.entity_id, -1), n.relationship_type, n.direction
                )
                for n in found
            ]
        )

    async def PathBetween(
        self, request: graph_pb2.PathBetweenRequest, context: grpc.aio.ServicerContext
    ) -> graph_pb2.PathResponse:
        try:
            validate_corpus_id(request.corpus_id)
            max_hops = request.max_hops or MAX_PATH_HOPS
            if not 1 <= max_hops <= MAX_PATH_HOPS:
                raise invalid(f"max_hops must be between 1 and {MAX_PATH_HOPS}, got {max_hops}")
            key = await self._key(request.corpus_id)
            source = await self._resolve(key, request.source, "source")
            target = await self._resolve(key, request.target, "target")
            path = await self._store.shortest_path(
                key, source.entity_id, target.entity_id, max_hops, list(RELATIONSHIP_TYPES)
            )
            if path is None:
                return graph_pb2.PathResponse(found=False)
            steps = list(path.relationship_types)
            entities = await self._store.get_entities(key, list(path.entity_ids))
            communities = await self._community(key, entities)
        except RequestError as err:
            await context.abort(err.code, err.message)
        return graph_pb2.PathResponse(
            found=True,
            entities=[_graph_entity(e, communities.get(e.entity_id, -1)) for e in entities],
            relationship_types=steps,
        )

    async def EntityChunks(
        self, request: graph_pb2.EntityChunksRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.SearchResponse:
        started = time.perf_counter()
        try:
            validate_corpus_id(request.corpus_id)
            key = await self._key(request.corpus_id)
            entity = await self._resolve(key, request.entity)
            rows = await fetch_chunks(
                self._pool, request.corpus_id, [entity.chunk_id] if entity.chunk_id else []
            )
        except RequestError as err:
            await context.abort(err.code, err.message)
        scored = [ScoredChunk(row, 1.0, f"entity={entity.qualified_name}") for row in rows.values()]
        return common_pb2.SearchResponse(
            matches=to_matches(scored, common_pb2.LEG_GRAPH), took_ms=(time.perf_counter() - started) * 1000
        )

    async def Stats(
        self, request: graph_pb2.GraphStatsRequest, context: grpc.aio.ServicerContext
    ) -> graph_pb2.GraphStatsResponse:
        try:
            key = await self._key(request.corpus_id)
        except RequestError as err:
            await context.abort(err.code, err.message)
        counts = await self._store.counts(key)
        return graph_pb2.GraphStatsResponse(
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


def service_spec(cfg: TriBridConfig, pool: asyncpg.Pool, store: GraphStore) -> ServiceSpec:
    servicer = GraphServicer(cfg, pool, store)
    return ServiceSpec(
        full_name=graph_pb2.DESCRIPTOR.services_by_name["GraphSearch"].full_name,
        register=lambda server: graph_pb2_grpc.add_GraphSearchServicer_to_server(servicer, server),
    )
