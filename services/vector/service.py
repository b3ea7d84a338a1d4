"""VectorSearch gRPC servicer: embeds the query once (cached, micro-batched), searches pgvector."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping

import asyncpg
import grpc

from services.vector.in_memory import Snapshot, read_snapshot, search_snapshot
from services.vector.search import VectorResult, index_metrics, session_settings, vector_search
from tribrid.config import LimitsConfig, VectorConfig
from tribrid.coverage import Coverage, model_coverage
from tribrid.embedding import Embedder, EmbeddingOverloaded, QueryBatcher, QueryEmbeddingCache
from tribrid.options import RequestError, with_options
from tribrid.resources import Resources
from tribrid.search_common import chunk_filter, leg_response, validate_search
from tribrid.server import ServiceSpec
from tribrid.stores.corpus_versions import CorpusVersions
from tribrid.stores.postgres import corpus_vector_index
from tribrid.stores.small_corpora import SmallCorpora
from tribrid.text import PROSE_STOPWORDS, has_terms
from tribrid.v1 import common_pb2, legs_pb2, vector_pb2, vector_pb2_grpc

# The least coverage reported: 0 on the wire means "not measured" (SearchResponse.coverage).
_LEAST_READ = 0.01


class VectorServicer(vector_pb2_grpc.VectorSearchServicer):
    def __init__(
        self,
        cfg: VectorConfig,
        limits: LimitsConfig,
        pool: asyncpg.Pool,
        embedder: Embedder,
        query_cache_size: int,
        pool_settings: Mapping[str, str] | None = None,
        query_prefix: str = "",
        coverage: Coverage | None = None,
        small_corpora: SmallCorpora[Snapshot] | None = None,
    ) -> None:
        """`pool_settings`: what the pool's connections start with (`search.session_settings`);
        `query_prefix`: embedding.query_prefix; `coverage`: how much of a question the model reads;
        `small_corpora`: the small corpora's vectors in memory (None: every scan in PostgreSQL)."""
        self._cfg = cfg
        self._limits = limits
        self._pool = pool
        self._pool_settings = pool_settings
        self._embedder = embedder
        self._coverage = coverage
        self._small_corpora = small_corpora
        self.batcher = QueryBatcher(
            embedder, cfg.query_batch_max, cfg.query_batch_wait_ms, cfg.query_queue_size
        )
        self.queries = QueryEmbeddingCache(embedder, query_cache_size, self.batcher, query_prefix)
        self._index_metrics: dict[str, str] | None = None

    async def _check_index(self, corpus_id: str) -> None:
        """The configured metric must be the one the corpus's own HNSW index was built for (the
        indexes read once; a corpus without one is scanned exactly, whatever the metric)."""
        if self._index_metrics is None:
            self._index_metrics = await index_metrics(self._pool)
        metric = self._cfg.metric
        index = corpus_vector_index(corpus_id)
        built = self._index_metrics.get(index, metric)
        if built != metric:
            raise RequestError(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"vector.metric is {metric!r} but the HNSW index {index} of corpus {corpus_id!r} was "
                f"built for {built!r}: set vector.metric={built!r}, or drop the index and index the "
                "corpus again",
            )

    async def search(self, request: common_pb2.SearchRequest) -> VectorResult:
        """Run one search; raises RequestError for what the caller must fix."""
        cfg = with_options(self._cfg, request.options.vector, "options.vector")
        params = validate_search(request, cfg.top_k, self._limits)
        await self._check_index(params.corpus_id)
        if not has_terms(params.query, PROSE_STOPWORDS):
            # Stop words or punctuation only: their embedding is noise, and its nearest chunks
            # would be answers to nothing. Empty and OK, as in the other legs. Any other word in
            # any script is a query (a Chinese question has no ASCII terms; "function" is a word).
            return VectorResult([], "none", 0)
        try:
            vector = await self.queries.embed_query(params.query)
        except EmbeddingOverloaded as exc:
            raise RequestError(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc)) from None
        if self._small_corpora is not None and not chunk_filter(params, first_arg=1).clauses:
            snapshot = await self._small_corpora.get(params.corpus_id)
            if snapshot is not None:
                return search_snapshot(snapshot, cfg, params, vector, self._embedder.name)
        return await vector_search(
            self._pool,
            cfg,
            params,
            vector,
            embedding_model=self._embedder.name,
            pool_settings=self._pool_settings,
        )

    async def Search(
        self,
        request: common_pb2.SearchRequest,
        context: grpc.aio.ServicerContext[common_pb2.SearchRequest, common_pb2.SearchResponse],
    ) -> common_pb2.SearchResponse:
        started = time.perf_counter()
        result = await self.search(request)
        response = await leg_response(
            self._pool,
            request.corpus_id,
            result.chunks,
            legs_pb2.LEG_VECTOR,
            started,
            request.include_content,
        )
        read = [share for share in (self._question_read(request.query), result.coverage) if share is not None]
        if read:
            response.coverage = max(min(read), _LEAST_READ)
        return response

    def _question_read(self, query: str) -> float | None:
        return None if self._coverage is None else self._coverage.of(query)


async def build(res: Resources) -> ServiceSpec:
    cfg = res.cfg
    settings = session_settings(cfg.vector)
    pool = await res.pool(settings, search=True)
    int8 = cfg.vector.query_model == "int8"
    embedder = await asyncio.to_thread(res.embedder, int8, cfg.vector.query_threads)
    servicer = VectorServicer(
        cfg.vector,
        cfg.limits,
        pool,
        embedder,
        cfg.embedding.query_cache_size,
        settings,
        query_prefix=cfg.embedding.query_prefix,
        coverage=await asyncio.to_thread(model_coverage, cfg.embedding),
        small_corpora=SmallCorpora(
            pool,
            CorpusVersions(pool, cfg.postgres),
            cfg.vector.exact_scan_max_rows,
            cfg.vector.in_memory_mb << 20,
            read_snapshot,
        ),
    )
    return ServiceSpec(
        full_name=vector_pb2.DESCRIPTOR.services_by_name["VectorSearch"].full_name,
        register=lambda server: vector_pb2_grpc.add_VectorSearchServicer_to_server(servicer, server),
    )
