"""The vector leg's query embedding without a store: the micro-batcher folds concurrent queries into
one model call and bounds its queue; the cache embeds a query once."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np
import pytest

from tribrid.embedding import EmbeddingOverloaded, QueryBatcher, QueryEmbeddingCache, Vectors


def _unit(rows: np.ndarray) -> Vectors:
    out: Vectors = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
    return out


class CountingEmbedder:
    """Deterministic unit vectors; records each call's batch; optionally slow."""

    name = "counting"
    dim = 8

    def __init__(self, delay: float = 0.0) -> None:
        self.batches: list[list[str]] = []
        self.delay = delay

    async def embed(self, texts: Sequence[str]) -> Vectors:
        self.batches.append(list(texts))
        await asyncio.sleep(self.delay)
        rows = np.array([[hash((t, j)) % 1000 + 1 for j in range(self.dim)] for t in texts], dtype=np.float64)
        return _unit(rows)


async def test_micro_batcher_batches_concurrent_queries() -> None:
    fake = CountingEmbedder(delay=0.01)
    batcher = QueryBatcher(fake, max_batch=32, max_wait_ms=5, max_queue=100)
    texts = [f"query {i}" for i in range(20)] + ["query 0"]
    vectors = await asyncio.gather(*(batcher.embed(t) for t in texts))
    assert len(fake.batches) == 1 and len(fake.batches[0]) == 20  # one model call, duplicates folded
    assert np.allclose(vectors[0], vectors[-1])
    direct = await CountingEmbedder().embed(["query 3"])
    assert np.allclose(vectors[3], direct[0])
    await batcher.close()


async def test_a_lone_question_is_not_held_for_company_that_questions_together_get() -> None:
    """With a window far longer than the test (1,000 s), each step below can only finish as the
    batcher is meant to work: a question alone after a lone one goes at once, and one after a call
    that held two waits for company (here a second question fills the batch of 2)."""
    fake = CountingEmbedder()
    batcher = QueryBatcher(fake, max_batch=2, max_wait_ms=1_000_000, max_queue=10)

    async def settle(*steps: asyncio.Future[Vectors]) -> None:
        await asyncio.wait_for(asyncio.gather(*steps), timeout=30)

    await settle(asyncio.ensure_future(batcher.embed("alone")))  # no window: nothing came before
    await settle(asyncio.ensure_future(batcher.embed("still alone")))  # the last call held one
    await settle(*(asyncio.ensure_future(batcher.embed(t)) for t in ("one", "two")))  # queued together
    held = asyncio.ensure_future(batcher.embed("after two"))
    await asyncio.sleep(0.05)
    assert not held.done()  # the last call held two: it waits for company
    await settle(held, asyncio.ensure_future(batcher.embed("company")))
    assert fake.batches == [["alone"], ["still alone"], ["one", "two"], ["after two", "company"]]
    await batcher.close()


async def test_micro_batcher_queue_is_bounded() -> None:
    fake = CountingEmbedder(delay=0.2)
    batcher = QueryBatcher(fake, max_batch=1, max_wait_ms=0, max_queue=2)
    first = asyncio.ensure_future(batcher.embed("a"))
    await asyncio.sleep(0.02)  # the worker holds "a" in the model call
    queued = [asyncio.ensure_future(batcher.embed(t)) for t in ("b", "c")]
    await asyncio.sleep(0)
    with pytest.raises(EmbeddingOverloaded):
        await batcher.embed("d")
    await asyncio.gather(first, *queued)
    await batcher.close()


async def test_query_cache_embeds_once() -> None:
    fake = CountingEmbedder()
    cache = QueryEmbeddingCache(fake, 2, QueryBatcher(fake, max_wait_ms=1))
    a1, a2 = await asyncio.gather(cache.embed_query("a"), cache.embed_query("a"))
    assert np.array_equal(a1, a2) and len(fake.batches) == 1
    await cache.embed_query("a")
    assert len(fake.batches) == 1 and cache.hits == 2 and cache.misses == 1
    await cache.embed_query("b")
    await cache.embed_query("c")  # evicts "a"
    await cache.embed_query("a")
    assert len(fake.batches) == 4
