"""Long-lived gRPC channels from the bridge to the services, shared by its faces: the HTTP routes,
the MCP tools and the console."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import grpc
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2_grpc

from services.bridge.contract import HttpRoute, config_name, public_services
from tribrid import telemetry, tls
from tribrid.config import ServicesConfig, TriBridConfig
from tribrid.v1 import fusion_pb2

# /readyz asks the gateway's health service.
READY_SERVICE = fusion_pb2.DESCRIPTOR.services_by_name["Fusion"].full_name


class Backend:
    """Long-lived channels to the services, opened on first use (inside the event loop)."""

    def __init__(self, addresses: Mapping[str, str], services: ServicesConfig | None = None) -> None:
        self.addresses = dict(addresses)
        self.services = services or ServicesConfig()
        self._channels: dict[str, grpc.aio.Channel] = {}
        # one multicallable per RPC ("/tribrid.v1.GraphSearch/Stats"), on its service's channel
        self._unary: dict[str, grpc.aio.UnaryUnaryMultiCallable[Message, Message]] = {}
        self._streaming: dict[str, grpc.aio.UnaryStreamMultiCallable[Message, Message]] = {}

    def channel(self, address: str) -> grpc.aio.Channel:
        if address not in self._channels:
            # The caller's token goes on to the services, which check its scopes and corpora: each
            # call passes it (`auth.outgoing_metadata`), as the gateway's do, rather than through
            # a client interceptor, which runs every call as one more task.
            self._channels[address] = tls.channel(
                address, self.services, interceptors=telemetry.client_interceptors()
            )
        return self._channels[address]

    def unary(self, route: HttpRoute) -> grpc.aio.UnaryUnaryMultiCallable[Message, Message]:
        if route.grpc_path not in self._unary:
            self._unary[route.grpc_path] = self._channel_of(route).unary_unary(
                route.grpc_path,
                request_serializer=route.request_class.SerializeToString,
                response_deserializer=route.response_class.FromString,
            )
        return self._unary[route.grpc_path]

    def streaming(self, route: HttpRoute) -> grpc.aio.UnaryStreamMultiCallable[Message, Message]:
        if route.grpc_path not in self._streaming:
            self._streaming[route.grpc_path] = self._channel_of(route).unary_stream(
                route.grpc_path,
                request_serializer=route.request_class.SerializeToString,
                response_deserializer=route.response_class.FromString,
            )
        return self._streaming[route.grpc_path]

    def _channel_of(self, route: HttpRoute) -> grpc.aio.Channel:
        return self.channel(self.addresses[route.service.full_name])

    def health(self) -> health_pb2_grpc.HealthStub:
        return health_pb2_grpc.HealthStub(self.channel(self.addresses[READY_SERVICE]))

    async def close(self) -> None:
        for channel in self._channels.values():
            await channel.close()
        self._channels.clear()
        self._unary.clear()
        self._streaming.clear()


def addresses_from_config(cfg: TriBridConfig) -> dict[str, str]:
    """Each public service's address (`services.<name>_address`, else bind_host:<name>_port)."""
    addresses = {}
    for service in public_services():
        name = config_name(service)
        if not hasattr(cfg.services, f"{name}_address"):
            raise ValueError(f"{service.full_name}: no services.{name}_address in the config")
        addresses[service.full_name] = cfg.services.address(cast(Any, name))
    return addresses
