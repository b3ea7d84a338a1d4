"""SparseSearch gRPC servicer: code-aware query terms scored by BM25 in PostgreSQL."""

from __future__ import annotations

import time

import asyncpg
import grpc

from services.sparse.bm25 import Bm25Result, bm25_plain, bm25_tsquery
from tribrid.config import SPARSE_QUERY_MODES, TriBridConfig
from tribrid.search_common import RequestError, invalid, override, to_matches, validate_search
from tribrid.server import ServiceSpec
from tribrid.stores.postgres import corpus_exists
from tribrid.text import boolean_query, parse_query, phrase_query
from tribrid.v1 import common_pb2, sparse_pb2, sparse_pb2_grpc


class SparseServicer(sparse_pb2_grpc.SparseSearchServicer):
    def __init__(self, cfg: TriBridConfig, pool: asyncpg.Pool) -> None:
        self._cfg = cfg
        self._pool = pool

    async def search(self, request: common_pb2.SearchRequest) -> Bm25Result:
        """Validate and run one search; raises RequestError for what the caller must fix."""
        scfg = self._cfg.sparse
        params = validate_search(
            request, scfg.top_k, self._cfg.fusion.max_top_k, self._cfg.fusion.max_query_chars
        )
        ov = request.overrides
        k1 = override(ov, "bm25_k1", scfg.bm25_k1)
        b = override(ov, "bm25_b", scfg.bm25_b)
        if not (0 <= k1 <= 3 and 0 <= b <= 1):  # also false for NaN
            raise invalid(f"bm25_k1 must be in 0..3 and bm25_b in 0..1, got k1={k1} b={b}")
        mode = override(ov, "query_mode", scfg.query_mode) or scfg.query_mode
        if mode not in SPARSE_QUERY_MODES:
            raise invalid(f"query_mode must be one of {', '.join(SPARSE_QUERY_MODES)}, got {mode!r}")
        if mode == "plain":
            result = await bm25_plain(
                self._pool,
                params,
                parse_query(params.query),
                k1,
                b,
                scfg.relax_max_terms,
                scfg.any_term_fallback,
            )
        else:
            tsq = phrase_query(params.query) if mode == "phrase" else boolean_query(params.query)
            # stop words or punctuation only: nothing to look for, which is not an error
            result = (
                Bm25Result([]) if tsq is None else await bm25_tsquery(self._pool, params, tsq, mode, k1, b)
            )
        if not result.chunks and not await corpus_exists(self._pool, params.corpus_id):
            raise invalid(f"unknown corpus {params.corpus_id!r}: index it first")
        return result

    async def Search(
        self, request: common_pb2.SearchRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.SearchResponse:
        started = time.perf_counter()
        try:
            result = await self.search(request)
        except RequestError as err:
            await context.abort(err.code, err.message)
        return common_pb2.SearchResponse(
            matches=to_matches(result.chunks, common_pb2.LEG_SPARSE),
            took_ms=(time.perf_counter() - started) * 1000,
        )


def service_spec(cfg: TriBridConfig, pool: asyncpg.Pool) -> ServiceSpec:
    servicer = SparseServicer(cfg, pool)
    return ServiceSpec(
        full_name=sparse_pb2.DESCRIPTOR.services_by_name["SparseSearch"].full_name,
        register=lambda server: sparse_pb2_grpc.add_SparseSearchServicer_to_server(servicer, server),
    )
