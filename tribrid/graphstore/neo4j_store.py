"""Neo4j 5 adapter: async driver, managed transactions; all corpora share one database."""

from __future__ import annotations

from typing import Any

from neo4j import READ_ACCESS, AsyncGraphDatabase, RoutingControl
from neo4j.exceptions import Neo4jError
from neo4j.graph import Node, Path, Relationship

from tribrid.config import GraphStoreConfig
from tribrid.graphstore.base import CypherFailed, CypherRejected, CypherResult, CypherTimedOut
from tribrid.graphstore.cypher import NEO4J
from tribrid.graphstore.cypher_store import CypherGraphStore, Row

# Status codes of a write in a READ transaction (or one the server forbids), and of a timeout
# (TransactionTimedOut, TransactionTimedOutClientConfiguration; a TransientError before Neo4j 5).
_WRITE_IN_READ_ONLY_CODES = ("Neo.ClientError.Statement.AccessMode", "Neo.ClientError.Security.Forbidden")
_TIMED_OUT_CODE = "TransactionTimedOut"


def _plain(value: Any) -> Any:
    """A query result value as plain JSON-ready data (see base.CypherResult)."""
    if isinstance(value, Node):
        return {"labels": sorted(value.labels), "properties": _plain(dict(value.items()))}
    if isinstance(value, Relationship):
        return {"type": value.type, "properties": _plain(dict(value.items()))}
    if isinstance(value, Path):
        return {"nodes": _plain(list(value.nodes)), "relationships": _plain(list(value.relationships))}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)  # temporal and spatial values: their text


class Neo4jGraphStore(CypherGraphStore):
    dialect = NEO4J

    def __init__(self, cfg: GraphStoreConfig) -> None:
        if not cfg.neo4j_uri:
            raise ValueError("graph_store.neo4j_uri must be set for the neo4j backend")
        super().__init__(cfg.write_batch_size)
        self._database = cfg.neo4j_database
        # The driver connects lazily; creating it does no I/O.
        self._driver = AsyncGraphDatabase.driver(
            cfg.neo4j_uri, auth=(cfg.neo4j_user, cfg.neo4j_password.get_secret_value())
        )

    async def _run(self, corpus_id: str, query: str, params: Row, *, write: bool) -> list[Row]:
        # execute_query runs a managed transaction (retried on transient errors) per call.
        # Every shared query filters on $corpus_id, which _read/_write always pass.
        result: Any = await self._driver.execute_query(
            query,  # text comes only from tribrid.graphstore.cypher, never from input
            parameters_=params,
            routing_=RoutingControl.WRITE if write else RoutingControl.READ,
            database_=self._database,
        )
        return [record.data() for record in result.records]

    async def _run_read_only(
        self, corpus_id: str, query: str, params: Row, *, max_rows: int, timeout_ms: int
    ) -> CypherResult:
        # An explicit READ transaction: the server refuses any write in it and stops it at the
        # timeout; never committed, and not retried (a managed one would retry a timeout).
        try:
            async with self._driver.session(
                database=self._database, default_access_mode=READ_ACCESS
            ) as session:
                tx = await session.begin_transaction(timeout=timeout_ms / 1000)
                try:
                    result = await tx.run(query, params)
                    records = await result.fetch(max_rows + 1)
                    columns = tuple(result.keys())
                finally:
                    await tx.close()  # a rollback (`async with tx` would commit)
        except Neo4jError as exc:
            code, message = exc.code or "", exc.message or str(exc)
            if code in _WRITE_IN_READ_ONLY_CODES:
                raise CypherRejected(message) from None
            if _TIMED_OUT_CODE in code:
                raise CypherTimedOut(f"the query ran past {timeout_ms} ms") from None
            raise CypherFailed(message) from None
        rows = [tuple(_plain(value) for value in record.values()) for record in records[:max_rows]]
        return CypherResult(columns, rows, len(records) > max_rows)

    async def close(self) -> None:
        await self._driver.close()
