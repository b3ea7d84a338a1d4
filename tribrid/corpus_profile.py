"""What a corpus holds (prose or code, the names it defines), read once per committed generation.

The sparse leg picks its query stop words by it ("function" is content in a manual, filler in a
question about code) and the gateway its leg weights (the graph holds code entities: a corpus of
documents gets no graph weight from the query-kind profiles, and "who is a member of X" there is
not a question about class members). The names its code defines let the question reader
(`tribrid.question`) take a plain word for the definition it names ("what does requires call").
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import asyncpg

from tribrid.stores.postgres import committed
from tribrid.text import PROSE_LANGUAGES

# The chunks that are one definition (tree-sitter's), named by their symbol.
DEFINITION_KINDS = ("function", "class")
# How long a corpus's generation is trusted before it is read again (a cheap primary-key read;
# the chunk counts are recounted only when the generation moved).
CHECK_INTERVAL_S = 2.0


@dataclass(frozen=True, slots=True)
class CorpusProfile:
    generation: int
    chunks: int
    prose_chunks: int
    # The last part of every function's and class's name, in lower case ("replace" of
    # "starlette.datastructures.URL.replace").
    definition_names: frozenset[str] = frozenset()

    @property
    def prose_share(self) -> float:
        return self.prose_chunks / self.chunks if self.chunks else 0.0

    @property
    def code_share(self) -> float:
        return 1.0 - self.prose_share if self.chunks else 1.0

    @property
    def mostly_prose(self) -> bool:
        return self.prose_share >= 0.5


class CorpusProfiles:
    """Per-corpus profiles cached by generation; None for a corpus with nothing committed."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool
        self._cache: dict[str, tuple[float, CorpusProfile]] = {}

    async def get(self, corpus_id: str) -> CorpusProfile | None:
        now = time.monotonic()
        cached = self._cache.get(corpus_id)
        if cached is not None and now - cached[0] < CHECK_INTERVAL_S:
            return cached[1]
        generation = await self._pool.fetchval(
            "SELECT generation FROM corpora WHERE corpus_id = $1", corpus_id
        )
        if generation is None or generation == 0:
            self._cache.pop(corpus_id, None)
            return None
        if cached is not None and cached[1].generation == generation:
            self._cache[corpus_id] = (now, cached[1])
            return cached[1]
        row = await self._pool.fetchrow(
            f"""SELECT count(*) AS chunks, count(*) FILTER (WHERE c.language = ANY($2::text[])) AS prose
                FROM chunks c WHERE c.corpus_id = $1 AND {committed("c")}""",
            corpus_id,
            sorted(PROSE_LANGUAGES),
        )
        names = await self._pool.fetch(
            f"""SELECT DISTINCT lower(regexp_replace(c.symbol, '^.*[.:/#]', '')) AS name
                FROM chunks c
                WHERE c.corpus_id = $1 AND c.kind = ANY($2::text[]) AND c.symbol <> ''
                  AND {committed("c")}""",
            corpus_id,
            list(DEFINITION_KINDS),
        )
        profile = CorpusProfile(
            int(generation),
            int(row["chunks"]),
            int(row["prose"]),
            frozenset(r["name"] for r in names if r["name"]),
        )
        self._cache[corpus_id] = (now, profile)
        return profile
