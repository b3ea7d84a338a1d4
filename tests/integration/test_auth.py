"""Bearer tokens over a second, real stack with auth on: the gateway, the legs, the indexer, the
bridge; and the in-flight bound in front of a slow servicer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

import grpc
import httpx
import prometheus_client
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from services.bridge.service import BridgeServer, start_bridge
from tests.stack import SAMPLE_CORPUS, Stack, StoredChunk, store_committed_chunks
from tribrid import auth
from tribrid.config import AuthConfig, TokenConfig, TriBridConfig
from tribrid.resources import Resources
from tribrid.server import RunningServer, ServiceSpec, start_server
from tribrid.v1 import (
    common_pb2,
    fusion_pb2,
    fusion_pb2_grpc,
    indexer_pb2,
    indexer_pb2_grpc,
    vector_pb2_grpc,
)
from tribridctl.compose import ALL_SERVICES, _with_leg_addresses, start_services

OTHER_CORPUS = "auth-other"
# name -> (token, scopes, corpora)
TOKENS: dict[str, tuple[str, list[str], list[str]]] = {
    "reader": ("reader-secret-1", ["search"], [SAMPLE_CORPUS]),
    "indexer": ("indexer-secret-2", ["index"], ["*"]),
    "admin": ("admin-secret-3", ["admin"], ["*"]),
}


def auth_config() -> AuthConfig:
    return AuthConfig(
        enabled=True,
        tokens=[
            TokenConfig(name=name, sha256=auth.hash_token(token), scopes=scopes, corpora=corpora)  # type: ignore[arg-type]
            for name, (token, scopes, corpora) in TOKENS.items()
        ],
    )


def bearer(name: str) -> tuple[tuple[str, str]]:
    return (("authorization", f"Bearer {TOKENS[name][0]}"),)


@dataclass
class AuthStack:
    cfg: TriBridConfig
    servers: dict[str, RunningServer]
    bridge: BridgeServer

    def channel(self, service: str) -> grpc.aio.Channel:
        return grpc.aio.insecure_channel(f"127.0.0.1:{self.servers[service].port}")


@pytest.fixture(scope="module")
async def auth_stack(
    config: TriBridConfig, stack: Stack, sample_corpus: indexer_pb2.IndexProgress
) -> AsyncIterator[AuthStack]:
    # a second corpus the reader's token does not name (written by the open stack)
    async with stack.channel("indexer") as channel:
        await indexer_pb2_grpc.IndexerStub(channel).DeleteCorpus(
            indexer_pb2.DeleteCorpusRequest(corpus_id=OTHER_CORPUS)
        )
    chunk = StoredChunk("auth-other-1", "other.py", "python", "other.thing", "def thing(): return 1")
    await store_committed_chunks(stack, OTHER_CORPUS, 1, [chunk])

    ports = {f"{name}_port": 0 for name in ("fusion", "vector", "sparse", "graph", "indexer", "bridge")}
    cfg = config.model_copy(
        update={"auth": auth_config(), "services": config.services.model_copy(update=ports)}
    )
    resources = Resources(cfg)
    servers = await start_services(cfg, ALL_SERVICES, resources)
    bridged = _with_leg_addresses(cfg, servers)
    bridge = await start_bridge(bridged, "127.0.0.1", 0)
    yield AuthStack(cfg, {str(n): s for n, s in servers.items()}, bridge)
    await bridge.stop(0)
    for server in servers.values():
        await server.stop(0)
    await resources.close()


def search(corpus: str = SAMPLE_CORPUS) -> common_pb2.SearchRequest:
    return common_pb2.SearchRequest(corpus_id=corpus, query="validate_card_number", top_k=5)


async def code_of(call: object) -> grpc.StatusCode:
    try:
        await call  # type: ignore[misc]
    except grpc.aio.AioRpcError as err:
        assert err.details(), "a refusal says why"
        return err.code()
    return grpc.StatusCode.OK


async def test_gateway_needs_a_known_token(auth_stack: AuthStack) -> None:
    async with auth_stack.channel("fusion") as channel:
        stub = fusion_pb2_grpc.FusionStub(channel)
        assert await code_of(stub.Search(search())) == grpc.StatusCode.UNAUTHENTICATED
        wrong = (("authorization", "Bearer not-a-token"),)
        assert await code_of(stub.Search(search(), metadata=wrong)) == grpc.StatusCode.UNAUTHENTICATED
        basic = (("authorization", "Basic cmVhZGVy"),)
        assert await code_of(stub.Search(search(), metadata=basic)) == grpc.StatusCode.UNAUTHENTICATED


async def test_token_searches_its_corpus_through_the_gateway_with_every_leg(auth_stack: AuthStack) -> None:
    async with auth_stack.channel("fusion") as channel:
        stub = fusion_pb2_grpc.FusionStub(channel)
        reply: fusion_pb2.FusionSearchResponse = await stub.Search(search(), metadata=bearer("reader"))
        other = stub.Search(search(OTHER_CORPUS), metadata=bearer("reader"))
        assert await code_of(other) == grpc.StatusCode.PERMISSION_DENIED
    # the gateway called each leg with the caller's token: none was refused
    assert {r.status for r in reply.legs} == {fusion_pb2.LEG_STATUS_OK}, [r.error for r in reply.legs]
    assert not reply.partial
    assert reply.matches[0].symbol == "shop.payment.validate_card_number"


async def test_a_leg_called_around_the_gateway_needs_a_token(auth_stack: AuthStack) -> None:
    async with auth_stack.channel("vector") as channel:
        stub = vector_pb2_grpc.VectorSearchStub(channel)
        assert await code_of(stub.Search(search())) == grpc.StatusCode.UNAUTHENTICATED
        reply: common_pb2.SearchResponse = await stub.Search(search(), metadata=bearer("reader"))
        assert len(reply.matches) == 5
        other = stub.Search(search(OTHER_CORPUS), metadata=bearer("reader"))
        assert await code_of(other) == grpc.StatusCode.PERMISSION_DENIED


async def test_scopes_guard_the_indexer(auth_stack: AuthStack) -> None:
    async with auth_stack.channel("indexer") as channel:
        stub = indexer_pb2_grpc.IndexerStub(channel)
        index = indexer_pb2.IndexCorpusRequest(corpus_id=SAMPLE_CORPUS, path="/nowhere")
        reader_index = stub.IndexCorpus(index, metadata=bearer("reader"))
        assert await code_of(reader_index.read()) == grpc.StatusCode.PERMISSION_DENIED
        delete = indexer_pb2.DeleteCorpusRequest(corpus_id=OTHER_CORPUS)
        # deleting takes admin: the index scope is not enough
        assert (
            await code_of(stub.DeleteCorpus(delete, metadata=bearer("indexer")))
            == grpc.StatusCode.PERMISSION_DENIED
        )
        # an indexing token may list (admin holds every scope); the reader sees its corpus only
        listed = await stub.ListCorpora(indexer_pb2.ListCorporaRequest(), metadata=bearer("reader"))
        everything = await stub.ListCorpora(indexer_pb2.ListCorporaRequest(), metadata=bearer("admin"))
        assert await code_of(stub.ListCorpora(indexer_pb2.ListCorporaRequest())) == (
            grpc.StatusCode.UNAUTHENTICATED
        )
    assert [c.corpus_id for c in listed.corpora] == [SAMPLE_CORPUS]
    assert {SAMPLE_CORPUS, OTHER_CORPUS} <= {c.corpus_id for c in everything.corpora}


async def test_health_and_reflection_stay_open(auth_stack: AuthStack) -> None:
    async with auth_stack.channel("vector") as channel:
        reply = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
        stream = reflection_pb2_grpc.ServerReflectionStub(channel).ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")])
        )
        services = [s.name async for answer in stream for s in answer.list_services_response.service]
    assert "tribrid.v1.VectorSearch" in services


async def test_bridge_answers_401_and_403_and_forwards_the_token(auth_stack: AuthStack) -> None:
    base = f"http://127.0.0.1:{auth_stack.bridge.port}"
    body = {"corpusId": SAMPLE_CORPUS, "query": "validate_card_number", "topK": 3}
    headers = {"Authorization": f"Bearer {TOKENS['reader'][0]}"}
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        assert (await http.get("/healthz")).status_code == 200
        assert (await http.get("/openapi.json")).status_code == 200
        missing = await http.post("/v1/search", json=body)
        assert missing.status_code == 401
        assert missing.json()["code"] == "UNAUTHENTICATED"
        assert missing.headers["www-authenticate"] == "Bearer"
        wrong = await http.post("/v1/search", json=body, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        other = await http.post("/v1/search", json={**body, "corpusId": OTHER_CORPUS}, headers=headers)
        assert other.status_code == 403
        assert other.json()["code"] == "PERMISSION_DENIED"
        delete = await http.delete(f"/v1/corpora/{OTHER_CORPUS}", headers=headers)
        assert delete.status_code == 403
        found = await http.post("/v1/search", json=body, headers=headers)
        assert found.status_code == 200, found.text
        assert found.json()["matches"][0]["symbol"] == "shop.payment.validate_card_number"
        listed = await http.get("/v1/corpora", headers=headers)
        assert [c["corpusId"] for c in listed.json()["corpora"]] == [SAMPLE_CORPUS]


class SlowVector(vector_pb2_grpc.VectorSearchServicer):
    """An injected fault: a vector leg that takes its time."""

    def __init__(self) -> None:
        self.started = asyncio.Event()

    async def Search(
        self,
        request: common_pb2.SearchRequest,
        context: grpc.aio.ServicerContext[common_pb2.SearchRequest, common_pb2.SearchResponse],
    ) -> common_pb2.SearchResponse:
        self.started.set()
        await asyncio.sleep(1.0)
        return common_pb2.SearchResponse()


def shed_count() -> float:
    labels = {"method": "/tribrid.v1.VectorSearch/Search"}
    return prometheus_client.REGISTRY.get_sample_value("tribrid_shed_requests_total", labels) or 0.0


async def test_calls_beyond_max_in_flight_are_shed_at_once() -> None:
    servicer = SlowVector()
    spec = ServiceSpec(
        "tribrid.v1.VectorSearch", lambda s: vector_pb2_grpc.add_VectorSearchServicer_to_server(servicer, s)
    )
    server = await start_server([spec], "127.0.0.1", 0, max_in_flight=1)
    shed_before = shed_count()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            stub = vector_pb2_grpc.VectorSearchStub(channel)
            first = asyncio.ensure_future(stub.Search(search(), timeout=10))
            await servicer.started.wait()
            with pytest.raises(grpc.aio.AioRpcError) as shed:
                # well before the first call's 1 s: refused, not queued
                await stub.Search(search(), timeout=0.5)
            assert shed.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "max_in_flight" in (shed.value.details() or "")
            assert shed_count() == shed_before + 1
            await first
            health = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
            assert health.status == health_pb2.HealthCheckResponse.SERVING
            await stub.Search(search(), timeout=10)  # the slot is free again
    finally:
        await server.stop(0)
