"""Hedged leg calls against the real vector leg of the test stack, with a slow second replica of it
(tests/slow_replica.py: a real gRPC server forwarding after a delay)."""

from __future__ import annotations

import grpc

from services.fusion.gateway import Gateway, LegClient
from services.fusion.hedging import HedgedLeg, resolve
from tests.slow_replica import slow_replica
from tests.stack import SAMPLE_CORPUS, Stack, fusion_options
from tribrid.config import HedgingConfig
from tribrid.legs import BY_NAME, LEGS
from tribrid.v1 import common_pb2, fusion_pb2, indexer_pb2, legs_pb2

VECTOR = BY_NAME["vector"]
CFG = HedgingConfig(min_samples=5, window=50, min_delay_ms=1.0, refresh_s=3600)


def request(query: str = "cart total price") -> common_pb2.SearchRequest:
    return common_pb2.SearchRequest(corpus_id=SAMPLE_CORPUS, query=query, top_k=5)


async def test_resolve_lists_and_names() -> None:
    assert await resolve("ipv4:127.0.0.1:1,127.0.0.1:2") == ["127.0.0.1:1", "127.0.0.1:2"]
    assert await resolve("localhost:50061") == ["127.0.0.1:50061"]  # IPv4 only: services bind it
    assert await resolve("dns:///127.0.0.1:7") == ["127.0.0.1:7"]


async def test_a_replica_that_stops_answering_is_hedged_to_the_other(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress
) -> None:
    """Both replicas answer while the latency windows fill; then one never answers in time (it
    waits for the test's end), so every call that starts on it is answered through the other,
    whatever the machine's load: no race between the two decides the result."""
    fast = f"127.0.0.1:{stack.servers['vector'].port}"
    async with slow_replica(VECTOR.service, fast, delay_s=0.0) as slow:
        leg = HedgedLeg(VECTOR.service, f"ipv4:{fast},{slow.address}", CFG, _plain_channel)
        direct = HedgedLeg(VECTOR.service, fast, CFG, _plain_channel)
        expected, hedged = await direct.search(request(), 10)
        assert not hedged  # one endpoint: never hedged
        for _ in range(12):  # 6 calls each: both windows past min_samples
            await leg.search(request(), 10)
        slow.hang = True
        outcomes = [await leg.search(request(), 10) for _ in range(6)]
        # the calls alternate between the replicas (sorted by address), from call 12 on
        slow_first = sorted([fast, slow.address])[0] == slow.address
        on_slow = [i for i in range(6) if (i % 2 == 0) == slow_first]
        # cancelled, not waited for: a cancel reaches the replica some time after the other's answer
        cancelled = await slow.cancelled_at_least(len(on_slow))
        await leg.close()
        await direct.close()
    assert all(list(answer.matches) == list(expected.matches) for answer, _ in outcomes)
    assert len(on_slow) == 3 and all(outcomes[i][1] for i in on_slow)
    assert leg.hedges >= len(on_slow)
    assert cancelled >= len(on_slow)


async def test_the_gateway_reports_hedged_legs_and_answers_the_same(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress
) -> None:
    fast = f"127.0.0.1:{stack.servers['vector'].port}"
    async with slow_replica(VECTOR.service, fast, delay_s=0.0) as slow:
        legs = {
            leg.name: LegClient(
                leg,
                f"ipv4:{fast},{slow.address}"
                if leg.name == "vector"
                else f"127.0.0.1:{stack.servers[leg.name].port}",
                hedging=CFG,
            )
            for leg in LEGS
        }
        gateway = Gateway(stack.cfg.fusion, stack.cfg.limits, legs, await stack.resources.pool())  # type: ignore[arg-type]
        plain = await gateway.search(
            common_pb2.SearchRequest(corpus_id=SAMPLE_CORPUS, query="cart total price", top_k=5), 30
        )
        hedged_request = common_pb2.SearchRequest(
            corpus_id=SAMPLE_CORPUS,
            query="cart total price",
            top_k=5,
            options=fusion_options(enable_hedging=True),
        )
        for _ in range(12):  # the windows fill while both replicas answer
            await gateway.search(hedged_request, 30)
        slow.hang = True  # past the leg's 2 s budget: without a hedge, a call on it times out
        replies = [await gateway.search(hedged_request, 30) for _ in range(4)]
        await gateway.close()
    reports = [next(r for r in reply.legs if r.leg == legs_pb2.LEG_VECTOR) for reply in replies]
    assert all(r.status == fusion_pb2.LEG_STATUS_OK for r in reports)
    assert sum(r.hedged for r in reports) >= 2 and not any(r.hedged for r in plain.legs)
    assert all(
        [m.chunk_id for m in reply.matches] == [m.chunk_id for m in plain.matches] for reply in replies
    )


def _plain_channel(address: str) -> grpc.aio.Channel:
    return grpc.aio.insecure_channel(address)
