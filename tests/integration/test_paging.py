"""Paging through one fused answer with signed page tokens, through the gateway over the sample corpus."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from tests.stack import SAMPLE_CORPUS, Stack, fusion_options
from tribrid.v1 import common_pb2, fusion_pb2, fusion_pb2_grpc, indexer_pb2

QUERY = "cart total price"


async def search(stack: Stack, top_k: int, page_token: str = "", query: str = QUERY, **fields: Any) -> Any:
    request = common_pb2.SearchRequest(
        corpus_id=SAMPLE_CORPUS,
        query=query,
        top_k=top_k,
        options=fusion_options(**fields),
        page_token=page_token,
    )
    async with stack.channel("fusion") as channel:
        return await fusion_pb2_grpc.FusionStub(channel).Search(request, timeout=30)


def listed(reply: fusion_pb2.FusionSearchResponse) -> list[tuple[str, float]]:
    return [(m.chunk_id, m.score) for m in reply.matches]


async def test_pages_of_ten_are_the_single_answer_of_a_hundred(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress
) -> None:
    whole = await search(stack, 100)
    assert not whole.next_page_token  # nothing deeper than its legs' candidates
    pages: list[list[tuple[str, float]]] = []
    token = ""
    while True:
        # the legs as deep as the single request's (candidates_per_leg is at least top_k)
        page = await search(stack, 10, token, candidates_per_leg=100)
        pages.append(listed(page))
        token = page.next_page_token
        if not token:
            break
    assert len(pages) >= 3
    assert all(len(p) == 10 for p in pages[:-1]) and 1 <= len(pages[-1]) <= 10
    assert [m for p in pages for m in p] == listed(whole)


async def test_the_same_request_pages_the_same_way(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress
) -> None:
    first = await search(stack, 5)
    second = await search(stack, 5, first.next_page_token)
    again = await search(stack, 5, first.next_page_token)
    assert listed(second) == listed(again)
    assert not {c for c, _ in listed(first)} & {c for c, _ in listed(second)}
    whole = await search(stack, 10)  # the same depth of candidates (30): the same list
    assert listed(first) + listed(second) == listed(whole)


async def test_a_forged_or_foreign_token_is_invalid_argument(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress
) -> None:
    first = await search(stack, 5)
    token = first.next_page_token
    forged = token[:-2] + ("AA" if token[-2:] != "AA" else "BB")
    cases: list[tuple[tuple[int, str], dict[str, Any], str]] = [
        ((5, forged), {}, "not a token this service gave"),
        ((5, "not base64!"), {}, "not a token this service gave"),
        ((5, token), {"query": "checkout discount"}, "belongs to another request"),
        ((6, token), {}, "belongs to another request"),
        ((5, token), {"enable_expansion": True}, "belongs to another request"),
    ]
    for (top_k, page_token), fields, message in cases:
        with pytest.raises(grpc.aio.AioRpcError) as bad:
            await search(stack, top_k, page_token, **fields)
        assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert message in str(bad.value.details()) and "page_token" in str(bad.value.details())
    # an expanded answer has no next page
    assert not (await search(stack, 5, enable_expansion=True)).next_page_token
