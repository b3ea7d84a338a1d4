"""The keepalive policy's arguments are ones gRPC knows: it ignores an unknown one without a word,
and a misnamed server argument left the servers on the 5-minute default (GOAWAY too_many_pings
to every idle channel)."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from tribrid import tls

# gRPC core reads its channel arguments by these names; they are in its library as strings.
_CORE = next((Path(grpc.__file__).parent / "_cython").glob("cygrpc*.so")).read_bytes()


@pytest.mark.parametrize("name", sorted({name for name, _ in (*tls.CLIENT_KEEPALIVE, *tls.SERVER_KEEPALIVE)}))
def test_every_keepalive_argument_is_one_grpc_core_reads(name: str) -> None:
    assert name.encode() + b"\0" in _CORE


def test_the_servers_accept_the_clients_idle_pings() -> None:
    client, server = dict(tls.CLIENT_KEEPALIVE), dict(tls.SERVER_KEEPALIVE)
    assert server["grpc.http2.min_ping_interval_without_data_ms"] <= client["grpc.keepalive_time_ms"]
    assert server["grpc.keepalive_permit_without_calls"] == client["grpc.keepalive_permit_without_calls"] == 1


def test_a_misnamed_argument_is_not_found() -> None:
    assert b"grpc.http2.min_recv_ping_interval_without_data_ms\0" not in _CORE
