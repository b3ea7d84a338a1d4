"""The diversity (MMR) stage through the gateway over the sample corpus: the stored embeddings are
read with the content, in one query."""

from __future__ import annotations

from typing import Any

import grpc
import numpy as np
import pytest

from services.fusion.mmr import mmr_order
from tests.stack import SAMPLE_CORPUS, Stack, fusion_options
from tribrid.stores.postgres import fetch_contents_and_vectors
from tribrid.v1 import common_pb2, fusion_pb2, fusion_pb2_grpc, indexer_pb2, legs_pb2

QUERY = "cart total price"


async def search(stack: Stack, top_k: int = 10, **fields: Any) -> fusion_pb2.FusionSearchResponse:
    request = common_pb2.SearchRequest(
        corpus_id=SAMPLE_CORPUS, query=QUERY, top_k=top_k, options=fusion_options(**fields)
    )
    async with stack.channel("fusion") as channel:
        reply: fusion_pb2.FusionSearchResponse = await fusion_pb2_grpc.FusionStub(channel).Search(
            request, timeout=30
        )
        return reply


async def test_lambda_one_equals_no_mmr_byte_for_byte(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress
) -> None:
    plain = await search(stack)
    same = await search(stack, enable_mmr=True, mmr_lambda=1.0, mmr_pool=30)
    assert [m.SerializeToString(deterministic=True) for m in same.matches] == [
        m.SerializeToString(deterministic=True) for m in plain.matches
    ]
    (report,) = [r for r in same.legs if r.leg == legs_pb2.LEG_MMR]
    assert report.status == fusion_pb2.LEG_STATUS_OK and report.hits >= len(plain.matches)
    assert not same.next_page_token  # a diversified answer is not paged
    assert not [r for r in plain.legs if r.leg == legs_pb2.LEG_MMR]


async def test_a_lower_lambda_orders_the_pool_by_mmr_over_the_stored_vectors(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress
) -> None:
    pool = await search(stack, top_k=12)  # the fused order of the pool
    diverse = await search(stack, top_k=5, enable_mmr=True, mmr_lambda=0.3, mmr_pool=12)
    stored = await fetch_contents_and_vectors(
        await stack.resources.pool(), SAMPLE_CORPUS, [m.chunk_id for m in pool.matches]
    )
    vectors = np.stack([stored[m.chunk_id][1] for m in pool.matches])
    expected = mmr_order([m.score for m in pool.matches], vectors, 0.3)[:5]
    assert [m.chunk_id for m in diverse.matches] == [pool.matches[i].chunk_id for i in expected]
    assert expected != list(range(5))  # diversity moved something on this corpus
    by_id = {m.chunk_id: m for m in pool.matches}
    for match in diverse.matches:  # fused scores, explain and content as fusion gave them
        assert match.score == by_id[match.chunk_id].score and match.content == by_id[match.chunk_id].content


@pytest.mark.parametrize(
    ("field", "value", "bounds"), [("mmr_lambda", 1.5, "1"), ("mmr_pool", 0, "1"), ("mmr_pool", 500, "200")]
)
async def test_mmr_options_out_of_range(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress, field: str, value: Any, bounds: str
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as bad:
        await search(stack, 10, enable_mmr=True, **{field: value})
    assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert f"options.fusion.{field}" in str(bad.value.details()) and bounds in str(bad.value.details())
