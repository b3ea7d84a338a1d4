"""The document graph's SIMILAR_TO edges from chunk vectors, hand-computed."""

from __future__ import annotations

import numpy as np

from services.indexer.document_graph import similar_chunks
from tribrid.models import Relation


def test_similar_chunks_keeps_the_k_nearest_at_or_above_the_threshold() -> None:
    vectors = {
        "a": np.array([1.0, 0.0, 0.0]),
        "b": np.array([0.9, 0.1, 0.0]),  # cos(a, b) = 0.9939
        "c": np.array([0.6, 0.8, 0.0]),  # cos(a, c) = 0.6, cos(b, c) = 0.6727
        "d": np.array([0.0, 0.0, 2.0]),  # orthogonal to all
    }
    cos_ab = 0.9 / np.hypot(0.9, 0.1)
    cos_bc = (0.9 * 0.6 + 0.1 * 0.8) / np.hypot(0.9, 0.1)
    assert similar_chunks(vectors, 0.7, 5) == [Relation("a", "b", "similar_to", similarity=cos_ab)]
    # a lower threshold lets c in; k = 1 keeps each chunk's nearest, an edge kept by either end
    assert similar_chunks(vectors, 0.5, 1) == [
        Relation("a", "b", "similar_to", similarity=cos_ab),
        Relation("b", "c", "similar_to", similarity=cos_bc),
    ]
    assert similar_chunks(vectors, 0.5, 0) == []
    assert similar_chunks({"a": vectors["a"]}, 0.0, 3) == []
