"""Prometheus metrics move with real traffic: a fused search through the stack's gateway."""

from __future__ import annotations

import prometheus_client

from tests.stack import SAMPLE_CORPUS, Stack
from tribrid.v1 import common_pb2, fusion_pb2_grpc, indexer_pb2

FUSION_OK = {"method": "/tribrid.v1.Fusion/Search", "code": "OK"}


def sample(name: str, labels: dict[str, str] | None = None) -> float:
    return prometheus_client.REGISTRY.get_sample_value(name, labels or {}) or 0.0


async def test_a_fused_search_moves_the_metrics(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress
) -> None:
    legs = ("vector", "sparse", "graph")
    before = {leg: sample("tribrid_leg_requests_total", {"leg": leg, "status": "ok"}) for leg in legs}
    served = sample("tribrid_grpc_requests_total", FUSION_OK)
    searches = sample("tribrid_fusion_search_duration_seconds_count", {"code": "OK"})
    async with stack.channel("fusion") as channel:
        request = common_pb2.SearchRequest(corpus_id=SAMPLE_CORPUS, query="validate_card_number")
        reply = await fusion_pb2_grpc.FusionStub(channel).Search(request, timeout=30)
    assert not reply.partial
    for leg in legs:
        assert sample("tribrid_leg_requests_total", {"leg": leg, "status": "ok"}) == before[leg] + 1, leg
    assert (
        sample("tribrid_grpc_requests_total", {"method": "/tribrid.v1.Fusion/Search", "code": "OK"})
        == served + 1
    )
    assert sample("tribrid_fusion_search_duration_seconds_count", {"code": "OK"}) == searches + 1
