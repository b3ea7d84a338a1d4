"""The graph leg reads chunk rows in rank order, only until top_k of them pass, and once per graph
generation."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from functools import partial

import asyncpg
import pytest

from services.graph import search
from services.graph.chunk_rows import GenerationRows
from tests.stack import Stack, StoredChunk, store_committed_chunks
from tribrid.stores.postgres import ChunkRow, fetch_chunks
from tribrid.v1 import common_pb2

# (chunk id, path, language) of the stored chunks; "c" is scored below but has no stored row
STORED = [("a", "app/a.py", "python"), ("b", "docs/b.md", "markdown")] + [
    (cid, f"app/{cid}.py", "python") for cid in "def"
]


@pytest.fixture
async def corpus(stack: Stack) -> AsyncIterator[str]:
    """A committed corpus holding the STORED chunks, in the real PostgreSQL."""
    corpus_id = f"gtop-{uuid.uuid4().hex[:10]}"
    chunks = [StoredChunk(chunk_id, path, language, chunk_id, "pass") for chunk_id, path, language in STORED]
    await store_committed_chunks(stack, corpus_id, 1, chunks)
    yield corpus_id
    await (await stack.resources.pool()).execute("DELETE FROM corpora WHERE corpus_id = $1", corpus_id)


def explain(chunk_id: str) -> tuple[str, common_pb2.GraphProvenance]:
    return f"detail {chunk_id}", common_pb2.GraphProvenance()


def best(scores: dict[str, float]) -> dict[str, search._Best]:
    """Candidates by chunk id (all at one hop)."""
    return {cid: search._Best(score, 1, cid, partial(explain, cid)) for cid, score in scores.items()}


class Spy:
    """The chunk ids of each read of PostgreSQL: a spy around the real read."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool
        self.asked: list[list[str]] = []

    async def fetch(self, corpus_id: str, chunk_ids: Sequence[str]) -> dict[str, ChunkRow]:
        self.asked.append(list(chunk_ids))
        return await fetch_chunks(self.pool, corpus_id, chunk_ids)


async def test_top_chunks_in_rank_order_reading_only_what_is_needed(stack: Stack, corpus: str) -> None:
    pool = Spy(await stack.resources.pool())
    reads = pool.asked
    candidates = best({"e": 0.2, "a": 0.9, "c": 0.8, "b": 0.8, "d": 0.5, "f": 0.5})
    top = await search._top_chunks(pool, corpus, candidates, 2)
    assert [r.chunk_id for r in top] == ["a", "b"]  # ties by chunk id; "c" is not stored
    assert reads == [["a", "b"]]
    reads.clear()
    top = await search._top_chunks(pool, corpus, candidates, 3)
    assert [r.chunk_id for r in top] == ["a", "b", "d"]
    assert reads == [["a", "b", "c"], ["d", "f", "e"]]  # "c" missing: one batch more
    reads.clear()
    top = await search._top_chunks(pool, corpus, candidates, 9, r".*\.py$", ["python"])
    assert [r.chunk_id for r in top] == ["a", "d", "f", "e"]
    result = search._result(top[:1], candidates)
    assert [(m.chunk.chunk_id, m.score, m.detail) for m in result.chunks] == [("a", 0.9, "detail a")]


async def test_a_generations_rows_are_read_once_and_kept_within_their_bound(
    stack: Stack, corpus: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[list[str]] = []

    async def spy(pool: asyncpg.Pool, corpus_id: str, chunk_ids: Sequence[str]) -> dict[str, ChunkRow]:
        asked.append(list(chunk_ids))
        return await fetch_chunks(pool, corpus_id, chunk_ids)

    monkeypatch.setattr("services.graph.chunk_rows.fetch_chunks", spy)
    rows = GenerationRows(await stack.resources.pool(), max_rows=4)
    first = await rows.at("g1").fetch(corpus, ["a", "b", "c"])
    assert sorted(first) == ["a", "b"] and asked == [["a", "b", "c"]]  # "c" has no row
    again = await rows.at("g1").fetch(corpus, ["c", "b", "a"])
    assert again == first and len(asked) == 1  # kept, the missing row too
    assert await rows.at("g2").fetch(corpus, ["a"]) == {"a": first["a"]}  # a new generation reads
    assert asked[-1] == ["a"]
    await rows.at("g1").fetch(corpus, ["d", "e"])  # 6 kept > 4: the least recently read go
    await rows.at("g1").fetch(corpus, ["a", "b", "c", "e"])
    assert asked[-1] == ["b", "c"]  # g1's "c" and "b" were read longest ago; "a" again after them
