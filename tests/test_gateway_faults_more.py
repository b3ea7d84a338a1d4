"""More gateway faults: a leg answering UNAVAILABLE, a leg process killed under load, the graph DB down.

Real servers everywhere; fakes only for the injected faults. Each test checks the response status, the
partial flag, the LegReports, the healthy legs' results, and that the answer came within the caller's
deadline (plus a loose margin for shared CI cores).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator

import grpc
import pytest

from bench.procstack import free_port, wait_serving
from services.fusion.gateway import Gateway, LegClient
from tests.conftest import SAMPLE_CORPUS, Stack, fusion_options
from tribrid.config import TriBridConfig
from tribrid.legs import LEGS
from tribrid.server import RunningServer, ServiceSpec, start_server
from tribrid.stores.embedded import falkordb as falkordb_server
from tribrid.v1 import common_pb2, fusion_pb2, fusion_pb2_grpc, indexer_pb2, legs_pb2, sparse_pb2_grpc

MARGIN_S = 3.0  # loose: two shared cores
OK = fusion_pb2.LEG_STATUS_OK
FAILED = (fusion_pb2.LEG_STATUS_ERROR, fusion_pb2.LEG_STATUS_TIMEOUT)


def statuses(reply: fusion_pb2.FusionSearchResponse) -> dict[int, int]:
    return {r.leg: r.status for r in reply.legs}


async def gateway(stack: Stack, **ports: int) -> Gateway:
    legs = {
        leg.name: LegClient(leg, f"127.0.0.1:{ports.get(leg.name, stack.servers[leg.name].port)}")
        for leg in LEGS
    }
    return Gateway(stack.cfg.fusion, stack.cfg.limits, legs, await stack.resources.pool())


def request(query: str = "validate_card_number") -> common_pb2.SearchRequest:
    return common_pb2.SearchRequest(
        corpus_id=SAMPLE_CORPUS, query=query, options=fusion_options(leg_timeout_ms=1500)
    )


async def baseline(stack: Stack) -> dict[int, int]:
    """Which legs answer before any fault (another leg may be down for reasons of its own)."""
    gw = await gateway(stack)
    try:
        return statuses(await gw.search(request(), remaining_s=10))
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
    gw = await gateway(stack, sparse=server.port)
    started = time.monotonic()
    reply = await gw.search(request(), remaining_s=5)
    elapsed = time.monotonic() - started
    await gw.close()
    assert_degraded(reply, legs_pb2.LEG_SPARSE, before, elapsed, 5)
    assert statuses(reply)[legs_pb2.LEG_SPARSE] == fusion_pb2.LEG_STATUS_ERROR
    assert "UNAVAILABLE" in next(r.error for r in reply.legs if r.leg == legs_pb2.LEG_SPARSE)
    assert servicer.calls == 3  # gRPC's retry policy: maxAttempts 3 on UNAVAILABLE
    if before[legs_pb2.LEG_VECTOR] == OK:
        assert reply.matches[0].symbol == "shop.payment.validate_card_number"


# --- a leg process killed mid-load ----------------------------------------------------------------


def _serve_subprocess(config: TriBridConfig, service: str, port: int) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "TRIBRID_STATE_DIR": str(config.state_dir),
        "TRIBRID_POSTGRES__PORT": str(config.postgres.port),
        "TRIBRID_POSTGRES__DATABASE": config.postgres.database,
        "TRIBRID_GRAPH_STORE__FALKORDB_PORT": str(config.graph_store.falkordb_port),
        "TRIBRID_GRAPH_STORE__GRAPH_PREFIX": config.graph_store.graph_prefix,
        "TRIBRID_EMBEDDING__NUM_THREADS": "1",
        "TRIBRID_TELEMETRY__METRICS_PORT": "0",
        f"TRIBRID_SERVICES__{service.upper()}_PORT": str(port),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "tribridctl.cli", "serve", service],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


async def test_leg_process_killed_mid_load(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress, config: TriBridConfig
) -> None:
    before = await baseline(stack)
    port = free_port()
    proc = _serve_subprocess(config, "vector", port)
    gw = await gateway(stack, vector=port)
    try:
        await wait_serving(f"127.0.0.1:{port}", 120, proc)
        deadline_s = 4.0
        results: list[tuple[float, float, fusion_pb2.FusionSearchResponse]] = []  # (start, elapsed, reply)
        stop = asyncio.Event()
        queries = ["validate_card_number", "cart total price", "compute_discount", "payment card"]

        async def worker(n: int) -> None:
            i = 0
            while not stop.is_set():
                started = time.monotonic()
                reply = await gw.search(request(queries[(n + i) % len(queries)]), remaining_s=deadline_s)
                results.append((started, time.monotonic() - started, reply))
                i += 1

        workers = [asyncio.create_task(worker(n)) for n in range(4)]
        while not any(statuses(r)[legs_pb2.LEG_VECTOR] == OK for _, _, r in results):
            await asyncio.sleep(0.05)
            assert not any(w.done() for w in workers), [w.exception() for w in workers if w.done()]
        killed_at = time.monotonic()
        os.killpg(proc.pid, signal.SIGKILL)  # mid-load: requests are in flight right now
        proc.wait(timeout=10)
        await asyncio.sleep(1.5)
        stop.set()
        await asyncio.gather(*workers)  # no request raised: never "all legs down"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        await gw.close()

    assert all(elapsed < deadline_s + MARGIN_S for _, elapsed, _ in results)
    after = [(elapsed, r) for started, elapsed, r in results if started > killed_at]
    assert after, "no request started after the kill"
    for elapsed, reply in after:
        assert_degraded(reply, legs_pb2.LEG_VECTOR, before, elapsed, deadline_s)
    ok_before = [
        r for started, _, r in results if started < killed_at and statuses(r)[legs_pb2.LEG_VECTOR] == OK
    ]
    assert ok_before  # the vector leg answered through the gateway until it was killed
    assert all(r.partial == any(st != OK for st in statuses(r).values()) for r in ok_before)


# --- the graph database stopped -------------------------------------------------------------------


async def test_graph_database_stopped(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress, config: TriBridConfig
) -> None:
    before = await baseline(stack)
    assert before[legs_pb2.LEG_GRAPH] == OK
    deadline_s = 4.0
    try:
        assert falkordb_server.down(config, lambda _: None)  # SIGTERM: it saves graph.rdb first
        started = time.monotonic()
        async with stack.channel("fusion") as channel:  # the real stack's gateway and graph leg
            # with a word never looked up before: a graph in memory keeps the fulltext answers it
            # has had, so only a new word's seeds are a question for the stopped database
            new_word = f"zq{uuid.uuid4().hex[:8]}"
            reply = await fusion_pb2_grpc.FusionStub(channel).Search(
                request(f"validate_card_number {new_word}"), timeout=deadline_s
            )
        elapsed = time.monotonic() - started
        assert_degraded(reply, legs_pb2.LEG_GRAPH, before, elapsed, deadline_s)
    finally:
        falkordb_server.up(config, lambda _: None)  # restarted from its saved data
    # the shared store is back with its data: the graph leg answers again
    for _ in range(50):
        async with stack.channel("fusion") as channel:
            again = await fusion_pb2_grpc.FusionStub(channel).Search(request(), timeout=10)
        if statuses(again)[legs_pb2.LEG_GRAPH] == OK:
            break
        await asyncio.sleep(0.2)
    assert statuses(again)[legs_pb2.LEG_GRAPH] == OK
    assert again.partial == any(st != OK for st in statuses(again).values())
