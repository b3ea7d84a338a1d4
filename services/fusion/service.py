"""Fusion gRPC servicer: the API users call."""

from __future__ import annotations

import grpc

from services.fusion.gateway import Gateway
from tribrid.config import TriBridConfig
from tribrid.search_common import RequestError
from tribrid.server import ServiceSpec
from tribrid.v1 import common_pb2, fusion_pb2, fusion_pb2_grpc


class FusionServicer(fusion_pb2_grpc.FusionServicer):
    def __init__(self, gateway: Gateway) -> None:
        self._gateway = gateway

    async def Search(
        self, request: common_pb2.SearchRequest, context: grpc.aio.ServicerContext
    ) -> fusion_pb2.FusionSearchResponse:
        try:
            return await self._gateway.search(request, context.time_remaining())
        except RequestError as err:
            await context.abort(err.code, err.message)
            raise  # unreachable: abort raises


def service_spec(cfg: TriBridConfig) -> ServiceSpec:
    gateway = Gateway.connect(cfg)
    servicer = FusionServicer(gateway)
    return ServiceSpec(
        full_name=fusion_pb2.DESCRIPTOR.services_by_name["Fusion"].full_name,
        register=lambda server: fusion_pb2_grpc.add_FusionServicer_to_server(servicer, server),
        on_stop=gateway.close,
    )
