"""The graph-expansion stage through the gateway against the real graph service (a code corpus:
ExpandContext's code answers); its scoring and placement by hand: tests/unit/test_expansion.py."""

from __future__ import annotations

import pytest

from tests.stack import SAMPLE_CORPUS, Stack
from tribrid.v1 import common_pb2, fusion_options_pb2, fusion_pb2, fusion_pb2_grpc, indexer_pb2, legs_pb2


async def expanded_search(stack: Stack, **fields: object) -> fusion_pb2.FusionSearchResponse:
    options = fusion_options_pb2.FusionOptions(enable_expansion=True, **fields)  # type: ignore[arg-type]
    request = common_pb2.SearchRequest(
        corpus_id=SAMPLE_CORPUS,
        query="validate_card_number",
        top_k=3,  # the sample repo is small: room for neighbours outside the fused list
        options=common_pb2.SearchOptions(fusion=options),
    )
    async with stack.channel("fusion") as channel:
        reply: fusion_pb2.FusionSearchResponse = await fusion_pb2_grpc.FusionStub(channel).Search(
            request, timeout=30
        )
    report = next(r for r in reply.legs if r.leg == legs_pb2.LEG_EXPANSION)
    assert report.status == fusion_pb2.LEG_STATUS_OK, report.error
    assert report.hits == sum(m.expanded for m in reply.matches)
    return reply


def check_hybrid(reply: fusion_pb2.FusionSearchResponse, top_n: int, chunk_weight: float) -> None:
    """Every expanded match's explain, recomputed from the answer itself."""
    fused = [m for m in reply.matches if not m.expanded]
    by_id = {m.chunk_id: m for m in fused}
    for match in (m for m in reply.matches if m.expanded):
        (explain,) = match.explain
        assert (match.leg, explain.leg) == (legs_pb2.LEG_EXPANSION, legs_pb2.LEG_EXPANSION)
        assert explain.source in [m.chunk_id for m in fused[:top_n]]
        assert explain.normalized_score == pytest.approx(by_id[explain.source].score / fused[0].score)
        assert 0 < explain.raw_score <= 1
        assert explain.contribution == pytest.approx(
            chunk_weight * explain.normalized_score + (1 - chunk_weight) * explain.raw_score
        )
        assert match.expansion_hops == explain.graph.hops >= 1
        assert explain.graph.seed_entity and explain.graph.path[0] == explain.graph.seed_entity
        assert len(explain.graph.relationship_types) == explain.graph.hops
        assert match.chunk_id not in by_id


async def test_code_expansion_through_the_gateway(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress
) -> None:
    reply = await expanded_search(stack, expansion_top_n=2, expansion_min_score=0.0)
    fused = [m for m in reply.matches if not m.expanded]
    expanded = [m for m in reply.matches if m.expanded]
    assert len(fused) == 3 and expanded
    # appended: after every fused match, hybrid x the lowest fused score, best hybrid first
    assert reply.matches[: len(fused)] == fused
    assert [m.score for m in expanded] == pytest.approx(
        [m.explain[0].contribution * fused[-1].score for m in expanded]
    )
    assert [m.explain[0].rank for m in expanded] == list(range(1, len(expanded) + 1))
    hybrids = [(-m.explain[0].contribution, m.chunk_id) for m in expanded]
    assert hybrids == sorted(hybrids)
    check_hybrid(reply, 2, 0.7)
    # the graph's code scores keep their proportions inside [0, 1]
    graph_scores = [(m.explain[0].raw_score, m.explain[0].graph.graph_score) for m in expanded]
    ratio = graph_scores[0][0] / graph_scores[0][1]
    assert all(raw == pytest.approx(ratio * own) for raw, own in graph_scores)

    # the request's options: only the graph score counts, the best two, interleaved
    interleaved = await expanded_search(
        stack,
        expansion_top_n=2,
        expansion_min_score=0.0,
        expansion_chunk_weight=0.0,
        expansion_max_chunks=2,
        expansion_placement=fusion_options_pb2.EXPANSION_PLACEMENT_INTERLEAVE,
    )
    check_hybrid(interleaved, 2, 0.0)
    again = [m for m in interleaved.matches if m.expanded]
    assert len(again) == min(2, len(expanded))
    top = interleaved.matches[0].score
    assert [m.score for m in again] == pytest.approx([m.explain[0].raw_score * top for m in again])
    scores = [m.score for m in interleaved.matches]
    assert scores == sorted(scores, reverse=True)
    assert [m.chunk_id for m in interleaved.matches if not m.expanded] == [m.chunk_id for m in fused]

    # min_score: the same expansion keeps exactly the chunks at or above it; the fused answer stands
    threshold = expanded[len(expanded) // 2].explain[0].contribution
    cut = await expanded_search(stack, expansion_top_n=2, expansion_min_score=threshold)
    assert [m.chunk_id for m in cut.matches if m.expanded] == [
        m.chunk_id for m in expanded if m.explain[0].contribution >= threshold
    ]
    assert [m.chunk_id for m in cut.matches if not m.expanded] == [m.chunk_id for m in fused]
