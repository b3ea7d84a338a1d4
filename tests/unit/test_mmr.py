"""Maximal marginal relevance over the fused candidates (services/fusion/mmr.py)."""

from __future__ import annotations

import numpy as np

from services.fusion.mmr import diversify, mmr_order
from tribrid.v1 import common_pb2

# two near-duplicates (a, a'), then two different chunks
VECTORS = np.array([[1.0, 0.0, 0.0], [0.99, 0.14, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])


def test_lambda_one_is_the_fused_order() -> None:
    assert mmr_order([0.9, 0.8, 0.8, 0.1], VECTORS, 1.0) == [0, 1, 2, 3]


def test_a_near_duplicate_moves_below_different_chunks() -> None:
    assert mmr_order([1.0, 0.95, 0.7, 0.6], VECTORS, 0.5) == [0, 2, 3, 1]
    # weighing relevance more, the duplicate stays above the weakest chunk only
    assert mmr_order([1.0, 0.95, 0.7, 0.0], VECTORS, 0.7) == [0, 2, 1, 3]
    assert mmr_order([1.0, 0.95, 0.7, 0.0], VECTORS, 0.8) == [0, 1, 2, 3]


def test_equal_scores_and_edge_cases() -> None:
    assert mmr_order([], np.zeros((0, 3)), 0.5) == []
    assert mmr_order([0.4], VECTORS[:1], 0.0) == [0]
    # every score equal: relevance is 1 for all, diversity decides after the first
    assert mmr_order([0.5, 0.5, 0.5], VECTORS[:3], 0.5) == [0, 2, 1]


def test_diversify_keeps_matches_without_a_vector_after_the_others() -> None:
    matches = [
        common_pb2.ChunkMatch(chunk_id=c, score=s)
        for c, s in (("a", 1.0), ("x", 0.97), ("b", 0.95), ("c", 0.7))
    ]
    vectors = {"a": VECTORS[0], "b": VECTORS[1], "c": VECTORS[2]}
    order = [m.chunk_id for m in diversify(matches, vectors, 0.5)]
    assert order == ["a", "c", "b", "x"]
    assert [m.score for m in diversify(matches, vectors, 1.0)] == [1.0, 0.95, 0.7, 0.97]
