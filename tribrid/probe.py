"""A health probe for Kubernetes' exec probes: `python -m tribrid.probe NAME` exits 0 when service
NAME of this pod answers SERVING on its health service, 1 otherwise.

Kubernetes' built-in gRPC probe speaks no TLS, so a service serving TLS only (services.tls_*) is
probed from inside its container, with the service's own config: the address 127.0.0.1:<NAME_port>
(its certificate must name 127.0.0.1) and, with services.tls_client_auth, its own certificate.
"""

from __future__ import annotations

import asyncio
import sys

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tribrid import tls
from tribrid.config import ServicesConfig, load_config

TIMEOUT_S = 3.0


async def serving(name: str, services: ServicesConfig, timeout_s: float = TIMEOUT_S) -> bool:
    """Whether service `name` answers SERVING at 127.0.0.1 on its configured port."""
    address = f"127.0.0.1:{getattr(services, f'{name}_port')}"
    async with tls.channel(address, services) as channel:
        try:
            reply = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=timeout_s
            )
        except grpc.aio.AioRpcError:
            return False
    return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


def main(argv: list[str]) -> int:
    names = [f.removesuffix("_port") for f in ServicesConfig.model_fields if f.endswith("_port")]
    grpc_names = [n for n in names if n != "bridge"]
    if len(argv) != 1 or argv[0] not in grpc_names:
        print(f"usage: python -m tribrid.probe {{{','.join(grpc_names)}}}", file=sys.stderr)
        return 2
    return 0 if asyncio.run(serving(argv[0], load_config().services)) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
