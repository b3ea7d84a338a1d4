"""TLS for the gRPC services and their clients, from certificate files named in `services`.

A server with `services.tls_cert_file` and `tls_key_file` serves TLS only; a client with
`services.tls_ca_file` connects with TLS and verifies the server's certificate against that CA
(the names it was issued for must match the address dialled). With `services.tls_client_auth`,
both sides show certificates (mutual TLS). Without them: plaintext, which
`make up` / `make demo` use on loopback.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import grpc

from tribrid.config import ServicesConfig


def server_credentials(services: ServicesConfig) -> grpc.ServerCredentials | None:
    if services.tls_cert_file is None or services.tls_key_file is None:
        return None
    key = services.tls_key_file.read_bytes()
    cert = services.tls_cert_file.read_bytes()
    if not services.tls_client_auth:
        return grpc.ssl_server_credentials([(key, cert)])
    assert services.tls_ca_file is not None  # the config checks it
    return grpc.ssl_server_credentials(
        [(key, cert)], root_certificates=services.tls_ca_file.read_bytes(), require_client_auth=True
    )


# One keepalive policy for every channel and server, the clients' pings within what the servers
# allow: a server that receives pings more often answers GOAWAY ENHANCE_YOUR_CALM ("too_many_pings")
# and the connection drops under load. Clients ping an idle connection every KEEPALIVE_TIME_MS;
# servers accept a ping without data every half of that. gRPC ignores an argument it does not know:
# the servers' was once misnamed (min_recv_...), so they kept the 5-minute default and sent
# GOAWAY every few minutes to every idle channel (tests/unit/test_keepalive.py checks the names).
KEEPALIVE_TIME_MS = 30_000
CLIENT_KEEPALIVE: tuple[tuple[str, Any], ...] = (
    ("grpc.keepalive_time_ms", KEEPALIVE_TIME_MS),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
)
SERVER_KEEPALIVE: tuple[tuple[str, Any], ...] = (
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.min_ping_interval_without_data_ms", KEEPALIVE_TIME_MS // 2),
    ("grpc.http2.max_ping_strikes", 2),
)


def channel(
    address: str,
    services: ServicesConfig,
    *,
    options: Sequence[tuple[str, Any]] | None = None,
    interceptors: Sequence[grpc.aio.ClientInterceptor] | None = None,
) -> grpc.aio.Channel:
    """A channel to `address`: TLS verified against `services.tls_ca_file` when set, else plaintext;
    the shared keepalive policy unless `options` set their own."""
    named = {name for name, _ in options or ()}
    options = [*(o for o in CLIENT_KEEPALIVE if o[0] not in named), *(options or ())]
    if services.tls_ca_file is None:
        return grpc.aio.insecure_channel(address, options=options, interceptors=interceptors)
    key = cert = None
    if services.tls_client_auth and services.tls_cert_file and services.tls_key_file:
        key, cert = services.tls_key_file.read_bytes(), services.tls_cert_file.read_bytes()
    credentials = grpc.ssl_channel_credentials(
        root_certificates=services.tls_ca_file.read_bytes(), private_key=key, certificate_chain=cert
    )
    return grpc.aio.secure_channel(address, credentials, options=options, interceptors=interceptors)
