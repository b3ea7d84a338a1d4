"""Graph store: code entities and their relations in FalkorDB (default) or Neo4j."""

from __future__ import annotations

from tribrid.config import GraphStoreConfig
from tribrid.graphstore.base import MAX_HOPS, GraphStore

__all__ = ["MAX_HOPS", "GraphStore", "open_graph_store"]


def open_graph_store(cfg: GraphStoreConfig) -> GraphStore:
    """The adapter for cfg.backend; connections are opened on first use."""
    # Imported here so that using one backend never requires the other's client library.
    if cfg.backend == "falkordb":
        from tribrid.graphstore.falkordb_store import FalkorDBGraphStore

        return FalkorDBGraphStore(cfg)
    if cfg.backend == "neo4j":
        from tribrid.graphstore.neo4j_store import Neo4jGraphStore

        return Neo4jGraphStore(cfg)
    raise ValueError(f"unknown graph_store.backend {cfg.backend!r}")
