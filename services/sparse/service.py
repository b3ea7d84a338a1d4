"""SparseSearch gRPC servicer: code-aware query terms scored by BM25 in PostgreSQL."""

from __future__ import annotations

import time

import asyncpg
import grpc

from services.sparse.bm25 import bm25_search
from tribrid.config import TriBridConfig
from tribrid.search_common import RequestError, invalid, override, to_matches, validate_search
from tribrid.server import ServiceSpec
from tribrid.stores.postgres import corpus_exists
from tribrid.text import query_terms
from tribrid.v1 import common_pb2, sparse_pb2, sparse_pb2_grpc


class SparseServicer(sparse_pb2_grpc.SparseSearchServicer):
    def __init__(self, cfg: TriBridConfig, pool: asyncpg.Pool) -> None:
        self._cfg = cfg
        self._pool = pool

    async def Search(
        self, request: common_pb2.SearchRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.SearchResponse:
        started = time.perf_counter()
        scfg = self._cfg.sparse
        try:
            params = validate_search(
                request, scfg.top_k, self._cfg.fusion.max_top_k, self._cfg.fusion.max_query_chars
            )
            ov = request.overrides
            k1 = override(ov, "bm25_k1", scfg.bm25_k1)
            b = override(ov, "bm25_b", scfg.bm25_b)
            if not (0 <= k1 <= 3 and 0 <= b <= 1):
                raise invalid(f"bm25_k1 must be in 0..3 and bm25_b in 0..1, got k1={k1} b={b}")
            found = await bm25_search(self._pool, params, query_terms(params.query), k1, b)
            if not found and not await corpus_exists(self._pool, params.corpus_id):
                raise invalid(f"unknown corpus {params.corpus_id!r}: index it first")
        except RequestError as err:
            await context.abort(err.code, err.message)
        return common_pb2.SearchResponse(
            matches=to_matches(found, common_pb2.LEG_SPARSE), took_ms=(time.perf_counter() - started) * 1000
        )


def service_spec(cfg: TriBridConfig, pool: asyncpg.Pool) -> ServiceSpec:
    servicer = SparseServicer(cfg, pool)
    return ServiceSpec(
        full_name=sparse_pb2.DESCRIPTOR.services_by_name["SparseSearch"].full_name,
        register=lambda server: sparse_pb2_grpc.add_SparseSearchServicer_to_server(servicer, server),
    )
