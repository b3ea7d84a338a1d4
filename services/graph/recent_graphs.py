"""Which corpora's graphs the graph leg used last, kept in PostgreSQL across restarts.

A graph is searched in memory once its snapshot is loaded (services/graph/snapshot.py). The first
searches after a start went to the store while that loaded: 150-600 ms each on the 10k-chunk bench
corpus, against 10-15 ms from the snapshot. A leg that starts loads the graphs used last first.
"""

from __future__ import annotations

import asyncio
import logging
import time

import asyncpg

log = logging.getLogger(__name__)

# A corpus's use is written at most this often per process: one small upsert a few minutes apart
# keeps the order of use, where a write per search would cost every search.
WRITE_EVERY_S = 300.0


class RecentGraphs:
    def __init__(self, pool: asyncpg.Pool, write_every_s: float = WRITE_EVERY_S) -> None:
        self._pool = pool
        self._every = write_every_s
        self._written: dict[str, float] = {}  # corpus -> monotonic time of its last write
        self._writing: set[asyncio.Task[None]] = set()

    def used(self, corpus_id: str) -> None:
        """Note a use of this corpus's graph; the write happens off the request."""
        now = time.monotonic()
        last = self._written.get(corpus_id)
        if last is not None and now - last < self._every:
            return
        self._written[corpus_id] = now
        task = asyncio.get_running_loop().create_task(self._write(corpus_id))
        self._writing.add(task)  # a task nobody holds may be collected before it runs
        task.add_done_callback(self._writing.discard)

    async def _write(self, corpus_id: str) -> None:
        try:
            await self._pool.execute(
                """INSERT INTO graph_uses (corpus_id, used_at) VALUES ($1, now())
                   ON CONFLICT (corpus_id) DO UPDATE SET used_at = excluded.used_at""",
                corpus_id,
            )
        except asyncpg.ForeignKeyViolationError:
            pass  # the corpus was deleted meanwhile: nothing to remember
        except (asyncpg.PostgresError, OSError) as err:  # tried again WRITE_EVERY_S later
            log.warning("could not note the use of corpus %r's graph: %r", corpus_id, err)

    async def latest(self, limit: int) -> list[str]:
        """The `limit` corpora with a committed graph used most recently, latest first."""
        rows = await self._pool.fetch(
            """SELECT u.corpus_id FROM graph_uses u JOIN corpora c USING (corpus_id)
               WHERE c.generation > 0 ORDER BY u.used_at DESC, u.corpus_id LIMIT $1""",
            limit,
        )
        return [r["corpus_id"] for r in rows]

    async def drain(self) -> None:
        """Wait for the writes under way (tests, and a stopping service)."""
        if self._writing:
            await asyncio.gather(*self._writing, return_exceptions=True)
