"""The graph leg reads chunk rows in rank order, only until top_k of them pass."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from functools import partial

import asyncpg
import pytest

from services.graph import search
from tests.stack import Stack, StoredChunk, store_committed_chunks
from tribrid.stores.postgres import ChunkRow
from tribrid.stores.postgres import fetch_chunks as real_fetch
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


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The chunk ids of each read the graph leg makes: a spy around the real read."""
    asked: list[list[str]] = []

    async def fetch_chunks(
        pool: asyncpg.Pool, corpus_id: str, chunk_ids: Sequence[str]
    ) -> dict[str, ChunkRow]:
        asked.append(list(chunk_ids))
        return await real_fetch(pool, corpus_id, chunk_ids)

    monkeypatch.setattr(search, "fetch_chunks", fetch_chunks)
    return asked


async def test_top_chunks_in_rank_order_reading_only_what_is_needed(
    stack: Stack, corpus: str, reads: list[list[str]]
) -> None:
    pool = await stack.resources.pool()
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
