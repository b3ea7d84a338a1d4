"""`python -m tribrid.probe NAME`: the exec probe for services serving TLS only (Kubernetes' own
gRPC probe speaks no TLS)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tribrid import tls
from tribrid.certs import make_certs
from tribrid.config import ServicesConfig
from tribrid.probe import serving
from tribrid.server import ServiceSpec, start_server


async def test_probe_reads_the_health_of_a_mutual_tls_server(tmp_path: Path) -> None:
    certs = make_certs(tmp_path)
    services = ServicesConfig(
        tls_cert_file=certs.cert_file,
        tls_key_file=certs.key_file,
        tls_ca_file=certs.ca_file,
        tls_client_auth=True,
    )
    server = await start_server([], "127.0.0.1", 0, tls=tls.server_credentials(services))
    try:
        at_port = services.model_copy(update={"sparse_port": server.port})
        assert await serving("sparse", at_port)
        # without TLS settings the probe can't talk to it: not a false "serving"
        assert not await serving("sparse", ServicesConfig(sparse_port=server.port), timeout_s=1)
        await server.drain()  # SIGTERM's first step: NOT_SERVING
        assert not await serving("sparse", at_port)
    finally:
        await server.stop(0)


async def test_a_service_warms_up_after_it_serves_and_stops_warming_when_it_stops() -> None:
    """`ServiceSpec.warm_up` runs once the server reports SERVING (a slow warm-up never delays
    it), and a warm-up still running when the server stops is cancelled."""
    started, cancelled = asyncio.Event(), asyncio.Event()
    release = asyncio.Event()
    seen: list[bool] = []
    services = ServicesConfig()

    async def warm_up() -> None:
        seen.append(await serving("sparse", services.model_copy(update={"sparse_port": server.port})))
        started.set()
        try:
            await release.wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    spec = ServiceSpec(full_name="tribrid.v1.SparseSearch", register=lambda _: None, warm_up=warm_up)
    server = await start_server([spec], "127.0.0.1", 0)
    try:
        await asyncio.wait_for(started.wait(), timeout=30)
        assert seen == [True]
    finally:
        await server.stop(0)
    await asyncio.wait_for(cancelled.wait(), timeout=30)
