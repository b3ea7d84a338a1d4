"""SparseSearch gRPC servicer: code-aware query terms scored by BM25 in PostgreSQL."""

from __future__ import annotations

import asyncio
import time

import asyncpg
import grpc

from services.sparse.bm25 import SESSION_SETTINGS, Bm25Result, bm25_any, bm25_plain, bm25_tsquery
from services.sparse.in_memory import Snapshot, bm25_any_in_memory, read_snapshot
from tribrid.config import LimitsConfig, SparseConfig
from tribrid.corpus_profile import CorpusProfiles
from tribrid.options import not_found, with_options
from tribrid.resources import Resources
from tribrid.search_common import chunk_filter, leg_response, validate_search
from tribrid.server import ServiceSpec
from tribrid.stores.corpus_versions import CorpusVersions
from tribrid.stores.postgres import corpus_exists
from tribrid.stores.small_corpora import SmallCorpora
from tribrid.text import (
    STOPWORDS,
    boolean_query,
    load_segmenter,
    needs_segmenter,
    parse_query,
    phrase_query,
    stopwords_for,
)
from tribrid.v1 import common_pb2, legs_pb2, sparse_pb2, sparse_pb2_grpc


class SparseServicer(sparse_pb2_grpc.SparseSearchServicer):
    def __init__(
        self,
        cfg: SparseConfig,
        limits: LimitsConfig,
        pool: asyncpg.Pool,
        small_corpora: SmallCorpora[Snapshot] | None = None,
    ) -> None:
        """`small_corpora`: the small corpora's postings in memory (None: every search in PostgreSQL)."""
        self._cfg = cfg
        self._limits = limits
        self._pool = pool
        self._profiles = CorpusProfiles(pool)
        self._small_corpora = small_corpora

    async def warm_up(self) -> bool:
        """Load jieba's dictionary now when any corpus holds Chinese terms, so the first Chinese
        question after a start does not wait for it (0.8 s of a 2 s leg deadline here). True when
        it loaded."""
        chinese = await self._pool.fetchval(
            "SELECT EXISTS (SELECT 1 FROM term_stats WHERE term ~ '[\u4e00-\u9fff]')"
        )
        if not chinese:
            return False
        await asyncio.to_thread(load_segmenter)
        return True

    async def search(self, request: common_pb2.SearchRequest) -> Bm25Result:
        """Run one search; raises RequestError for what the caller must fix."""
        cfg = with_options(self._cfg, request.options.sparse, "options.sparse")
        params = validate_search(request, cfg.top_k, self._limits)
        k1, b = cfg.bm25_k1, cfg.bm25_b
        if needs_segmenter(params.query):
            await asyncio.to_thread(load_segmenter)  # jieba's dictionary, once: not on the event loop
        profile = await self._profiles.get(params.corpus_id)
        stopwords = STOPWORDS if profile is None else stopwords_for(profile.prose_share)
        fold = cfg.fold_accents
        if cfg.query_mode == "any":
            terms = parse_query(params.query, stopwords, fold)
            kept = None
            if self._small_corpora is not None and not chunk_filter(params, first_arg=1).clauses:
                kept = await self._small_corpora.get(params.corpus_id)
            if kept is not None:  # the corpus exists: its snapshot is of its committed version
                return bm25_any_in_memory(kept, terms.all, k1, b, params.top_k)
            result = await bm25_any(self._pool, params, terms, k1, b)
        elif cfg.query_mode == "plain":
            result = await bm25_plain(
                self._pool,
                params,
                parse_query(params.query, stopwords, fold),
                k1,
                b,
                cfg.relax_max_terms,
                cfg.any_term_fallback,
            )
        else:
            mode = cfg.query_mode
            tsq = (
                phrase_query(params.query, stopwords, fold)
                if mode == "phrase"
                else boolean_query(params.query, stopwords, fold)
            )
            # stop words or punctuation only: nothing to look for, which is not an error
            result = (
                Bm25Result([]) if tsq is None else await bm25_tsquery(self._pool, params, tsq, mode, k1, b)
            )
        if not result.chunks and not await corpus_exists(self._pool, params.corpus_id):
            raise not_found(f"corpus {params.corpus_id!r} not found: index it first")
        return result

    async def Search(
        self,
        request: common_pb2.SearchRequest,
        context: grpc.aio.ServicerContext[common_pb2.SearchRequest, common_pb2.SearchResponse],
    ) -> common_pb2.SearchResponse:
        started = time.perf_counter()
        result = await self.search(request)
        return await leg_response(
            self._pool,
            request.corpus_id,
            result.chunks,
            legs_pb2.LEG_SPARSE,
            started,
            request.include_content,
        )


async def build(res: Resources) -> ServiceSpec:
    cfg = res.cfg.sparse
    pool = await res.pool(SESSION_SETTINGS, search=True)
    small_corpora = SmallCorpora(
        pool,
        CorpusVersions(pool, res.cfg.postgres),
        cfg.in_memory_max_chunks,
        cfg.in_memory_mb << 20,
        read_snapshot,
    )
    servicer = SparseServicer(cfg, res.cfg.limits, pool, small_corpora)
    return ServiceSpec(
        full_name=sparse_pb2.DESCRIPTOR.services_by_name["SparseSearch"].full_name,
        register=lambda server: sparse_pb2_grpc.add_SparseSearchServicer_to_server(servicer, server),
        warm_up=servicer.warm_up,
    )
