"""Each corpus's committed generation, read once and kept until PostgreSQL says it changed.

A search must read the committed generation (a stale graph is misleading context), and asking
PostgreSQL on every request was a round trip per search. A trigger on `corpora` notifies
`CORPORA_CHANNEL` with the corpus id on every change, delivered at COMMIT; a dedicated connection
LISTENs, and a corpus's kept version is dropped when its notification comes. Without a listening
connection (not yet opened, or lost) every call reads PostgreSQL, as before. A connection that
cannot be opened (a pooler that does not pass LISTEN on, a connection limit) is tried again after
`RETRY_S`, not on every request.
"""

from __future__ import annotations

import asyncio
import logging
import time

import asyncpg

from tribrid.config import PostgresConfig
from tribrid.stores.postgres import CORPORA_CHANNEL, corpus_version

log = logging.getLogger(__name__)

Version = tuple[int, str] | None  # corpus_version's answer: (generation, the corpus's life) or None

RETRY_S = 30.0


class CorpusVersions:
    def __init__(self, pool: asyncpg.Pool, cfg: PostgresConfig) -> None:
        self._pool = pool
        self._cfg = cfg
        self._kept: dict[str, Version] = {}
        self._listener: asyncpg.Connection | None = None
        self._connecting = asyncio.Lock()
        # changes heard, and listeners opened or lost: a version read meanwhile may be the old one
        self._changes = 0
        self._retry_at = 0.0  # monotonic time of the next try after a failed one
        self.connect_attempts = 0

    async def get(self, corpus_id: str) -> Version:
        """corpus_version(corpus_id), from what was kept while no change was heard."""
        if self._listener is not None and corpus_id in self._kept:
            return self._kept[corpus_id]
        await self._listen()
        changes = self._changes
        version = await corpus_version(self._pool, corpus_id)
        if self._listener is not None and changes == self._changes:
            self._kept[corpus_id] = version
        return version

    async def _listen(self) -> None:
        if self._listener is not None or time.monotonic() < self._retry_at:
            return
        async with self._connecting:
            if self._listener is not None or time.monotonic() < self._retry_at:
                return
            self.connect_attempts += 1
            try:
                conn = await asyncpg.connect(self._cfg.effective_dsn(), timeout=10)
                await conn.add_listener(CORPORA_CHANNEL, self._heard)
            except (OSError, asyncpg.PostgresError, TimeoutError) as err:
                self._retry_at = time.monotonic() + RETRY_S
                log.warning("corpus changes not heard, reading each time for %.0f s: %s", RETRY_S, err)
                return
            conn.add_termination_listener(self._lost)
            self._kept.clear()  # changes made while nobody listened
            self._changes += 1
            self._listener = conn

    def _heard(self, conn: object, pid: int, channel: str, corpus_id: str) -> None:
        self._changes += 1
        self._kept.pop(corpus_id, None)

    def _lost(self, conn: object) -> None:
        self._listener = None
        self._kept.clear()
        self._changes += 1  # a read in flight may have missed a change nobody heard

    async def close(self) -> None:
        listener, self._listener = self._listener, None
        self._kept.clear()
        if listener is not None:
            await listener.close()
