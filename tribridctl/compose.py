"""Process composition: which services run in this process, sharing one `Resources`."""

from __future__ import annotations

import asyncio
import importlib
import logging

from tribrid import telemetry, tls
from tribrid.config import TriBridConfig
from tribrid.legs import LEG_NAMES
from tribrid.resources import Resources
from tribrid.server import (
    RunningServer,
    ServiceSpec,
    Stoppable,
    freeze_long_lived_objects,
    freeze_when_warm,
    serve_until_signal,
    start_server,
)

# A service is its folder, services/<name>/, whose service.py builds it.
ServiceName = str
# The gRPC services (what tests start in-process), the gateway last: it is pointed at the legs
# started before it. `tribrid serve all` adds the HTTP bridge.
ALL_SERVICES: tuple[ServiceName, ...] = (*LEG_NAMES, "indexer", "fusion")
PROCESS_ALL: tuple[ServiceName, ...] = (*ALL_SERVICES, "bridge")

log = logging.getLogger(__name__)


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
    res = Resources(cfg, hosted=names)
    warm: asyncio.Task[None] | None = None
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
        warm = asyncio.create_task(freeze_when_warm(running.values()), name="freeze when warm")
        log.info("ready", extra={"ports": {n: s.port for n, s in servers.items()}})
        await serve_until_signal(
            list(servers.values()), cfg.services.shutdown_grace_s, cfg.services.drain_delay_s
        )
    finally:
        if warm is not None:
            warm.cancel()
        await res.close()
