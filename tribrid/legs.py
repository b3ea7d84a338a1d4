"""The table of legs, read from the contract: the `Leg` values that name a service (`leg_service`).

A fourth leg is one more `Leg` value with its service, its options message in `SearchOptions` and
its config section; nothing here or in the gateway names a leg.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass

import grpc

import tribrid.v1
from tribrid.v1 import common_pb2, legs_pb2

# Every message and service of the contract in the default descriptor pool: a process that hosts
# only the gateway still finds each leg's service by the name its `Leg` value gives.
for _module in pkgutil.iter_modules(tribrid.v1.__path__):
    if _module.name.endswith("_pb2"):
        importlib.import_module(f"tribrid.v1.{_module.name}")


@dataclass(frozen=True, slots=True)
class LegInfo:
    # "vector": the enum value's name without LEG_, lower case; also the name of the leg's field in
    # SearchOptions, of its config section and of its entry in fusion.legs.
    name: str
    value: legs_pb2.Leg.ValueType
    # Full gRPC service name, e.g. "tribrid.v1.VectorSearch"; the leg answers its `Search` RPC.
    service: str


def _read_legs() -> tuple[LegInfo, ...]:
    legs = []
    for value in legs_pb2.Leg.DESCRIPTOR.values:
        options = value.GetOptions()
        if options.HasExtension(legs_pb2.leg_service):
            legs.append(
                LegInfo(
                    name=value.name.removeprefix("LEG_").lower(),
                    value=value.number,  # type: ignore[arg-type]
                    service=options.Extensions[legs_pb2.leg_service],
                )
            )
    return tuple(legs)


LEGS: tuple[LegInfo, ...] = _read_legs()
LEG_NAMES: tuple[str, ...] = tuple(leg.name for leg in LEGS)
BY_NAME: dict[str, LegInfo] = {leg.name: leg for leg in LEGS}
BY_VALUE: dict[int, LegInfo] = {leg.value: leg for leg in LEGS}


def source_name(value: int) -> str:
    """The name of any `Leg` value, legs and other match sources alike ("vector", "expansion")."""
    return legs_pb2.Leg.Name(value).removeprefix("LEG_").lower()  # type: ignore[arg-type]


def search_method(
    channel: grpc.aio.Channel, leg: LegInfo
) -> grpc.aio.UnaryUnaryMultiCallable[common_pb2.SearchRequest, common_pb2.SearchResponse]:
    """The leg service's `Search` on `channel`, whatever the service is called."""
    return channel.unary_unary(
        f"/{leg.service}/Search",
        request_serializer=common_pb2.SearchRequest.SerializeToString,
        response_deserializer=common_pb2.SearchResponse.FromString,
    )
