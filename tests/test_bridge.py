"""The HTTP/JSON bridge over the real stack: JSON round trips, field-name styles, status mapping."""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import httpx
import pytest

from services.bridge.service import BridgeServer, start_bridge
from tests.conftest import FIXTURE_REPO, SAMPLE_CORPUS, Stack
from tribrid.server import RunningServer, ServiceSpec, start_server
from tribrid.v1 import common_pb2, fusion_pb2, fusion_pb2_grpc, indexer_pb2, indexer_pb2_grpc


async def _bridge(stack: Stack, fusion_address: str) -> BridgeServer:
    indexer = f"127.0.0.1:{stack.servers['indexer'].port}"
    return await start_bridge(stack.cfg, "127.0.0.1", 0, fusion_address, indexer)


@pytest.fixture
async def client(stack: Stack, sample_corpus: indexer_pb2.IndexProgress) -> AsyncIterator[httpx.AsyncClient]:
    bridge = await _bridge(stack, f"127.0.0.1:{stack.servers['fusion'].port}")
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{bridge.port}", timeout=60) as http:
        yield http
    await bridge.stop(0)


async def test_health_ready_and_openapi(client: httpx.AsyncClient) -> None:
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    ready = await client.get("/readyz")
    assert ready.status_code == 200 and ready.json() == {"status": "SERVING"}
    doc = (await client.get("/openapi.json")).json()
    assert doc["openapi"].startswith("3.")
    assert set(doc["paths"]) == {
        "/v1/search",
        "/v1/index",
        "/v1/corpora",
        "/healthz",
        "/readyz",
        "/openapi.json",
    }
    for path in doc["paths"].values():  # every $ref resolves
        for ref in _refs(path):
            assert ref.removeprefix("#/components/schemas/") in doc["components"]["schemas"]


def _refs(node: object) -> list[str]:
    if isinstance(node, dict):
        return [v for k, v in node.items() if k == "$ref"] + [r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


async def test_search_json_round_trip_camel_and_snake_case(client: httpx.AsyncClient) -> None:
    camel = await client.post(
        "/v1/search", json={"corpusId": SAMPLE_CORPUS, "query": "validate_card_number", "topK": 3}
    )
    assert camel.status_code == 200, camel.text
    body = camel.json()
    assert len(body["matches"]) <= 3
    assert body["matches"][0]["symbol"] == "shop.payment.validate_card_number"
    assert body["fusionMethod"] == "rrf" and "partial" in body and body["tookMs"] > 0
    assert {leg["leg"] for leg in body["legs"]} == {"LEG_VECTOR", "LEG_SPARSE", "LEG_GRAPH"}
    explain = body["matches"][0]["explain"]
    assert all({"leg", "rank", "rawScore", "normalizedScore", "contribution"} <= set(e) for e in explain)

    snake = await client.post(
        "/v1/search",
        content=json.dumps(
            {
                "corpus_id": SAMPLE_CORPUS,
                "query": "validate_card_number",
                "top_k": 3,
                "overrides": {"max_chunks_per_file": 1, "fusion_method": "weighted"},
            }
        ),
        headers={"content-type": "application/json"},
    )
    assert snake.status_code == 200, snake.text
    files = [m["filePath"] for m in snake.json()["matches"]]
    assert len(files) == len(set(files)) and snake.json()["fusionMethod"] == "weighted"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("{not json", "malformed JSON"),
        ("[1, 2]", "JSON object"),
        (json.dumps({"corpusId": SAMPLE_CORPUS, "query": "x", "noSuchField": 1}), "malformed JSON"),
        (json.dumps({"corpusId": SAMPLE_CORPUS, "query": "x", "topK": "many"}), "malformed JSON"),
        (json.dumps({"corpusId": SAMPLE_CORPUS, "query": "   "}), "query is empty"),
        (json.dumps({"corpusId": "no-such-corpus", "query": "cart"}), "unknown corpus"),
    ],
)
async def test_bad_requests_are_400(client: httpx.AsyncClient, body: str, message: str) -> None:
    reply = await client.post("/v1/search", content=body)
    assert reply.status_code == 400, reply.text
    assert reply.json()["code"] == "INVALID_ARGUMENT"
    assert message in reply.json()["message"]


async def test_caller_deadline_is_propagated_504(client: httpx.AsyncClient) -> None:
    request = {"corpusId": SAMPLE_CORPUS, "query": "cart"}
    for headers in ({"X-Request-Timeout-Ms": "1"}, {"grpc-timeout": "1m"}):
        reply = await client.post("/v1/search", json=request, headers=headers)
        assert reply.status_code == 504, reply.text
        assert reply.json()["code"] == "DEADLINE_EXCEEDED"
    generous = await client.post("/v1/search", json=request, headers={"X-Request-Timeout-Ms": "20000"})
    assert generous.status_code == 200
    bad = await client.post("/v1/search", json=request, headers={"X-Request-Timeout-Ms": "soon"})
    assert bad.status_code == 400


async def test_gateway_down_is_503(stack: Stack, sample_corpus: indexer_pb2.IndexProgress) -> None:
    bridge = await _bridge(stack, "127.0.0.1:1")
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{bridge.port}", timeout=30) as http:
        reply = await http.post("/v1/search", json={"corpusId": SAMPLE_CORPUS, "query": "cart"})
        assert reply.status_code == 503 and reply.json()["code"] == "UNAVAILABLE"
        assert (await http.get("/readyz")).status_code == 503
        assert (await http.get("/healthz")).status_code == 200  # the process itself is up
    await bridge.stop(0)


class NotFoundGateway(fusion_pb2_grpc.FusionServicer):
    """An injected fault: a gateway answering NOT_FOUND (and one INTERNAL error)."""

    async def Search(
        self, request: common_pb2.SearchRequest, context: grpc.aio.ServicerContext
    ) -> fusion_pb2.FusionSearchResponse:
        if request.query == "boom":
            await context.abort(grpc.StatusCode.INTERNAL, "exploded")
        await context.abort(grpc.StatusCode.NOT_FOUND, f"corpus {request.corpus_id!r} not found")
        raise AssertionError("unreachable")


async def test_not_found_and_other_codes(stack: Stack, client: httpx.AsyncClient) -> None:
    servicer = NotFoundGateway()
    fake = await start_server(
        [
            ServiceSpec(
                "tribrid.v1.Fusion", lambda s: fusion_pb2_grpc.add_FusionServicer_to_server(servicer, s)
            )
        ],
        "127.0.0.1",
        0,
    )
    bridge = await _bridge(stack, f"127.0.0.1:{fake.port}")
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{bridge.port}", timeout=30) as http:
            reply = await http.post("/v1/search", json={"corpusId": "gone", "query": "cart"})
            assert reply.status_code == 404
            assert reply.json() == {"code": "NOT_FOUND", "message": "corpus 'gone' not found"}
            boom = await http.post("/v1/search", json={"corpusId": "gone", "query": "boom"})
            assert boom.status_code == 500 and boom.json()["code"] == "INTERNAL"
    finally:
        await bridge.stop(0)
        await _stop(fake)
    route = await client.get("/v1/nothing-here")
    assert route.status_code == 404 and route.json()["code"] == "NOT_FOUND"
    assert (await client.get("/v1/search")).status_code == 405


async def _stop(server: RunningServer) -> None:
    await server.stop(0)


async def test_corpora_and_index(stack: Stack, client: httpx.AsyncClient, tmp_path: Path) -> None:
    corpora = await client.get("/v1/corpora")
    assert corpora.status_code == 200
    assert SAMPLE_CORPUS in {c["corpusId"] for c in corpora.json()["corpora"]}

    root = tmp_path / "repo"
    shutil.copytree(FIXTURE_REPO, root)
    corpus = "bridge-index-test"
    try:
        final = await client.post("/v1/index", json={"corpus_id": corpus, "path": str(root)})
        assert final.status_code == 200, final.text
        assert final.json()["done"] and final.json()["chunksTotal"] > 0
        # unchanged re-index, streamed as NDJSON progress events
        async with client.stream(
            "POST", "/v1/index?stream=true", json={"corpusId": corpus, "path": str(root)}
        ) as s:
            assert s.status_code == 200 and s.headers["content-type"].startswith("application/x-ndjson")
            events = [json.loads(line) async for line in s.aiter_lines() if line]
        assert events and events[-1]["done"] and all("phase" in e for e in events)
        missing = await client.post("/v1/index", json={"corpusId": corpus, "path": str(tmp_path / "nope")})
        assert missing.status_code in (400, 404) and missing.json()["code"] in (
            "INVALID_ARGUMENT",
            "NOT_FOUND",
        )
    finally:
        async with stack.channel("indexer") as channel:
            await indexer_pb2_grpc.IndexerStub(channel).DeleteCorpus(
                indexer_pb2.DeleteCorpusRequest(corpus_id=corpus)
            )
