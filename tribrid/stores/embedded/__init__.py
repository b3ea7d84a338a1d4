"""Start, stop and report the embedded stores: PostgreSQL (with pgvector) and FalkorDB.

One module per server (`postgres`, `falkordb`), what they share in `common`. Both run as background
servers bound to loopback, with their data under `cfg.state_dir`. Only stores that are configured as
embedded are managed: an explicit `postgres.dsn` or the `neo4j` graph backend means "external",
reported but never started or stopped.
"""

from __future__ import annotations

from tribrid.config import TriBridConfig
from tribrid.stores.embedded import falkordb, postgres
from tribrid.stores.embedded.common import Log, StoreError, StoreStatus, state_dir_of, state_lock

__all__ = ["Log", "StoreError", "StoreStatus", "down", "status", "up"]


def up(cfg: TriBridConfig, log: Log = print) -> bool:
    """Start the embedded stores that are not running; True if this call started at least one."""
    state_dir = state_dir_of(cfg)
    state_dir.mkdir(parents=True, exist_ok=True)
    with state_lock(state_dir):
        started_pg = postgres.up(cfg, log)
        try:
            started_graph = falkordb.up(cfg, log)
        except StoreError:
            if started_pg:  # don't leave half a stack behind: callers only clean up after success
                postgres.down(cfg, log)
            raise
    return started_pg or started_graph


def down(cfg: TriBridConfig, log: Log = print) -> bool:
    """Stop the embedded stores; True if this call stopped at least one."""
    with state_lock(state_dir_of(cfg)):
        stopped_graph = falkordb.down(cfg, log)
        stopped_pg = postgres.down(cfg, log)
    return stopped_pg or stopped_graph


def status(cfg: TriBridConfig) -> list[StoreStatus]:
    """One entry for PostgreSQL and one for the graph store, embedded or external."""
    return [postgres.status(cfg), falkordb.status(cfg)]
