"""GraphSearch gRPC servicer."""

from __future__ import annotations

import time

import asyncpg
import grpc

from services.graph.search import GraphSettings, graph_search
from tribrid.config import ENTITY_TYPES, RELATIONSHIP_TYPES, TriBridConfig
from tribrid.graphstore import GraphStore
from tribrid.search_common import (
    RequestError,
    invalid,
    override,
    to_matches,
    validate_corpus_id,
    validate_search,
)
from tribrid.server import ServiceSpec
from tribrid.stores.postgres import corpus_exists
from tribrid.v1 import common_pb2, graph_pb2, graph_pb2_grpc


def _choose(requested: list[str], default: list[str], allowed: tuple[str, ...], what: str) -> list[str]:
    if not requested:
        return default
    unknown = sorted(set(requested) - set(allowed))
    if unknown:
        raise invalid(f"unknown {what} {unknown}; allowed: {', '.join(allowed)}")
    return requested


class GraphServicer(graph_pb2_grpc.GraphSearchServicer):
    def __init__(self, cfg: TriBridConfig, pool: asyncpg.Pool, store: GraphStore) -> None:
        self._cfg = cfg
        self._pool = pool
        self._store = store

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
            relationship_types=_choose(
                list(ov.relationship_types),
                list(gcfg.relationship_types),
                RELATIONSHIP_TYPES,
                "relationship_types",
            ),
            hop_decay=gcfg.hop_decay,
            max_seeds=gcfg.max_seeds,
            max_expansion=gcfg.max_expansion,
        )

    async def Search(
        self, request: common_pb2.SearchRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.SearchResponse:
        started = time.perf_counter()
        try:
            params = validate_search(
                request, self._cfg.graph.top_k, self._cfg.fusion.max_top_k, self._cfg.fusion.max_query_chars
            )
            settings = self._settings(request.overrides)
            if not await corpus_exists(self._pool, params.corpus_id):
                raise invalid(f"unknown corpus {params.corpus_id!r}: index it first")
            found = await graph_search(self._store, self._pool, params, settings)
        except RequestError as err:
            await context.abort(err.code, err.message)
        return common_pb2.SearchResponse(
            matches=to_matches(found, common_pb2.LEG_GRAPH), took_ms=(time.perf_counter() - started) * 1000
        )

    async def Stats(
        self, request: graph_pb2.GraphStatsRequest, context: grpc.aio.ServicerContext
    ) -> graph_pb2.GraphStatsResponse:
        try:
            validate_corpus_id(request.corpus_id)
        except RequestError as err:
            await context.abort(err.code, err.message)
        counts = await self._store.counts(request.corpus_id)
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
        )


def service_spec(cfg: TriBridConfig, pool: asyncpg.Pool, store: GraphStore) -> ServiceSpec:
    servicer = GraphServicer(cfg, pool, store)
    return ServiceSpec(
        full_name=graph_pb2.DESCRIPTOR.services_by_name["GraphSearch"].full_name,
        register=lambda server: graph_pb2_grpc.add_GraphSearchServicer_to_server(servicer, server),
    )
