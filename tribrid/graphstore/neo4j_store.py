"""Neo4j 5 adapter: async driver, managed transactions; all corpora share one database."""

from __future__ import annotations

from typing import Any

from neo4j import AsyncGraphDatabase, RoutingControl

from tribrid.config import GraphStoreConfig
from tribrid.graphstore.cypher import NEO4J
from tribrid.graphstore.cypher_store import CypherGraphStore, Row


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

    async def close(self) -> None:
        await self._driver.close()
