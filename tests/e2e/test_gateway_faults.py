"""Gateway faults at the process level: a leg process (`tribrid serve vector`) killed under load, and
the graph database stopped and restarted (the in-process faults: tests/integration/
test_gateway_faults.py). Each degraded answer is checked as there, within the caller's deadline."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid

from bench.procstack import free_port, wait_serving
from tests.integration.test_gateway_faults import (
    MARGIN_S,
    OK,
    assert_degraded,
    baseline,
    gateway_to,
    search_request,
    statuses,
)
from tests.stack import Stack
from tribrid.config import TriBridConfig
from tribrid.stores.embedded import falkordb as falkordb_server
from tribrid.v1 import fusion_pb2, fusion_pb2_grpc, indexer_pb2, legs_pb2


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
    gw = await gateway_to(stack, vector=port)
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
                reply = await gw.search(
                    search_request(queries[(n + i) % len(queries)]), remaining_s=deadline_s
                )
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
                search_request(f"validate_card_number {new_word}"), timeout=deadline_s
            )
        elapsed = time.monotonic() - started
        assert_degraded(reply, legs_pb2.LEG_GRAPH, before, elapsed, deadline_s)
    finally:
        falkordb_server.up(config, lambda _: None)  # restarted from its saved data
    # the shared store is back with its data: the graph leg answers again
    for _ in range(50):
        async with stack.channel("fusion") as channel:
            again = await fusion_pb2_grpc.FusionStub(channel).Search(search_request(), timeout=10)
        if statuses(again)[legs_pb2.LEG_GRAPH] == OK:
            break
        await asyncio.sleep(0.2)
    assert statuses(again)[legs_pb2.LEG_GRAPH] == OK
    assert again.partial == any(st != OK for st in statuses(again).values())
