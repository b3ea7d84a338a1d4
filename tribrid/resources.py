"""The clients a process's services share: PostgreSQL pools, the graph store and the embedding
model, opened lazily and closed once when the process stops."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import asyncpg

from tribrid import telemetry
from tribrid.config import TriBridConfig
from tribrid.graphstore import GraphStore, open_graph_store
from tribrid.stores.postgres import create_pool

if TYPE_CHECKING:
    from tribrid.embedding import Embedder


class Resources:
    """Lazily opened shared clients; closed once when the process stops."""

    def __init__(self, cfg: TriBridConfig, hosted: tuple[str, ...] = ()) -> None:
        """`hosted`: the services this process runs, when known (a service alone in its process
        may load its libraries in ways that would disturb the others)."""
        self.cfg = cfg
        self.hosted = hosted
        self._pools: dict[tuple[tuple[tuple[str, str], ...], bool], asyncpg.Pool] = {}
        self._graph: GraphStore | None = None

    async def pool(self, settings: Mapping[str, str] | None = None, *, search: bool = False) -> asyncpg.Pool:
        """The pool whose connections start with these settings (one per distinct settings): a
        leg whose planner settings would mislead other queries gets a pool of its own.

        `search`: a search leg's pool: `postgres.search_pool_max_size` connections, handed back
        without a reset (`create_pool`): the legs change no session state, unlike the indexer
        (session advisory locks). Its statements wait `postgres.command_timeout_s`; the other
        pools' (the indexer's), `postgres.maintenance_timeout_s`."""
        key = (tuple(sorted((settings or {}).items())), search)
        if key not in self._pools:
            postgres = self.cfg.postgres
            self._pools[key] = await create_pool(
                postgres,
                self.cfg.embedding.dim,
                self.cfg.vector,
                dict(key[0]) or None,
                reset_sessions=not search,
                max_size=postgres.search_pool_max_size if search else None,
                command_timeout_s=postgres.command_timeout_s if search else postgres.maintenance_timeout_s,
            )
        return self._pools[key]

    def graph(self) -> GraphStore:
        """The graph store the process shares."""
        if self._graph is None:
            self._graph = self.open_graph_store()
        return self._graph

    def open_graph_store(self) -> GraphStore:
        """A graph store of its own (the caller closes it), for work on another thread's loop."""
        # every graph-store call gets a database span (a no-op when tracing is off)
        store = open_graph_store(self.cfg.graph_store)
        return telemetry.traced_graph_store(store, self.cfg.graph_store.backend)

    def embedder(self, quantized: bool = False, threads: int | None = None) -> Embedder:
        """`quantized`: the int8 copy of the local model, for the vector leg's questions; `threads`:
        the model's threads in place of `embedding.num_threads` (the vector leg's `query_threads`)."""
        # imported here: the legs without a model start without httpx and the embedding clients
        from tribrid.embedding import get_embedder

        cfg = self.cfg.embedding
        if threads is not None:
            cfg = cfg.model_copy(update={"num_threads": threads})
        return get_embedder(cfg, quantized)

    async def close(self) -> None:
        for pool in self._pools.values():
            await pool.close()
        self._pools.clear()
        if self._graph is not None:
            await self._graph.close()
