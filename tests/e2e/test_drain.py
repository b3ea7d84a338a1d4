"""Graceful drain: SIGTERM to a real `tribrid serve` process while indexing runs stream, and the
readiness delay before it (services.drain_delay_s)."""

from __future__ import annotations

import asyncio
import shutil
import signal
import subprocess
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from bench.procstack import free_port, wait_serving
from tests.e2e.test_gateway_faults import _serve_subprocess
from tests.stack import FIXTURE_REPO, SAMPLE_CORPUS, Stack
from tribrid.config import TriBridConfig
from tribrid.legs import BY_NAME, search_method
from tribrid.v1 import common_pb2, indexer_pb2, indexer_pb2_grpc

CORPORA = ("drain-a", "drain-b", "drain-c")


async def _delete(stack: Stack) -> None:
    async with stack.channel("indexer") as channel:
        stub = indexer_pb2_grpc.IndexerStub(channel)
        for corpus in CORPORA:
            await stub.DeleteCorpus(indexer_pb2.DeleteCorpusRequest(corpus_id=corpus))


async def test_sigterm_finishes_in_flight_indexing_then_exits(
    stack: Stack, config: TriBridConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _delete(stack)
    roots = []
    for corpus in CORPORA:
        shutil.copytree(FIXTURE_REPO, tmp_path / corpus)
        roots.append(tmp_path / corpus)
    monkeypatch.setenv("TRIBRID_SERVICES__SHUTDOWN_GRACE_S", "120")
    port = free_port()
    proc = _serve_subprocess(config, "indexer", port)
    try:
        await wait_serving(f"127.0.0.1:{port}", 180, proc)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = indexer_pb2_grpc.IndexerStub(channel)
            watch = health_pb2_grpc.HealthStub(channel).Watch(health_pb2.HealthCheckRequest())
            assert (await watch.read()).status == health_pb2.HealthCheckResponse.SERVING
            streams = [
                stub.IndexCorpus(indexer_pb2.IndexCorpusRequest(corpus_id=corpus, path=str(root)))
                for corpus, root in zip(CORPORA, roots, strict=True)
            ]
            for stream in streams:  # each run has begun: its first progress event arrived
                first = await stream.read()
                assert isinstance(first, indexer_pb2.IndexProgress) and not first.done

            proc.send_signal(signal.SIGTERM)
            # the service says it is going away before it stops
            assert (await watch.read()).status == health_pb2.HealthCheckResponse.NOT_SERVING
            watch.cancel()

            async def last_event(
                stream: grpc.aio.UnaryStreamCall[indexer_pb2.IndexCorpusRequest, indexer_pb2.IndexProgress],
            ) -> indexer_pb2.IndexProgress:
                last = indexer_pb2.IndexProgress()
                while isinstance(event := await stream.read(), indexer_pb2.IndexProgress):
                    last = event
                return last

            finals = await asyncio.gather(*(last_event(s) for s in streams), return_exceptions=True)
        failed = [f for f in finals if not isinstance(f, indexer_pb2.IndexProgress)]
        assert failed == [], failed  # no request in flight at SIGTERM failed
        done = [f for f in finals if isinstance(f, indexer_pb2.IndexProgress)]
        assert [f.done for f in done] == [True] * len(CORPORA)
        assert {f.chunks_total for f in done} == {done[0].chunks_total} and done[0].chunks_total > 0
        exit_code = await asyncio.to_thread(proc.wait, 60)
        assert exit_code == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
    # the runs committed: the corpora are searchable from the open stack
    async with stack.channel("indexer") as channel:
        listed = await indexer_pb2_grpc.IndexerStub(channel).ListCorpora(indexer_pb2.ListCorporaRequest())
    assert set(CORPORA) <= {c.corpus_id for c in listed.corpora}
    await _delete(stack)


async def test_sigterm_reports_not_serving_and_keeps_serving_through_the_drain_delay(
    stack: Stack,
    sample_corpus: indexer_pb2.IndexProgress,
    config: TriBridConfig,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Long enough that the search below, sent once NOT_SERVING is seen, lands inside the delay.
    monkeypatch.setenv("TRIBRID_SERVICES__DRAIN_DELAY_S", "4")
    port = free_port()
    proc = _serve_subprocess(config, "sparse", port)
    try:
        await wait_serving(f"127.0.0.1:{port}", 120, proc)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            watch = health_pb2_grpc.HealthStub(channel).Watch(health_pb2.HealthCheckRequest())
            assert (await watch.read()).status == health_pb2.HealthCheckResponse.SERVING
            proc.send_signal(signal.SIGTERM)
            assert (await watch.read()).status == health_pb2.HealthCheckResponse.NOT_SERVING
            watch.cancel()
            # not ready, but still answering: what a load balancer sends before it notices is served
            reply = await search_method(channel, BY_NAME["sparse"])(
                common_pb2.SearchRequest(corpus_id=SAMPLE_CORPUS, query="validate_card_number"), timeout=10
            )
            assert reply.matches
        assert await asyncio.to_thread(proc.wait, 60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
