"""Score floors (`min_score` per leg on its own scale, and on the fused score) through the gateway
over the sample corpus."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from tests.stack import SAMPLE_CORPUS, Stack, fusion_options
from tribrid.legs import BY_VALUE
from tribrid.v1 import common_pb2, fusion_pb2, fusion_pb2_grpc, indexer_pb2

QUERY = "cart total price"


async def search(stack: Stack, **fields: Any) -> fusion_pb2.FusionSearchResponse:
    floors: dict[str, float] = fields.pop("floors", {})
    options = fusion_options(**fields)
    for leg, floor in floors.items():
        setting = next((s for s in options.fusion.legs if BY_VALUE[s.leg].name == leg), None)
        if setting is None:
            setting = options.fusion.legs.add(leg=next(v for v, i in BY_VALUE.items() if i.name == leg))
        setting.min_score = floor
    request = common_pb2.SearchRequest(corpus_id=SAMPLE_CORPUS, query=QUERY, top_k=30, options=options)
    async with stack.channel("fusion") as channel:
        reply: fusion_pb2.FusionSearchResponse = await fusion_pb2_grpc.FusionStub(channel).Search(
            request, timeout=30
        )
        return reply


def leg_scores(reply: fusion_pb2.FusionSearchResponse, leg: str) -> dict[str, float]:
    return {
        m.chunk_id: e.raw_score
        for m in reply.matches
        for e in m.explain
        if e.rank and BY_VALUE[e.leg].name == leg
    }


async def test_a_legs_floor_leaves_its_lower_matches_out(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress
) -> None:
    plain = await search(stack, method="rrf")
    vector = leg_scores(plain, "vector")
    assert len(vector) >= 4
    floor = sorted(vector.values())[len(vector) // 2]  # the median: about half stay
    floored = await search(stack, method="rrf", floors={"vector": floor})
    kept = leg_scores(floored, "vector")
    assert kept == {cid: s for cid, s in vector.items() if s >= floor}
    # the other legs' lists are untouched
    assert leg_scores(floored, "sparse") == leg_scores(plain, "sparse")


async def test_the_fused_floor_drops_lower_fused_matches(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress
) -> None:
    plain = await search(stack, method="rrf")
    scores = [m.score for m in plain.matches]
    floor = scores[len(scores) // 2]
    floored = await search(stack, method="rrf", min_score=floor)
    assert [m.chunk_id for m in floored.matches] == [m.chunk_id for m in plain.matches if m.score >= floor]
    assert 0 < len(floored.matches) < len(plain.matches)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"floors": {"vector": 1.5}}, "legs.vector.min_score must be between -1.0 and 1.0"),
        ({"floors": {"sparse": -0.1}}, "legs.sparse.min_score must be between 0.0 and inf"),
        ({"method": "rrf", "min_score": 0.5}, "min_score must be between 0.0 and 0.01639"),
        ({"normalization": "z_score", "min_score": -4.0}, "min_score must be between -3.0 and 3.0"),
    ],
)
async def test_a_floor_out_of_range_is_invalid_argument(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress, fields: dict[str, Any], message: str
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as bad:
        await search(stack, **fields)
    assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "options.fusion" in str(bad.value.details()) and message in str(bad.value.details())
