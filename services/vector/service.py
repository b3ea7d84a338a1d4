"""VectorSearch gRPC servicer: validates, embeds the query once (cached, micro-batched), searches pgvector."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping

import asyncpg
import grpc

from services.vector.search import IndexInfo, VectorResult, read_index, vector_search
from tribrid.config import TriBridConfig
from tribrid.embedding import Embedder, EmbeddingOverloaded, QueryBatcher, QueryEmbeddingCache
from tribrid.search_common import RequestError, invalid, override, to_matches, validate_search
from tribrid.server import ServiceSpec
from tribrid.text import query_terms
from tribrid.v1 import common_pb2, vector_pb2, vector_pb2_grpc


class VectorServicer(vector_pb2_grpc.VectorSearchServicer):
    def __init__(
        self,
        cfg: TriBridConfig,
        pool: asyncpg.Pool,
        embedder: Embedder,
        pool_settings: Mapping[str, str] | None = None,
    ) -> None:
        """`pool_settings`: what the pool's connections start with (`search.session_settings`)."""
        self._cfg = cfg
        self._pool = pool
        self._pool_settings = pool_settings
        self._embedder = embedder
        vcfg = cfg.vector
        self.batcher = QueryBatcher(
            embedder, vcfg.query_batch_max, vcfg.query_batch_wait_ms, vcfg.query_queue_size
        )
        self.queries = QueryEmbeddingCache(embedder, cfg.embedding.query_cache_size, self.batcher)
        self._index: IndexInfo | None = None

    async def _check_index(self) -> None:
        """The configured metric must be the one the HNSW index was built for (checked once)."""
        if self._index is None:
            self._index = await read_index(self._pool)
        metric = self._cfg.vector.metric
        if self._index.metric is not None and self._index.metric != metric:
            raise RequestError(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"vector.metric is {metric!r} but the chunks_embedding index was built for "
                f"{self._index.metric!r}: set vector.metric={self._index.metric!r} or rebuild the index",
            )

    async def search(self, request: common_pb2.SearchRequest) -> VectorResult:
        """Validate and run one search; raises RequestError for what the caller must fix."""
        vcfg = self._cfg.vector
        params = validate_search(
            request, vcfg.top_k, self._cfg.fusion.max_top_k, self._cfg.fusion.max_query_chars
        )
        ov = request.overrides
        ef_search = override(ov, "ef_search", vcfg.ef_search)
        if not 1 <= ef_search <= vcfg.max_ef_search:
            raise invalid(f"ef_search must be between 1 and {vcfg.max_ef_search}, got {ef_search}")
        threshold = override(ov, "similarity_threshold", vcfg.similarity_threshold)
        if not (math.isfinite(threshold) and -1.0 <= threshold <= 1.0):
            raise invalid(f"similarity_threshold must be between -1 and 1, got {threshold}")
        await self._check_index()
        if not query_terms(params.query):
            # Stop words or punctuation only: their embedding is noise, and its nearest chunks
            # would be answers to nothing. Empty and OK, as in the other legs.
            return VectorResult([], "none", 0)
        try:
            vector = await self.queries.embed_query(params.query)
        except EmbeddingOverloaded as exc:
            raise RequestError(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc)) from None
        return await vector_search(
            self._pool,
            vcfg,
            params,
            vector,
            ef_search,
            threshold,
            embedding_model=self._embedder.name,
            pool_settings=self._pool_settings,
        )

    async def Search(
        self, request: common_pb2.SearchRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.SearchResponse:
        started = time.perf_counter()
        try:
            result = await self.search(request)
        except RequestError as err:
            await context.abort(err.code, err.message)
        return common_pb2.SearchResponse(
            matches=to_matches(result.chunks, common_pb2.LEG_VECTOR),
            took_ms=(time.perf_counter() - started) * 1000,
        )


def service_spec(
    cfg: TriBridConfig, pool: asyncpg.Pool, embedder: Embedder, pool_settings: Mapping[str, str] | None
) -> ServiceSpec:
    """`pool_settings`: what the pool's connections start with (`search.session_settings`), if any."""
    servicer = VectorServicer(cfg, pool, embedder, pool_settings)
    return ServiceSpec(
        full_name=vector_pb2.DESCRIPTOR.services_by_name["VectorSearch"].full_name,
        register=lambda server: vector_pb2_grpc.add_VectorSearchServicer_to_server(servicer, server),
    )
