"""User text reaches SQL and Cypher only as parameters: quotes, backslashes and query fragments in
every text field of the search and entity RPCs are searched for or named back, never executed."""

from __future__ import annotations

from collections.abc import Awaitable

import grpc
import pytest

from tests.stack import SAMPLE_CORPUS, Stack
from tribrid.v1 import (
    common_pb2,
    fusion_pb2,
    fusion_pb2_grpc,
    graph_pb2,
    graph_pb2_grpc,
    indexer_pb2,
    indexer_pb2_grpc,
    sparse_pb2_grpc,
    vector_pb2_grpc,
)

HOSTILE = [
    "validate_card_number' OR '1'='1",
    'validate_card_number" OR "1"="1',
    "validate_card_number'; DROP TABLE chunks; --",
    "validate_card_number\\' UNION SELECT content FROM chunks --",
    "validate_card_number\\\\",
    "x') RETURN 1 UNION MATCH (n) DETACH DELETE n //",
    "}) MATCH (n) SET n.name = 'pwned' RETURN n //",
    "$1 $2 :: ::text %s {0} ${x}",
    "\\x00\\n\\t `backtick` /* comment */",
]


async def _snapshot(stack: Stack) -> tuple[tuple[str, int, int], ...]:
    async with stack.channel("indexer") as channel:
        listed = await indexer_pb2_grpc.IndexerStub(channel).ListCorpora(indexer_pb2.ListCorporaRequest())
    async with stack.channel("graph") as channel:
        stats = await graph_pb2_grpc.GraphSearchStub(channel).Stats(
            graph_pb2.GraphStatsRequest(corpus_id=SAMPLE_CORPUS)
        )
    entities = sum(stats.entities_by_type.values())
    return tuple((c.corpus_id, c.chunks, entities) for c in listed.corpora if c.corpus_id == SAMPLE_CORPUS)


@pytest.mark.parametrize("text", HOSTILE)
async def test_search_rpcs_take_hostile_text_as_text(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress, text: str
) -> None:
    before = await _snapshot(stack)
    request = common_pb2.SearchRequest(
        corpus_id=SAMPLE_CORPUS, query=text, top_k=5, filters=common_pb2.SearchFilters(path_glob=text)
    )
    # a path glob nothing matches: every leg answers, with nothing
    for service, stub_class in (
        ("vector", vector_pb2_grpc.VectorSearchStub),
        ("sparse", sparse_pb2_grpc.SparseSearchStub),
        ("graph", graph_pb2_grpc.GraphSearchStub),
    ):
        async with stack.channel(service) as channel:
            reply: common_pb2.SearchResponse = await stub_class(channel).Search(request, timeout=30)
        assert list(reply.matches) == [], service
    async with stack.channel("fusion") as channel:
        fused: fusion_pb2.FusionSearchResponse = await fusion_pb2_grpc.FusionStub(channel).Search(
            common_pb2.SearchRequest(corpus_id=SAMPLE_CORPUS, query=text, top_k=5), timeout=30
        )
    assert {r.status for r in fused.legs} == {fusion_pb2.LEG_STATUS_OK}, [r.error for r in fused.legs]
    if text.startswith("validate_card_number"):  # the name is still found among the fragments
        assert "shop.payment.validate_card_number" in [m.symbol for m in fused.matches]
    assert await _snapshot(stack) == before


@pytest.mark.parametrize("text", HOSTILE)
async def test_entity_rpcs_name_hostile_text_back_exactly(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress, text: str
) -> None:
    before = await _snapshot(stack)
    async with stack.channel("graph") as channel:
        stub = graph_pb2_grpc.GraphSearchStub(channel)
        for ref in (
            graph_pb2.EntityRef(name=text),
            graph_pb2.EntityRef(qualified_name=text),
            graph_pb2.EntityRef(entity_id=text),
        ):
            calls: dict[str, Awaitable[object]] = {
                "Neighbors": stub.Neighbors(graph_pb2.NeighborsRequest(corpus_id=SAMPLE_CORPUS, entity=ref)),
                "EntityChunks": stub.EntityChunks(
                    graph_pb2.EntityChunksRequest(corpus_id=SAMPLE_CORPUS, entity=ref)
                ),
                "PathBetween": stub.PathBetween(
                    graph_pb2.PathBetweenRequest(
                        corpus_id=SAMPLE_CORPUS, source=ref, target=graph_pb2.EntityRef(name="Cart")
                    )
                ),
            }
            # a plain name that resembles a definition ("validate_card_number' OR ...") lists the
            # nearest ones (INVALID_ARGUMENT); an id or a qualified name is looked up exactly
            expected = {grpc.StatusCode.NOT_FOUND}
            if ref.name:
                expected.add(grpc.StatusCode.INVALID_ARGUMENT)
            for rpc, call in calls.items():
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await call
                assert refused.value.code() in expected, (rpc, refused.value.details())
                assert repr(text) in (refused.value.details() or ""), rpc  # named back exactly
    assert await _snapshot(stack) == before


async def test_hostile_corpus_id_is_invalid(stack: Stack) -> None:
    async with stack.channel("fusion") as channel:
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await fusion_pb2_grpc.FusionStub(channel).Search(
                common_pb2.SearchRequest(corpus_id="x'; DROP TABLE corpora; --", query="cart")
            )
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
