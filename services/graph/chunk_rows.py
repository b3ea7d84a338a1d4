"""Where the graph leg reads the chunk rows of its hits (location, language, kind, ...), which the
graph does not hold.

`GenerationRows` reads each row from PostgreSQL once per graph generation and keeps it: the
committed chunks of a generation do not change until the next commit, which the leg sees as a new
graph key. Reading them on every search was a PostgreSQL round trip per answer (a tenth of the
graph leg's CPU under load on the 10k-chunk bench corpus, and PostgreSQL's own share).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import asyncpg

from tribrid.stores.postgres import ChunkRow, fetch_chunks


class ChunkSource(Protocol):
    async def fetch(self, corpus_id: str, chunk_ids: Sequence[str]) -> dict[str, ChunkRow]:
        """The committed rows of these chunk ids, by id (an id without one is left out)."""
        ...


class GenerationRows:
    """Chunk rows kept by (graph key, chunk id), the least recently read dropped past `max_rows`;
    a chunk that has no committed row is kept as such too."""

    def __init__(self, pool: asyncpg.Pool, max_rows: int) -> None:
        self._pool = pool
        self._max_rows = max_rows
        self._rows: OrderedDict[tuple[str, str], ChunkRow | None] = OrderedDict()

    def at(self, key: str) -> ChunkSource:
        """The rows of the graph generation stored under `key`."""
        return _AtKey(self, key)

    async def fetch(self, key: str, corpus_id: str, chunk_ids: Sequence[str]) -> dict[str, ChunkRow]:
        found: dict[str, ChunkRow] = {}
        missing: list[str] = []
        for chunk_id in chunk_ids:
            kept = (key, chunk_id)
            if kept not in self._rows:
                missing.append(chunk_id)
                continue
            self._rows.move_to_end(kept)
            if (row := self._rows[kept]) is not None:
                found[chunk_id] = row
        if missing:
            read = await fetch_chunks(self._pool, corpus_id, missing)
            for chunk_id in missing:
                self._rows[(key, chunk_id)] = read.get(chunk_id)
            found.update(read)
            while len(self._rows) > self._max_rows:
                self._rows.popitem(last=False)
        return found


@dataclass(frozen=True, slots=True)
class _AtKey:
    rows: GenerationRows
    key: str

    async def fetch(self, corpus_id: str, chunk_ids: Sequence[str]) -> dict[str, ChunkRow]:
        return await self.rows.fetch(self.key, corpus_id, chunk_ids)
