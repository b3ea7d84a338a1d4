"""The graph-expansion stage: its scoring and placement against hand-computed examples (through the
gateway against the real graph service: tests/integration/test_expansion_gateway.py)."""

from __future__ import annotations

import pytest

from services.fusion.expansion import (
    Expanded,
    ExpansionSettings,
    FusedChunk,
    ReachedChunk,
    place,
    score_expanded,
    source_chunk,
)

# A document answer: fused scores 0.5, 0.4, 0.25, 0.2 (a 0.5 top: chunk scores 1, 0.8, 0.5, 0.4).
FUSED = [
    FusedChunk("a", 0.5, "guide.md"),
    FusedChunk("b", 0.4, "guide.md"),
    FusedChunk("c", 0.25, "faq.md"),
    FusedChunk("d", 0.2, "faq.md"),
]


def reached(chunk_id: str, graph: float, seed: str, depth: int = 1, path: str = "") -> ReachedChunk:
    return ReachedChunk(chunk_id, graph, seed, depth, path or f"{chunk_id}.md")


def kept(expanded: list[Expanded]) -> list[tuple[str, str, float]]:
    return [(e.reached.chunk_id, e.source_chunk_id, round(e.hybrid, 9)) for e in expanded]


def test_depth_one_and_two_hybrid_scores() -> None:
    answer = [
        # SIMILAR_TO from a, similarity 0.9: graph 0.9 -> 0.7 x 1 + 0.3 x 0.9 = 0.97
        reached("x", 0.9, "a", depth=1),
        # from b: MENTIONS -> RELATED_TO (strength 0.75) -> MENTIONS, hop penalty 0.8: graph 0.6
        # -> 0.7 x 0.8 + 0.3 x 0.6 = 0.74
        reached("y", 0.6, "b", depth=2),
        # from a at depth 3 (penalty 0.6 x strength 0.5 = 0.3): 0.7 + 0.09 = 0.79
        reached("z", 0.3, "a", depth=3),
    ]
    out = score_expanded(FUSED, answer, ExpansionSettings(top_n=2))
    assert kept(out) == [("x", "a", 0.97), ("z", "a", 0.79), ("y", "b", 0.74)]
    assert [(e.chunk_score, e.graph_score, e.rank, e.reached.depth) for e in out] == [
        (1.0, 0.9, 1, 1),
        (1.0, 0.3, 2, 3),
        (0.8, 0.6, 3, 2),
    ]
    # appended: hybrid x the lowest fused score (0.2)
    assert [e.score for e in out] == pytest.approx([0.194, 0.158, 0.148])


def test_min_score_keeps_the_threshold_itself() -> None:
    # chunk_weight 1: the hybrid is the chunk score alone (b: 0.8, c: 0.5, d: 0.4)
    answer = [reached("p", 0.0, "b"), reached("q", 0.0, "c"), reached("r", 0.0, "d")]
    only_chunk = ExpansionSettings(top_n=4, chunk_weight=1.0, min_score=0.5)
    assert kept(score_expanded(FUSED, answer, only_chunk)) == [("p", "b", 0.8), ("q", "c", 0.5)]
    higher = ExpansionSettings(top_n=4, chunk_weight=1.0, min_score=0.500001)
    assert kept(score_expanded(FUSED, answer, higher)) == [("p", "b", 0.8)]
    # the default 0.3 with the default weight: 0.7 x 0.4 + 0.3 x 0.05 = 0.295 is dropped
    assert kept(score_expanded(FUSED, [reached("s", 0.05, "d")], ExpansionSettings(top_n=4))) == []
    assert kept(score_expanded(FUSED, [reached("s", 0.1, "d")], ExpansionSettings(top_n=4))) == [
        ("s", "d", 0.31)
    ]


def test_max_chunks_keeps_the_best_hybrids() -> None:
    answer = [reached(f"n{i}", i / 10, "a") for i in range(1, 6)]
    out = score_expanded(FUSED, answer, ExpansionSettings(max_chunks=2))
    assert kept(out) == [("n5", "a", 0.85), ("n4", "a", 0.82)]
    assert [e.rank for e in out] == [1, 2]


def test_dedup_against_the_fused_list_and_among_the_reached() -> None:
    answer = [
        reached("c", 1.0, "a"),  # fused (below the top 2): never expanded
        reached("a", 1.0, "b"),  # an expanded chunk itself
        reached("m", 0.2, "a"),  # 0.76 from a ...
        reached("m", 0.9, "b"),  # ... 0.83 from b: the best hybrid wins
        reached("t", 0.5, "b"),  # 0.71 from b, ...
        reached("t", 0.5, "b"),  # ... twice
        reached("u", 0.5, "a"),  # 0.85: the same as ...
        reached("s", 0.5, "a"),  # ... s: ties by chunk id
    ]
    out = score_expanded(FUSED, answer, ExpansionSettings(top_n=2))
    assert kept(out) == [("s", "a", 0.85), ("u", "a", 0.85), ("m", "b", 0.83), ("t", "b", 0.71)]
    # equal hybrids from two sources: the lower source chunk id, whatever the answer's order
    both = ExpansionSettings(top_n=2, chunk_weight=0.0)
    for order in (
        [reached("v", 0.5, "b"), reached("v", 0.5, "a")],
        [reached("v", 0.5, "a"), reached("v", 0.5, "b")],
    ):
        assert kept(score_expanded(FUSED, order, both)) == [("v", "a", 0.5)]


def test_chunk_weight_trades_the_source_rank_against_the_graph_score() -> None:
    answer = [reached("near_top", 0.2, "a"), reached("strong_edge", 1.0, "c")]
    settings = {w: ExpansionSettings(top_n=4, chunk_weight=w, min_score=0.0) for w in (0.0, 0.7, 1.0)}
    # chunk scores 1 and 0.5; graph scores 0.2 and 1
    assert kept(score_expanded(FUSED, answer, settings[0.0])) == [
        ("strong_edge", "c", 1.0),
        ("near_top", "a", 0.2),
    ]
    assert kept(score_expanded(FUSED, answer, settings[0.7])) == [
        ("near_top", "a", 0.76),
        ("strong_edge", "c", 0.65),
    ]
    assert kept(score_expanded(FUSED, answer, settings[1.0])) == [
        ("near_top", "a", 1.0),
        ("strong_edge", "c", 0.5),
    ]


def test_placement_append_and_interleave() -> None:
    answer = [reached("x", 0.9, "a"), reached("y", 0.0, "b"), reached("w", 0.0, "d")]
    appended = ExpansionSettings(top_n=4)
    out = score_expanded(FUSED, answer, appended)
    # hybrids 0.97, 0.56, 0.28 (< 0.3: dropped)
    assert kept(out) == [("x", "a", 0.97), ("y", "b", 0.56)]
    ranked = place(FUSED, out, "append")
    assert [p.chunk_id for p in ranked] == ["a", "b", "c", "d", "x", "y"]
    assert [p.score for p in ranked] == pytest.approx([0.5, 0.4, 0.25, 0.2, 0.194, 0.112])
    interleaved = ExpansionSettings(top_n=4, placement="interleave")
    out = score_expanded(FUSED, answer, interleaved)
    # hybrid x the top fused score (0.5): 0.485 between a and b, 0.28 between b and c
    ranked = place(FUSED, out, "interleave")
    assert [p.chunk_id for p in ranked] == ["a", "x", "b", "y", "c", "d"]
    assert [p.score for p in ranked] == pytest.approx([0.5, 0.485, 0.4, 0.28, 0.25, 0.2])
    assert [p.expanded is not None for p in ranked] == [False, True, False, True, False, False]
    # an expanded chunk scoring the same as a fused one comes after it; below every fused: last
    tie = score_expanded(
        FUSED, [reached("e", 0.0, "c")], ExpansionSettings(top_n=4, chunk_weight=1.0, placement="interleave")
    )
    assert [p.chunk_id for p in place(FUSED, tie, "interleave")] == ["a", "b", "c", "e", "d"]
    low = score_expanded(
        FUSED, [reached("f", 0.0, "d")], ExpansionSettings(top_n=4, chunk_weight=0.8, placement="interleave")
    )
    assert [p.chunk_id for p in place(FUSED, low, "interleave")] == ["a", "b", "c", "d", "f"]


def test_code_answers_source_by_symbol_and_scale_into_unit_range() -> None:
    fused = [
        FusedChunk("k1", 0.04, "shop/cart.py", "shop.cart.Cart.total"),
        FusedChunk("k2", 0.03, "shop/tax.py", "shop.tax.rate"),
        FusedChunk("k3", 0.01, "shop/main.py", "shop.main"),
    ]
    assert source_chunk("shop.tax.rate", fused).chunk_id == "k2"
    assert source_chunk("k1", fused).chunk_id == "k1"
    # an entity no expanded chunk defines: the expanded chunk with the lowest fused score
    assert source_chunk("shop.cart.Cart", fused[:2]).chunk_id == "k2"
    answer = [
        ReachedChunk("n1", 2.4, "shop.cart.Cart.total", 1, "shop/price.py"),
        ReachedChunk("n2", 1.2, "shop.tax.rate", 2, "shop/price.py"),
        ReachedChunk("n3", 0.6, "shop.cart.Cart", 1, "shop/util.py"),
    ]
    out = score_expanded(fused, answer, ExpansionSettings(top_n=2))
    # graph scores over the largest (2.4): 1, 0.5, 0.25; chunk scores 1, 0.75, 0.75 (fallback k2)
    assert kept(out) == [("n1", "k1", 1.0), ("n2", "k2", 0.675), ("n3", "k2", 0.6)]
    # max_per_file counts the fused chunks' files too: one more from shop/price.py, none after
    capped = score_expanded(fused, answer, ExpansionSettings(top_n=2, max_per_file=1))
    assert kept(capped) == [("n1", "k1", 1.0), ("n3", "k2", 0.6)]


def test_nothing_fused_nothing_expanded() -> None:
    assert score_expanded([], [reached("x", 1.0, "a")], ExpansionSettings()) == []
    assert place([], [], "interleave") == []
