"""What a search leg keeps in memory of each small corpus, per committed version.

A leg that can answer a small corpus from memory (the vector leg's exact scan, the sparse leg's
BM25) reads the corpus once per committed generation into a snapshot of its own kind. A snapshot
is used only while `CorpusVersions` says its version (generation and life) is still the committed
one: a NOTIFY drops it at the next commit, deletion or re-creation. At most `budget_bytes` of
snapshots are kept, the least recently searched dropped first; a budget of 0 keeps none.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

import asyncpg

from tribrid.stores.corpus_versions import CorpusVersions, Version


class Kept(Protocol):
    @property
    def version(self) -> Version: ...

    @property
    def nbytes(self) -> int: ...


@dataclass(frozen=True, slots=True)
class TooLarge:
    """A corpus version with more chunks than the leg takes from memory: not kept."""

    version: Version


K = TypeVar("K", bound=Kept)
# reads a corpus's snapshot: None for an unknown or uncommitted corpus, TooLarge above max_rows
Loader = Callable[[asyncpg.Pool, str, int], Awaitable[K | TooLarge | None]]


async def corpus_row(conn: asyncpg.Connection, corpus_id: str) -> asyncpg.Record | None:
    """The corpus's row with its `version` (generation, life), None unless it is committed; read
    in the loader's transaction, so that its rows are of that version."""
    row: asyncpg.Record | None = await conn.fetchrow(
        "SELECT generation, created_at, chunk_count, avg_chunk_terms, embedding_model"
        " FROM corpora WHERE corpus_id = $1",
        corpus_id,
    )
    return None if row is None or row["generation"] == 0 else row


def version_of(row: asyncpg.Record) -> Version:
    return int(row["generation"]), row["created_at"].isoformat()  # as corpus_version says


class SmallCorpora(Generic[K]):
    """Snapshots of the small corpora searched lately, up to `budget_bytes` in all."""

    def __init__(
        self, pool: asyncpg.Pool, versions: CorpusVersions, max_rows: int, budget_bytes: int, load: Loader[K]
    ) -> None:
        self._pool = pool
        self._versions = versions
        self._max_rows = max_rows
        self._budget = budget_bytes
        self._read = load
        self._kept: OrderedDict[str, K | TooLarge] = OrderedDict()
        self._loading: dict[str, asyncio.Lock] = {}
        self.loads = 0

    @property
    def kept_bytes(self) -> int:
        return sum(s.nbytes for s in self._kept.values() if not isinstance(s, TooLarge))

    async def get(self, corpus_id: str) -> K | None:
        """The corpus's snapshot at its committed version; None when it is unknown, or larger than
        the leg takes or than the budget (the SQL path answers those)."""
        if self._budget <= 0:
            return None
        version = await self._versions.get(corpus_id)
        if version is None:
            return None
        kept = self._current(corpus_id, version)
        if kept is None:
            lock = self._loading.setdefault(corpus_id, asyncio.Lock())
            async with lock:  # a burst of first searches reads the corpus once
                kept = self._current(corpus_id, version)
                if kept is None:
                    kept = await self._load(corpus_id, version)
        return None if kept is None or isinstance(kept, TooLarge) else kept

    def _current(self, corpus_id: str, version: Version) -> K | TooLarge | None:
        kept = self._kept.get(corpus_id)
        if kept is None or kept.version != version:
            return None
        self._kept.move_to_end(corpus_id)
        return kept

    async def _load(self, corpus_id: str, version: Version) -> K | TooLarge | None:
        read = await self._read(self._pool, corpus_id, self._max_rows)
        self.loads += 1
        if read is None or read.version != version:
            # committed again (or deleted) since the version was read: the next search reads anew
            self._kept.pop(corpus_id, None)
            return None
        if not isinstance(read, TooLarge) and read.nbytes > self._budget:
            read = TooLarge(read.version)
        self._kept[corpus_id] = read
        self._kept.move_to_end(corpus_id)
        while self.kept_bytes > self._budget:
            self._kept.popitem(last=False)
        return read
