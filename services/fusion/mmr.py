"""Diversity after fusion: maximal marginal relevance (Carbonell and Goldstein, 1998) over the top
fused matches, with the chunks' stored embeddings.

Each next match is the one with the highest lambda x relevance - (1 - lambda) x its greatest cosine
similarity to a match already placed, where relevance is the fused score scaled to 0..1 over the
pool. With lambda = 1 the order is the fused order, unchanged; a lower lambda moves near-duplicates down.
"""

from __future__ import annotations

import numpy as np

from tribrid.v1 import common_pb2


def mmr_order(relevance: list[float], vectors: np.ndarray, lam: float) -> list[int]:
    """Every index of `relevance` (fused order, best first) in MMR order; ties keep the fused order.
    `vectors`: one row per index, any length (rows are normalized here)."""
    n = len(relevance)
    if n == 0:
        return []
    scores = np.asarray(relevance, dtype=np.float64)
    spread = scores.max() - scores.min()
    rel = (scores - scores.min()) / spread if spread > 0 else np.ones(n)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.where(norms > 0, norms, 1.0)
    similarity = unit @ unit.T
    closest = np.full(n, -np.inf)  # greatest similarity to a placed match; none placed yet
    left = np.ones(n, dtype=bool)
    order: list[int] = []
    for _ in range(n):
        redundancy = np.where(np.isfinite(closest), closest, 0.0)
        value = np.where(left, lam * rel - (1 - lam) * redundancy, -np.inf)
        best = int(np.argmax(value))  # the first of equal values: fused order breaks ties
        order.append(best)
        left[best] = False
        closest = np.maximum(closest, similarity[best])
    return order


def diversify(
    matches: list[common_pb2.ChunkMatch], vectors: dict[str, np.ndarray], lam: float
) -> list[common_pb2.ChunkMatch]:
    """The matches in MMR order; a match without a stored vector keeps its place after the others
    (it cannot be compared)."""
    with_vector = [m for m in matches if m.chunk_id in vectors]
    if not with_vector:
        return matches
    stacked = np.stack([np.asarray(vectors[m.chunk_id], dtype=np.float64) for m in with_vector])
    order = mmr_order([m.score for m in with_vector], stacked, lam)
    return [with_vector[i] for i in order] + [m for m in matches if m.chunk_id not in vectors]
