"""Fusion gRPC servicer: the API users call."""

from __future__ import annotations

import asyncio

import grpc

from services.fusion.gateway import Gateway
from services.fusion.rerank import reranker as configured_reranker
from tribrid.generation import GenerationClient
from tribrid.question import learned
from tribrid.resources import Resources
from tribrid.server import ServiceSpec
from tribrid.v1 import common_pb2, fusion_pb2, fusion_pb2_grpc


class FusionServicer(fusion_pb2_grpc.FusionServicer):
    def __init__(self, gateway: Gateway) -> None:
        self._gateway = gateway

    async def Search(
        self,
        request: common_pb2.SearchRequest,
        context: grpc.aio.ServicerContext[common_pb2.SearchRequest, fusion_pb2.FusionSearchResponse],
    ) -> fusion_pb2.FusionSearchResponse:
        return await self._gateway.search(request, context.time_remaining())


async def build(res: Resources) -> ServiceSpec:
    cfg = res.cfg
    await asyncio.to_thread(learned.load)  # the reader's weights before the first question, not on it
    # The final matches' content is read by id, after fusion, on the request's critical path: a
    # pool of the gateway's own, not one shared with a leg hosted in the same process.
    pool = await res.pool({"application_name": "tribrid-fusion"}, search=True)
    generation = GenerationClient(cfg.generation) if cfg.generation.configured else None
    reranker = await asyncio.to_thread(configured_reranker, cfg.rerank)  # a local model loads here
    gateway = Gateway.connect(cfg.fusion, cfg.limits, cfg.services, pool, generation, reranker)
    servicer = FusionServicer(gateway)
    return ServiceSpec(
        full_name=fusion_pb2.DESCRIPTOR.services_by_name["Fusion"].full_name,
        register=lambda server: fusion_pb2_grpc.add_FusionServicer_to_server(servicer, server),
        on_stop=gateway.close,
    )
