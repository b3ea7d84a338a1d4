"""The graph leg reads chunk rows in rank order, only until top_k of them pass."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import asyncpg
import pytest

from services.graph import search
from tribrid.stores.postgres import ChunkRow
from tribrid.v1 import common_pb2


def row(chunk_id: str, path: str = "app/a.py", language: str = "python") -> ChunkRow:
    return ChunkRow(chunk_id, "c", path, 1, 2, language, "function", chunk_id, "pass")


STORED = {r.chunk_id: r for r in [row("a"), row("b", "docs/b.md", "markdown"), row("d"), row("e"), row("f")]}


def explain(chunk_id: str) -> tuple[str, common_pb2.GraphProvenance]:
    return f"detail {chunk_id}", common_pb2.GraphProvenance()


def best(scores: dict[str, float]) -> dict[str, search._Best]:
    """Candidates by chunk id (all at one hop); "c" has no stored row."""
    return {cid: search._Best(score, 1, cid, partial(explain, cid)) for cid, score in scores.items()}


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    asked: list[list[str]] = []

    async def fetch_chunks(
        pool: asyncpg.Pool, corpus_id: str, chunk_ids: Sequence[str]
    ) -> dict[str, ChunkRow]:
        asked.append(list(chunk_ids))
        return {cid: STORED[cid] for cid in chunk_ids if cid in STORED}

    monkeypatch.setattr(search, "fetch_chunks", fetch_chunks)
    return asked


async def test_top_chunks_in_rank_order_reading_only_what_is_needed(reads: list[list[str]]) -> None:
    candidates = best({"e": 0.2, "a": 0.9, "c": 0.8, "b": 0.8, "d": 0.5, "f": 0.5})
    pool = object()  # never used: fetch_chunks is replaced
    top = await search._top_chunks(pool, "c", candidates, 2)  # type: ignore[arg-type]
    assert [r.chunk_id for r in top] == ["a", "b"]  # ties by chunk id; "c" is not stored
    assert reads == [["a", "b"]]
    reads.clear()
    top = await search._top_chunks(pool, "c", candidates, 3)  # type: ignore[arg-type]
    assert [r.chunk_id for r in top] == ["a", "b", "d"]
    assert reads == [["a", "b", "c"], ["d", "f", "e"]]  # "c" missing: one batch more
    reads.clear()
    top = await search._top_chunks(pool, "c", candidates, 9, r".*\.py$", ["python"])  # type: ignore[arg-type]
    assert [r.chunk_id for r in top] == ["a", "d", "f", "e"]
    result = search._result(top[:1], candidates)
    assert [(m.chunk.chunk_id, m.score, m.detail) for m in result.chunks] == [("a", 0.9, "detail a")]
