"""Run the bridge app under uvicorn inside the service runner's event loop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Iterator

import uvicorn
from starlette.applications import Starlette

from services.bridge.app import create_app
from services.bridge.backend import addresses_from_config
from tribrid.config import TriBridConfig

log = logging.getLogger(__name__)


class _Server(uvicorn.Server):
    """uvicorn without its own signal handling: the service runner owns SIGTERM/SIGINT."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class BridgeServer:
    """A running bridge: its bound port, and a graceful stop (same shape as RunningServer)."""

    def __init__(self, server: _Server, task: asyncio.Task[None], port: int, app: Starlette) -> None:
        self._server = server
        self._app = app
        self._task = task
        self.port = port

    async def drain(self) -> None:
        """/readyz answers 503 from now on; every other route is still served."""
        self._app.state.draining = True

    async def stop(self, grace_s: float) -> None:
        await self.drain()
        self._server.should_exit = True
        try:
            await asyncio.wait_for(asyncio.shield(self._task), timeout=grace_s + 1)
        except TimeoutError:
            self._server.force_exit = True
            await self._task


async def start_bridge(cfg: TriBridConfig, host: str, port: int) -> BridgeServer:
    """Serve the bridge on host:port (0 = a free port) until stopped; it calls the services at
    their addresses in `cfg.services`."""
    app = create_app(
        addresses_from_config(cfg),
        timeout_s=cfg.fusion.default_deadline_ms / 1000,
        auth_cfg=cfg.auth,
        services=cfg.services,
        gateway_metrics_url=cfg.telemetry.gateway_metrics_url,
    )
    # IPPROTO_TCP named: asyncio sets TCP_NODELAY only on sockets that say they are TCP, and without
    # it a kept-alive connection waits for the client's delayed ACK (40 ms) on every response
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.set_inheritable(True)
    cert, key = cfg.services.tls_cert_file, cfg.services.tls_key_file
    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="on",
        access_log=False,
        # HTTPS with the services' certificate when one is configured
        ssl_certfile=str(cert) if cert is not None else None,
        ssl_keyfile=str(key) if key is not None else None,
    )
    server = _Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            await task  # re-raise why it could not start
            raise RuntimeError("bridge stopped during start-up")
        await asyncio.sleep(0.01)
    bound = int(sock.getsockname()[1])
    scheme = "https" if cert is not None else "http"
    log.info("serving", extra={"services": ["bridge"], "address": f"{scheme}://{host}:{bound}"})
    return BridgeServer(server, task, bound, app)
