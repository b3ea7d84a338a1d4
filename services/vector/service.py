"""VectorSearch gRPC servicer: validates, embeds the query once (cached), searches pgvector."""

from __future__ import annotations

import time

import asyncpg
import grpc

from services.vector.search import vector_search
from tribrid.config import TriBridConfig
from tribrid.embedding import Embedder, QueryEmbeddingCache
from tribrid.search_common import RequestError, invalid, override, to_matches, validate_search
from tribrid.server import ServiceSpec
from tribrid.stores.postgres import corpus_exists
from tribrid.v1 import common_pb2, vector_pb2, vector_pb2_grpc


class VectorServicer(vector_pb2_grpc.VectorSearchServicer):
    def __init__(self, cfg: TriBridConfig, pool: asyncpg.Pool, embedder: Embedder) -> None:
        self._cfg = cfg
        self._pool = pool
        self._queries = QueryEmbeddingCache(embedder, cfg.embedding.query_cache_size)

    async def Search(
        self, request: common_pb2.SearchRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.SearchResponse:
        started = time.perf_counter()
        vcfg = self._cfg.vector
        try:
            params = validate_search(
                request, vcfg.top_k, self._cfg.fusion.max_top_k, self._cfg.fusion.max_query_chars
            )
            ov = request.overrides
            ef_search = override(ov, "ef_search", vcfg.ef_search)
            if not 1 <= ef_search <= vcfg.max_ef_search:
                raise invalid(f"ef_search must be between 1 and {vcfg.max_ef_search}, got {ef_search}")
            threshold = (
                ov.similarity_threshold if ov.HasField("similarity_threshold") else vcfg.similarity_threshold
            )
            vector = await self._queries.embed_query(params.query)
            found = await vector_search(self._pool, vcfg, params, vector, ef_search, threshold)
            if not found and not await corpus_exists(self._pool, params.corpus_id):
                raise invalid(f"unknown corpus {params.corpus_id!r}: index it first")
        except RequestError as err:
            await context.abort(err.code, err.message)
        return common_pb2.SearchResponse(
            matches=to_matches(found, common_pb2.LEG_VECTOR), took_ms=(time.perf_counter() - started) * 1000
        )


def service_spec(cfg: TriBridConfig, pool: asyncpg.Pool, embedder: Embedder) -> ServiceSpec:
    servicer = VectorServicer(cfg, pool, embedder)
    return ServiceSpec(
        full_name=vector_pb2.DESCRIPTOR.services_by_name["VectorSearch"].full_name,
        register=lambda server: vector_pb2_grpc.add_VectorSearchServicer_to_server(servicer, server),
    )
