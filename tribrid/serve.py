"""Process composition: which services run in this process, sharing one pool, model and graph client."""

from __future__ import annotations

import importlib
import logging
from collections.abc import Mapping

import asyncpg

from tribrid import telemetry, tls
from tribrid.config import TriBridConfig
from tribrid.embedding import Embedder, get_embedder
from tribrid.graphstore import GraphStore, open_graph_store
from tribrid.legs import LEG_NAMES
from tribrid.server import (
    RunningServer,
    ServiceSpec,
    Stoppable,
    freeze_long_lived_objects,
    serve_until_signal,
    start_server,
)
from tribrid.stores.postgres import create_pool

# A service is its folder, services/<name>/, whose service.py builds it.
ServiceName = str
# The gRPC services (what tests start in-process), the gateway last: it is pointed at the legs
# started before it. `tribrid serve all` adds the HTTP bridge.
ALL_SERVICES: tuple[ServiceName, ...] = (*LEG_NAMES, "indexer", "fusion")
PROCESS_ALL: tuple[ServiceName, ...] = (*ALL_SERVICES, "bridge")

log = logging.getLogger(__name__)


class Resources:
    """Lazily opened shared clients; closed once when the process stops."""

    def __init__(self, cfg: TriBridConfig) -> None:
        self.cfg = cfg
        self._pools: dict[tuple[tuple[tuple[str, str], ...], bool], asyncpg.Pool] = {}
        self._graph: GraphStore | None = None

    async def pool(self, settings: Mapping[str, str] | None = None, *, search: bool = False) -> asyncpg.Pool:
        """The pool whose connections start with these settings (one per distinct settings): a
        leg whose planner settings would mislead other queries gets a pool of its own.

        `search`: a search leg's pool: `postgres.search_pool_max_size` connections, handed back
        without a reset (`create_pool`): the legs change no session state, unlike the indexer
        (session advisory locks)."""
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
            )
        return self._pools[key]

    def graph(self) -> GraphStore:
        if self._graph is None:
            # every graph-store call gets a database span (a no-op when tracing is off)
            store = open_graph_store(self.cfg.graph_store)
            self._graph = telemetry.traced_graph_store(store, self.cfg.graph_store.backend)
        return self._graph

    def embedder(self) -> Embedder:
        return get_embedder(self.cfg.embedding)

    async def close(self) -> None:
        for pool in self._pools.values():
            await pool.close()
        self._pools.clear()
        if self._graph is not None:
            await self._graph.close()


async def build_spec(name: ServiceName, res: Resources) -> ServiceSpec:
    """The service's own `build` (services/<name>/service.py), imported here so that a process
    loads only the services it hosts."""
    module = importlib.import_module(f"services.{name}.service")
    spec: ServiceSpec = await module.build(res)
    return spec


async def start_services(
    cfg: TriBridConfig, names: tuple[ServiceName, ...], res: Resources
) -> dict[ServiceName, RunningServer]:
    """Start each named gRPC service on its configured port (0 = any free port); see start_bridge."""
    running: dict[ServiceName, RunningServer] = {}
    for name in names:
        if name == "bridge":
            continue
        if name == "fusion":  # the gateway must reach legs started here, even on ephemeral ports
            res.cfg = _with_leg_addresses(res.cfg, running)
        spec = await build_spec(name, res)
        port: int = getattr(cfg.services, f"{name}_port")
        running[name] = await start_server(
            [spec],
            cfg.services.bind_host,
            port,
            auth_cfg=cfg.auth,
            max_in_flight=cfg.services.max_in_flight,
            tls=tls.server_credentials(cfg.services),
        )
    return running


async def start_bridge(cfg: TriBridConfig, running: dict[ServiceName, RunningServer]) -> Stoppable:
    """The HTTP/JSON bridge, pointed at the services started here, or else the configured ones."""
    from services.bridge.service import start_bridge as start_http_bridge

    cfg = _with_leg_addresses(cfg, running)
    return await start_http_bridge(cfg, cfg.services.bind_host, cfg.services.bridge_port)


def _with_leg_addresses(cfg: TriBridConfig, running: dict[ServiceName, RunningServer]) -> TriBridConfig:
    updates = {
        f"{name}_address": f"{cfg.services.bind_host}:{server.port}"
        for name, server in running.items()
        if not getattr(cfg.services, f"{name}_address")
    }
    return cfg.model_copy(update={"services": cfg.services.model_copy(update=updates)})


async def run(cfg: TriBridConfig, names: tuple[ServiceName, ...]) -> None:
    res = Resources(cfg)
    try:
        telemetry.start_metrics_server(cfg.telemetry, cfg.auth)
        running = await start_services(cfg, names, res)
        servers: dict[str, Stoppable] = {str(n): s for n, s in running.items()}
        if "bridge" in names:
            servers["bridge"] = await start_bridge(res.cfg, running)
        unguarded = [
            what
            for what, off in (
                ("plaintext (no services.tls_cert_file)", cfg.services.tls_cert_file is None),
                ("no bearer tokens (auth.enabled is false)", not cfg.auth.enabled),
            )
            if off
        ]
        if unguarded:  # fine on loopback (make up / make demo); not where others reach the ports
            log.warning("serving %s: for loopback use only", " and ".join(unguarded))
        freeze_long_lived_objects()  # the model, grammars, protobuf classes
        log.info("ready", extra={"ports": {n: s.port for n, s in servers.items()}})
        await serve_until_signal(
            list(servers.values()), cfg.services.shutdown_grace_s, cfg.services.drain_delay_s
        )
    finally:
        await res.close()
