"""Gateway behaviour when a leg misbehaves: a deliberately hanging leg next to the real ones, and a
leg answering UNAVAILABLE (a leg process killed under load and the graph database stopped:
tests/e2e/test_gateway_faults.py).

Real servers everywhere; fakes only for the injected faults. The degraded answers are checked for
the response status, the partial flag, the LegReports, the healthy legs' results, and that the
answer came within the caller's deadline (plus a loose margin for shared CI cores).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import grpc
import pytest

from services.fusion.gateway import Gateway, LegClient
from tests.stack import SAMPLE_CORPUS, Stack, fusion_options
from tribrid.legs import BY_NAME, LEGS
from tribrid.options import RequestError
from tribrid.server import RunningServer, ServiceSpec, start_server
from tribrid.stores.postgres import create_pool
from tribrid.v1 import common_pb2, fusion_pb2, indexer_pb2, legs_pb2, sparse_pb2_grpc, vector_pb2_grpc


class HangingVector(vector_pb2_grpc.VectorSearchServicer):
    """An injected fault: a vector leg that never answers in time."""

    async def Search(
        self,
        request: common_pb2.SearchRequest,
        context: grpc.aio.ServicerContext[common_pb2.SearchRequest, common_pb2.SearchResponse],
    ) -> common_pb2.SearchResponse:
        await asyncio.sleep(30)
        return common_pb2.SearchResponse()


@pytest.fixture
async def hanging_vector() -> AsyncIterator[RunningServer]:
    servicer = HangingVector()
    spec = ServiceSpec(
        "tribrid.v1.VectorSearch", lambda s: vector_pb2_grpc.add_VectorSearchServicer_to_server(servicer, s)
    )
    server = await start_server([spec], "127.0.0.1", 0)
    yield server
    await server.stop(0)


async def gateway_with(stack: Stack, vector_port: int) -> Gateway:
    ports = {
        "vector": vector_port,
        "sparse": stack.servers["sparse"].port,
        "graph": stack.servers["graph"].port,
    }
    legs = {leg: LegClient(BY_NAME[leg], f"127.0.0.1:{port}") for leg, port in ports.items()}
    return Gateway(stack.cfg.fusion, stack.cfg.limits, legs, await stack.resources.pool())


async def test_hanging_leg_is_dropped_at_its_deadline(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress, hanging_vector: RunningServer
) -> None:
    gateway = await gateway_with(stack, hanging_vector.port)
    request = common_pb2.SearchRequest(
        corpus_id=SAMPLE_CORPUS, query="validate_card_number", options=fusion_options(leg_timeout_ms=500)
    )
    started = time.monotonic()
    reply = await gateway.search(request, remaining_s=10.0)
    elapsed = time.monotonic() - started
    await gateway.close()

    status = {r.leg: r.status for r in reply.legs}
    assert status == {
        legs_pb2.LEG_VECTOR: fusion_pb2.LEG_STATUS_TIMEOUT,
        legs_pb2.LEG_SPARSE: fusion_pb2.LEG_STATUS_OK,
        legs_pb2.LEG_GRAPH: fusion_pb2.LEG_STATUS_OK,
    }
    assert reply.partial
    assert "DEADLINE_EXCEEDED" in next(r.error for r in reply.legs if r.leg == legs_pb2.LEG_VECTOR)
    assert reply.matches[0].symbol == "shop.payment.validate_card_number"
    assert all(e.leg != legs_pb2.LEG_VECTOR for m in reply.matches for e in m.explain)
    assert elapsed < 5.0  # dropped at ~0.5 s, far before the hanging leg's 30 s (loose: shared CI cores)


async def test_caller_deadline_caps_leg_budget(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress, hanging_vector: RunningServer
) -> None:
    gateway = await gateway_with(stack, hanging_vector.port)
    request = common_pb2.SearchRequest(corpus_id=SAMPLE_CORPUS, query="cart")
    reply = await gateway.search(request, remaining_s=0.4)  # configured leg timeout is 2 s
    budget = next(r.budget_ms for r in reply.legs if r.leg == legs_pb2.LEG_VECTOR)
    assert budget <= 400
    with pytest.raises(RequestError) as excinfo:
        await gateway.search(request, remaining_s=0.001)
    assert excinfo.value.code == grpc.StatusCode.DEADLINE_EXCEEDED
    await gateway.close()


async def test_all_legs_down_is_unavailable(stack: Stack, sample_corpus: indexer_pb2.IndexProgress) -> None:
    dead = {leg.name: LegClient(leg, "127.0.0.1:1") for leg in LEGS}
    gateway = Gateway(stack.cfg.fusion, stack.cfg.limits, dead, await stack.resources.pool())
    with pytest.raises(RequestError) as excinfo:
        await gateway.search(common_pb2.SearchRequest(corpus_id=SAMPLE_CORPUS, query="cart"), remaining_s=5)
    assert excinfo.value.code == grpc.StatusCode.UNAVAILABLE
    assert "vector" in excinfo.value.message and "graph" in excinfo.value.message
    await gateway.close()


async def test_unreadable_content_is_unavailable(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress
) -> None:
    """The legs answer, then the content read fails: UNAVAILABLE naming why, not an internal error."""
    cfg = stack.cfg
    closed = await create_pool(cfg.postgres, cfg.embedding.dim, cfg.vector, max_size=1)
    await closed.close()
    legs = {leg.name: LegClient(leg, f"127.0.0.1:{stack.servers[leg.name].port}") for leg in LEGS}
    gateway = Gateway(cfg.fusion, cfg.limits, legs, closed)
    with pytest.raises(RequestError) as excinfo:
        await gateway.search(common_pb2.SearchRequest(corpus_id=SAMPLE_CORPUS, query="cart"), remaining_s=10)
    await gateway.close()
    assert excinfo.value.code == grpc.StatusCode.UNAVAILABLE
    assert "content could not be read: InterfaceError" in excinfo.value.message


# --- a leg answering UNAVAILABLE -------------------------------------------------------------------

MARGIN_S = 3.0  # loose: two shared cores
OK = fusion_pb2.LEG_STATUS_OK
FAILED = (fusion_pb2.LEG_STATUS_ERROR, fusion_pb2.LEG_STATUS_TIMEOUT)


def statuses(reply: fusion_pb2.FusionSearchResponse) -> dict[int, int]:
    return {r.leg: r.status for r in reply.legs}


async def gateway_to(stack: Stack, **ports: int) -> Gateway:
    legs = {
        leg.name: LegClient(leg, f"127.0.0.1:{ports.get(leg.name, stack.servers[leg.name].port)}")
        for leg in LEGS
    }
    return Gateway(stack.cfg.fusion, stack.cfg.limits, legs, await stack.resources.pool())


def search_request(query: str = "validate_card_number") -> common_pb2.SearchRequest:
    return common_pb2.SearchRequest(
        corpus_id=SAMPLE_CORPUS, query=query, options=fusion_options(leg_timeout_ms=1500)
    )


async def baseline(stack: Stack) -> dict[int, int]:
    """Which legs answer before any fault (another leg may be down for reasons of its own)."""
    gw = await gateway_to(stack)
    try:
        return statuses(await gw.search(search_request(), remaining_s=10))
    finally:
        await gw.close()


def assert_degraded(
    reply: fusion_pb2.FusionSearchResponse,
    faulty: int,
    before: dict[int, int],
    elapsed_s: float,
    deadline_s: float,
) -> None:
    now = statuses(reply)
    assert now[faulty] in FAILED
    report = next(r for r in reply.legs if r.leg == faulty)
    assert report.error and report.hits == 0 and report.budget_ms > 0
    assert reply.partial
    healthy = {leg for leg, st in before.items() if st == OK and leg != faulty}
    assert healthy, "no healthy leg to compare against"
    assert all(now[leg] == OK for leg in healthy)
    assert reply.matches
    for match in reply.matches:  # only answering legs explain the matches
        assert {e.leg for e in match.explain} == healthy
    assert elapsed_s < deadline_s + MARGIN_S


# --- a leg answering UNAVAILABLE -------------------------------------------------------------------


class UnavailableSparse(sparse_pb2_grpc.SparseSearchServicer):
    """An injected fault: a sparse leg that is up but answers UNAVAILABLE (e.g. its DB is gone)."""

    def __init__(self) -> None:
        self.calls = 0

    async def Search(
        self,
        request: common_pb2.SearchRequest,
        context: grpc.aio.ServicerContext[common_pb2.SearchRequest, common_pb2.SearchResponse],
    ) -> common_pb2.SearchResponse:
        self.calls += 1
        await context.abort(grpc.StatusCode.UNAVAILABLE, "backend unavailable")
        raise AssertionError("unreachable")


@pytest.fixture
async def unavailable_sparse() -> AsyncIterator[tuple[UnavailableSparse, RunningServer]]:
    servicer = UnavailableSparse()
    spec = ServiceSpec(
        "tribrid.v1.SparseSearch", lambda s: sparse_pb2_grpc.add_SparseSearchServicer_to_server(servicer, s)
    )
    server = await start_server([spec], "127.0.0.1", 0)
    yield servicer, server
    await server.stop(0)


async def test_leg_answering_unavailable_is_dropped(
    stack: Stack,
    sample_corpus: indexer_pb2.IndexProgress,
    unavailable_sparse: tuple[UnavailableSparse, RunningServer],
) -> None:
    before = await baseline(stack)
    servicer, server = unavailable_sparse
    gw = await gateway_to(stack, sparse=server.port)
    started = time.monotonic()
    reply = await gw.search(search_request(), remaining_s=5)
    elapsed = time.monotonic() - started
    await gw.close()
    assert_degraded(reply, legs_pb2.LEG_SPARSE, before, elapsed, 5)
    assert statuses(reply)[legs_pb2.LEG_SPARSE] == fusion_pb2.LEG_STATUS_ERROR
    assert "UNAVAILABLE" in next(r.error for r in reply.legs if r.leg == legs_pb2.LEG_SPARSE)
    assert servicer.calls == 3  # gRPC's retry policy: maxAttempts 3 on UNAVAILABLE
    if before[legs_pb2.LEG_VECTOR] == OK:
        assert reply.matches[0].symbol == "shop.payment.validate_card_number"
