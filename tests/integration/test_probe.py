"""`python -m tribrid.probe NAME`: the exec probe for services serving TLS only (Kubernetes' own
gRPC probe speaks no TLS)."""

from __future__ import annotations

from pathlib import Path

from tribrid import tls
from tribrid.certs import make_certs
from tribrid.config import ServicesConfig
from tribrid.probe import serving
from tribrid.server import start_server


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
