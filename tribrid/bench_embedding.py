"""The bench-only embedder: deterministic pseudo-random unit vectors, no model.

`make bench-scale` indexes up to 100k chunks; the real model embeds about 26 chunks/s here, more
than an hour for 100k. These vectors cost microseconds and keep everything else real: the rows,
the HNSW index and its size, the postings, the graph. Their similarities mean nothing, so the
vector leg's ranking (not its cost) is meaningless, and config validation refuses the provider
outside the bench (`EmbeddingConfig._bench_provider_only_in_bench`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from tribrid.config import EmbeddingConfig
from tribrid.embedding import Vectors

NAME = "bench-random (pseudo-random unit vectors, not a model)"


def random_unit_vector(text: str, dim: int) -> Vectors:
    """The same text always gives the same vector: a generator seeded by the text's hash."""
    seed = int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")
    vector = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    unit: Vectors = vector / np.float32(np.linalg.norm(vector))
    return unit


class BenchRandomEmbedder:
    """An `Embedder` whose vectors are a function of the text alone (see the module docstring)."""

    def __init__(self, cfg: EmbeddingConfig) -> None:
        # Recorded as the corpus's embedding model: a corpus indexed this way says so, and the
        # vector leg refuses to search it with a real model (and the other way round).
        self.name = NAME
        self.dim = cfg.dim

    async def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([random_unit_vector(text, self.dim) for text in texts])
