"""A corpus's committed generation is read once and kept until PostgreSQL says its row changed."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import asyncpg
import pytest
from pydantic import SecretStr

from bench.procstack import free_port
from tests.stack import Stack
from tribrid.stores.corpus_versions import CorpusVersions, Version
from tribrid.stores.postgres import corpus_version


class CountingPool:
    """The pool, counting the statements sent through it."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool
        self.statements = 0

    async def fetchrow(self, *args: Any) -> Any:
        self.statements += 1
        return await self.pool.fetchrow(*args)


@pytest.fixture
async def corpus(stack: Stack) -> AsyncIterator[str]:
    corpus_id = f"versions-{uuid.uuid4().hex[:10]}"
    pool = await stack.resources.pool()
    await pool.execute(
        "INSERT INTO corpora (corpus_id, root_path, embedding_model, embedding_dim, generation)"
        " VALUES ($1, '/nowhere', 'model', 384, 1)",
        corpus_id,
    )
    yield corpus_id
    await pool.execute("DELETE FROM corpora WHERE corpus_id = $1", corpus_id)


async def settles(read: Callable[[], Awaitable[Version]], expected: Callable[[Version], bool]) -> Version:
    """What `read` gives once it meets `expected` (a notification arrives after its COMMIT)."""
    for _ in range(100):
        value = await read()
        if expected(value):
            return value
        await asyncio.sleep(0.05)
    raise AssertionError(f"still {value}")


async def test_a_kept_version_is_answered_without_a_statement_until_the_corpus_changes(
    stack: Stack, corpus: str
) -> None:
    pool = await stack.resources.pool()
    counting = CountingPool(pool)
    versions = CorpusVersions(counting, stack.cfg.postgres)  # type: ignore[arg-type]
    try:
        first = await versions.get(corpus)
        assert first == await corpus_version(pool, corpus) and first is not None and first[0] == 1
        sent = counting.statements
        assert await versions.get(corpus) == first
        assert counting.statements == sent  # kept

        await pool.execute("UPDATE corpora SET generation = 2 WHERE corpus_id = $1", corpus)
        second = await settles(lambda: versions.get(corpus), lambda v: v is not None and v[0] == 2)
        assert second == (2, first[1])

        await pool.execute("DELETE FROM corpora WHERE corpus_id = $1", corpus)
        assert await settles(lambda: versions.get(corpus), lambda v: v is None) is None
    finally:
        await versions.close()


async def test_a_lost_listener_reads_again_and_listens_again(stack: Stack, corpus: str) -> None:
    pool = await stack.resources.pool()
    versions = CorpusVersions(pool, stack.cfg.postgres)
    try:
        assert (await versions.get(corpus) or (0, ""))[0] == 1
        listener = versions._listener
        assert listener is not None
        await pool.execute("SELECT pg_terminate_backend($1)", listener.get_server_pid())
        for _ in range(100):  # the termination callback comes when asyncpg sees the socket close
            if versions._listener is None:
                break
            await asyncio.sleep(0.05)
        assert versions._listener is None
        # changed while nobody listened: read again, not answered from what was kept
        await pool.execute("UPDATE corpora SET generation = 3 WHERE corpus_id = $1", corpus)
        assert (await versions.get(corpus) or (0, ""))[0] == 3
        assert versions._listener is not None and versions._listener is not listener
    finally:
        await versions.close()


async def test_a_listener_that_cannot_connect_is_not_tried_on_every_request(
    stack: Stack, corpus: str
) -> None:
    """Reads stay right, and the next try waits RETRY_S: a connection per search would cost more
    than the statement it saves."""
    pool = await stack.resources.pool()
    nowhere = SecretStr(f"postgresql://postgres@127.0.0.1:{free_port()}/tribrid")  # nothing listens
    versions = CorpusVersions(pool, stack.cfg.postgres.model_copy(update={"dsn": nowhere}))
    try:
        for generation in (1, 2):
            await pool.execute("UPDATE corpora SET generation = $2 WHERE corpus_id = $1", corpus, generation)
            assert (await versions.get(corpus) or (0, ""))[0] == generation  # read, never kept
        assert versions._listener is None
        assert versions.connect_attempts == 1
    finally:
        await versions.close()
