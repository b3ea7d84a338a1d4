"""What a search leg keeps in memory of each small corpus, per committed version.

A leg that can answer a small corpus from memory (the vector leg's exact scan, the sparse leg's
BM25) reads the corpus once per committed generation into a snapshot of its own kind. A snapshot
is used only while `CorpusVersions` says its version (generation and life) is still the committed
one: a NOTIFY drops it at the next commit, deletion or re-creation. Until a version's snapshot is
read (in the background, started by its first search), searches go to PostgreSQL. At most `budget_bytes` of
snapshots are kept, the least recently searched dropped first; a budget of 0 keeps none.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

import asyncpg

from tribrid.stores.corpus_versions import CorpusVersions, Version
from tribrid.stores.postgres import version_of

log = logging.getLogger(__name__)

RETRY_S = 30.0  # a corpus whose read failed is searched in PostgreSQL this long before another try
# A read's longest statements wait this long, not the search pool's command timeout: the sparse
# postings of bench-scale's 100k-chunk corpus are aggregated in 15 s on an idle machine, and a read
# cut short is done again from the start.
READ_TIMEOUT_S = 600.0


class Kept(Protocol):
    @property
    def version(self) -> Version: ...

    @property
    def nbytes(self) -> int: ...


def release_free_memory() -> None:
    """Hand the heap's free pages back to the system (glibc's malloc_trim). A read leaves many of
    them between the objects it keeps: 33 of the 138 MB a 100k-chunk corpus's sparse read had added
    to the leg's RSS. Elsewhere (another C library) nothing happens."""
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _libc()


@dataclass(frozen=True, slots=True)
class TooLarge:
    """A corpus version larger than the leg takes into memory: not kept."""

    version: Version


@dataclass(frozen=True, slots=True)
class Limits:
    """What a leg keeps of one corpus: at most `max_rows` chunks and `max_bytes` of snapshot (the
    whole budget: a larger one could never be kept)."""

    max_rows: int
    max_bytes: int


K = TypeVar("K", bound=Kept)
# reads a corpus's snapshot: None for an unknown or uncommitted corpus, TooLarge above the limits
# (a loader that can tell its size before reading says so without reading)
Loader = Callable[[asyncpg.Pool, str, Limits], Awaitable[K | TooLarge | None]]


async def corpus_row(
    conn: asyncpg.Connection, corpus_id: str, max_rows: int
) -> asyncpg.Record | TooLarge | None:
    """The corpus's row, read in the loader's transaction so that its rows are of that version;
    None unless it is committed, TooLarge above `max_rows` chunks."""
    row: asyncpg.Record | None = await conn.fetchrow(
        "SELECT generation, created_at, chunk_count, avg_chunk_terms, embedding_model"
        " FROM corpora WHERE corpus_id = $1",
        corpus_id,
    )
    if row is None or row["generation"] == 0:
        return None
    return TooLarge(version_of(row)) if row["chunk_count"] > max_rows else row


class SmallCorpora(Generic[K]):
    """Snapshots of the small corpora searched lately, up to `budget_bytes` in all."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        versions: CorpusVersions,
        max_rows: int,
        budget_bytes: int,
        load: Loader[K],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._pool = pool
        self._versions = versions
        self._limits = Limits(max_rows, budget_bytes)
        self._read = load
        self._clock = clock
        self._kept: OrderedDict[str, K | TooLarge] = OrderedDict()
        self._loading: dict[str, asyncio.Task[None]] = {}
        self._retry_at: dict[str, float] = {}  # after a failed read, by corpus
        self.loads = 0

    @property
    def kept_bytes(self) -> int:
        return sum(s.nbytes for s in self._kept.values() if not isinstance(s, TooLarge))

    async def get(self, corpus_id: str) -> K | None:
        """The corpus's snapshot at its committed version; None when it is unknown, larger than
        the leg takes or than the budget, or still being read: the SQL path answers those. The
        first search of a version starts the read in the background and is not kept waiting."""
        if self._limits.max_bytes <= 0:
            return None
        version = await self._versions.get(corpus_id)
        if version is None:
            return None
        kept = self._current(corpus_id, version)
        if kept is None:
            self._start(corpus_id, version)
            return None
        return None if isinstance(kept, TooLarge) else kept

    async def ready(self, corpus_id: str) -> K | None:
        """`get`, after waiting for the read it starts (for tests and warm-ups)."""
        found = await self.get(corpus_id)
        task = self._loading.get(corpus_id)
        if found is None and task is not None:
            await asyncio.shield(task)
            found = await self.get(corpus_id)
        return found

    def _current(self, corpus_id: str, version: Version) -> K | TooLarge | None:
        kept = self._kept.get(corpus_id)
        if kept is None or kept.version != version:
            return None
        self._kept.move_to_end(corpus_id)
        return kept

    def _start(self, corpus_id: str, version: Version) -> None:
        if corpus_id in self._loading or self._clock() < self._retry_at.get(corpus_id, 0.0):
            return
        task = asyncio.create_task(self._load(corpus_id, version))
        self._loading[corpus_id] = task
        task.add_done_callback(lambda _: self._loading.pop(corpus_id, None))

    async def _load(self, corpus_id: str, version: Version) -> None:
        try:
            read = await self._read(self._pool, corpus_id, self._limits)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError) as err:
            self._retry_at[corpus_id] = self._clock() + RETRY_S
            log.warning("corpus %r not read into memory, searched in PostgreSQL: %r", corpus_id, err)
            return
        self.loads += 1
        if read is None or read.version != version:
            # committed again (or deleted) since the version was read: the next search reads anew
            self._kept.pop(corpus_id, None)
            return
        if not isinstance(read, TooLarge) and read.nbytes > self._limits.max_bytes:
            read = TooLarge(read.version)
        self._kept[corpus_id] = read
        self._kept.move_to_end(corpus_id)
        while self.kept_bytes > self._limits.max_bytes:
            self._kept.popitem(last=False)
        release_free_memory()
