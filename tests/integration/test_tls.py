"""TLS: the gateway, its legs and the bridge over certificates from `tribrid certs`, verified."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import grpc
import httpx
import pytest

from services.bridge.service import BridgeServer, start_bridge
from tests.stack import SAMPLE_CORPUS, Stack
from tribrid import tls
from tribrid.certs import CertFiles, make_certs
from tribrid.config import TriBridConfig
from tribrid.resources import Resources
from tribrid.server import RunningServer
from tribrid.v1 import common_pb2, fusion_pb2, fusion_pb2_grpc, indexer_pb2
from tribridctl.compose import ALL_SERVICES, _with_leg_addresses, start_services


@dataclass
class TlsStack:
    cfg: TriBridConfig
    certs: CertFiles
    servers: dict[str, RunningServer]
    bridge: BridgeServer


@asynccontextmanager
async def tls_services(
    config: TriBridConfig, certs: CertFiles, *, client_auth: bool
) -> AsyncIterator[TlsStack]:
    ports = {f"{name}_port": 0 for name in ("fusion", "vector", "sparse", "graph", "indexer", "bridge")}
    services = config.services.model_copy(
        update={
            **ports,
            "tls_cert_file": certs.cert_file,
            "tls_key_file": certs.key_file,
            "tls_ca_file": certs.ca_file,
            "tls_client_auth": client_auth,
        }
    )
    cfg = config.model_copy(update={"services": services})
    resources = Resources(cfg)
    servers = await start_services(cfg, ALL_SERVICES, resources)
    bridge = await start_bridge(_with_leg_addresses(cfg, servers), "127.0.0.1", 0)
    yield TlsStack(cfg, certs, {str(n): s for n, s in servers.items()}, bridge)
    await bridge.stop(0)
    for server in servers.values():
        await server.stop(0)
    await resources.close()


@pytest.fixture(scope="module")
async def tls_stack(
    config: TriBridConfig,
    stack: Stack,
    sample_corpus: indexer_pb2.IndexProgress,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[TlsStack]:
    async with tls_services(
        config, make_certs(tmp_path_factory.mktemp("certs")), client_auth=False
    ) as running:
        yield running


def search() -> common_pb2.SearchRequest:
    return common_pb2.SearchRequest(corpus_id=SAMPLE_CORPUS, query="validate_card_number", top_k=3)


async def test_gateway_and_legs_speak_verified_tls(tls_stack: TlsStack) -> None:
    address = f"127.0.0.1:{tls_stack.servers['fusion'].port}"
    async with tls.channel(address, tls_stack.cfg.services) as channel:
        reply: fusion_pb2.FusionSearchResponse = await fusion_pb2_grpc.FusionStub(channel).Search(
            search(), timeout=30
        )
    # the gateway reached every leg over TLS, verifying their certificates
    assert {r.status for r in reply.legs} == {fusion_pb2.LEG_STATUS_OK}, [r.error for r in reply.legs]
    assert reply.matches[0].symbol == "shop.payment.validate_card_number"


async def test_plaintext_and_unknown_ca_are_refused(tls_stack: TlsStack, tmp_path: Path) -> None:
    address = f"127.0.0.1:{tls_stack.servers['vector'].port}"
    async with grpc.aio.insecure_channel(address) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as plain:
            await fusion_pb2_grpc.FusionStub(channel).Search(search(), timeout=5)
    assert plain.value.code() == grpc.StatusCode.UNAVAILABLE
    stranger = make_certs(tmp_path / "other")  # a CA that did not sign the server's certificate
    other = tls_stack.cfg.services.model_copy(update={"tls_ca_file": stranger.ca_file})
    async with tls.channel(address, other) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as unverified:
            await fusion_pb2_grpc.FusionStub(channel).Search(search(), timeout=5)
    assert unverified.value.code() == grpc.StatusCode.UNAVAILABLE


async def test_bridge_serves_https_and_calls_the_gateway_over_tls(tls_stack: TlsStack) -> None:
    verify = ssl.create_default_context(cafile=str(tls_stack.certs.ca_file))
    base = f"https://127.0.0.1:{tls_stack.bridge.port}"
    body = {"corpusId": SAMPLE_CORPUS, "query": "validate_card_number", "topK": 3}
    async with httpx.AsyncClient(base_url=base, verify=verify, timeout=60) as http:
        found = await http.post("/v1/search", json=body)
    assert found.status_code == 200, found.text
    assert found.json()["matches"][0]["symbol"] == "shop.payment.validate_card_number"


async def test_mutual_tls_refuses_a_client_without_a_certificate(
    config: TriBridConfig, stack: Stack, sample_corpus: indexer_pb2.IndexProgress, tmp_path: Path
) -> None:
    async with tls_services(config, make_certs(tmp_path / "certs"), client_auth=True) as mutual:
        address = f"127.0.0.1:{mutual.servers['fusion'].port}"
        one_way = mutual.cfg.services.model_copy(update={"tls_client_auth": False})
        async with tls.channel(address, one_way) as channel:
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await fusion_pb2_grpc.FusionStub(channel).Search(search(), timeout=5)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        async with tls.channel(address, mutual.cfg.services) as channel:
            reply: fusion_pb2.FusionSearchResponse = await fusion_pb2_grpc.FusionStub(channel).Search(
                search(), timeout=30
            )
    # the gateway showed its certificate to every leg
    assert {r.status for r in reply.legs} == {fusion_pb2.LEG_STATUS_OK}, [r.error for r in reply.legs]
