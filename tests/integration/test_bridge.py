"""The HTTP/JSON bridge over the real stack: routes from the http rules, JSON round trips against the
direct gRPC answers, field-name styles, query and path parameters, status mapping."""

from __future__ import annotations

import base64
import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from google.protobuf import json_format
from google.protobuf.message import Message

from services.bridge.app import OPEN_PATHS
from services.bridge.contract import http_routes
from services.bridge.service import BridgeServer, start_bridge
from tests.stack import FIXTURE_REPO, SAMPLE_CORPUS, Stack
from tribrid.config import TriBridConfig
from tribrid.legs import LEGS
from tribrid.server import RunningServer, ServiceSpec, start_server
from tribrid.v1 import (
    common_pb2,
    fusion_options_pb2,
    fusion_pb2,
    fusion_pb2_grpc,
    graph_pb2,
    graph_pb2_grpc,
    indexer_pb2,
    indexer_pb2_grpc,
    legs_pb2,
)


def _config(stack: Stack, **addresses: str) -> TriBridConfig:
    """The stack's config, every service at the port it runs on (or at `<name>=address`)."""
    update = {f"{name}_address": f"127.0.0.1:{server.port}" for name, server in stack.servers.items()}
    update |= {f"{name}_address": address for name, address in addresses.items()}
    return stack.cfg.model_copy(update={"services": stack.cfg.services.model_copy(update=update)})


async def _bridge(stack: Stack, **addresses: str) -> BridgeServer:
    return await start_bridge(_config(stack, **addresses), "127.0.0.1", 0)


@pytest.fixture
async def client(stack: Stack, sample_corpus: indexer_pb2.IndexProgress) -> AsyncIterator[httpx.AsyncClient]:
    bridge = await _bridge(stack)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{bridge.port}", timeout=60) as http:
        yield http
    await bridge.stop(0)


def _refs(node: object) -> list[str]:
    if isinstance(node, dict):
        return [v for k, v in node.items() if k == "$ref"] + [r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


async def test_health_ready_and_openapi(client: httpx.AsyncClient) -> None:
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    ready = await client.get("/readyz")
    assert ready.status_code == 200 and ready.json() == {"status": "SERVING"}
    reply = await client.get("/openapi.json")
    assert reply.status_code == 200 and reply.headers["content-type"].startswith("application/json")
    doc = reply.json()
    assert doc["openapi"].startswith("3.")
    assert set(doc["paths"]) == {r.template for r in http_routes()} | set(OPEN_PATHS)
    assert {"/v1/graph/neighbors", "/v1/graph/{corpus_id}/stats", "/v1/corpora/{corpus_id}"} <= set(
        doc["paths"]
    )
    for ref in _refs(doc):  # every $ref resolves
        _hash, _components, kind, name = ref.split("/")
        assert name in doc["components"][kind], ref


# --- search -------------------------------------------------------------------------------------


async def test_search_json_round_trip_camel_and_snake_case(client: httpx.AsyncClient) -> None:
    camel = await client.post(
        "/v1/search", json={"corpusId": SAMPLE_CORPUS, "query": "validate_card_number", "topK": 3}
    )
    assert camel.status_code == 200, camel.text
    body = camel.json()
    assert len(body["matches"]) <= 3
    assert body["matches"][0]["symbol"] == "shop.payment.validate_card_number"
    assert "partial" in body and body["tookMs"] > 0
    assert {leg["leg"] for leg in body["legs"]} == {legs_pb2.Leg.Name(leg.value) for leg in LEGS}
    explain = body["matches"][0]["explain"]
    assert all({"leg", "rank", "rawScore", "normalizedScore", "contribution"} <= set(e) for e in explain)

    snake = await client.post(
        "/v1/search",
        content=json.dumps(
            {
                "corpus_id": SAMPLE_CORPUS,
                "query": "validate_card_number",
                "top_k": 3,
                "options": {
                    "fusion": {
                        "max_chunks_per_file": 1,
                        "method": fusion_options_pb2.FusionMethod.Name(
                            fusion_options_pb2.FUSION_METHOD_WEIGHTED
                        ),
                    }
                },
            }
        ),
        headers={"content-type": "application/json"},
    )
    assert snake.status_code == 200, snake.text
    files = [m["filePath"] for m in snake.json()["matches"]]
    assert len(files) == len(set(files)) and snake.json()["fusionMethod"] == "FUSION_METHOD_WEIGHTED"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("{not json", "malformed JSON"),
        ("[1, 2]", "JSON object"),
        (json.dumps({"corpusId": SAMPLE_CORPUS, "query": "x", "noSuchField": 1}), "malformed JSON"),
        (json.dumps({"corpusId": SAMPLE_CORPUS, "query": "x", "overrides": {}}), "malformed JSON"),
        (json.dumps({"corpusId": SAMPLE_CORPUS, "query": "x", "topK": "many"}), "malformed JSON"),
        (json.dumps({"corpusId": SAMPLE_CORPUS, "query": "   "}), "query is empty"),
        (
            json.dumps({"corpusId": SAMPLE_CORPUS, "query": "x", "options": "fast"}),
            "options: expected a JSON object (SearchOptions: fusion, vector, sparse, graph),"
            " got a string ('fast')",
        ),
    ],
)
async def test_bad_requests_are_400(client: httpx.AsyncClient, body: str, message: str) -> None:
    reply = await client.post("/v1/search", content=body)
    assert reply.status_code == 400, reply.text
    assert reply.json()["code"] == "INVALID_ARGUMENT"
    assert message in reply.json()["message"]


async def test_an_entity_given_as_a_string_is_named_in_the_error(client: httpx.AsyncClient) -> None:
    reply = await client.post("/v1/graph/neighbors", json={"corpusId": SAMPLE_CORPUS, "entity": "Cart"})
    assert reply.status_code == 400, reply.text
    assert reply.json()["message"] == (
        "malformed JSON body: entity: expected a JSON object (EntityRef: entityId, qualifiedName, name),"
        " got a string ('Cart')"
    )


async def test_unknown_corpus_is_404(client: httpx.AsyncClient) -> None:
    reply = await client.post("/v1/search", json={"corpusId": "no-such-corpus", "query": "cart"})
    assert reply.status_code == 404, reply.text
    assert reply.json()["code"] == "NOT_FOUND" and "no-such-corpus" in reply.json()["message"]


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
    bridge = await _bridge(stack, fusion="127.0.0.1:1")
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{bridge.port}", timeout=30) as http:
        reply = await http.post("/v1/search", json={"corpusId": SAMPLE_CORPUS, "query": "cart"})
        assert reply.status_code == 503 and reply.json()["code"] == "UNAVAILABLE"
        assert (await http.get("/readyz")).status_code == 503
        assert (await http.get("/healthz")).status_code == 200  # the process itself is up
        # the other services are still reached
        assert (await http.get(f"/v1/graph/{SAMPLE_CORPUS}/stats")).status_code == 200
    await bridge.stop(0)


class FaultyGateway(fusion_pb2_grpc.FusionServicer):
    """An injected fault: a gateway answering the status code named by the query."""

    async def Search(
        self,
        request: common_pb2.SearchRequest,
        context: grpc.aio.ServicerContext[common_pb2.SearchRequest, fusion_pb2.FusionSearchResponse],
    ) -> fusion_pb2.FusionSearchResponse:
        code = grpc.StatusCode[request.query]
        await context.abort(code, f"{code.name} for {request.corpus_id!r}")
        raise AssertionError("unreachable")


async def test_status_codes_map_like_grpc_gateway(stack: Stack, client: httpx.AsyncClient) -> None:
    servicer = FaultyGateway()
    fake = await start_server(
        [
            ServiceSpec(
                "tribrid.v1.Fusion", lambda s: fusion_pb2_grpc.add_FusionServicer_to_server(servicer, s)
            )
        ],
        "127.0.0.1",
        0,
    )
    bridge = await _bridge(stack, fusion=f"127.0.0.1:{fake.port}")
    expected = {
        "NOT_FOUND": 404,
        "FAILED_PRECONDITION": 400,
        "OUT_OF_RANGE": 400,
        "UNAUTHENTICATED": 401,
        "PERMISSION_DENIED": 403,
        "ALREADY_EXISTS": 409,
        "ABORTED": 409,
        "RESOURCE_EXHAUSTED": 429,
        "UNIMPLEMENTED": 501,
        "INTERNAL": 500,
        "DATA_LOSS": 500,
    }
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{bridge.port}", timeout=30) as http:
            for code, status in expected.items():
                reply = await http.post("/v1/search", json={"corpusId": "gone", "query": code})
                assert reply.status_code == status, (code, reply.text)
                assert reply.json() == {"code": code, "message": f"{code} for 'gone'"}
    finally:
        await bridge.stop(0)
        await _stop(fake)
    route = await client.get("/v1/nothing-here")
    assert route.status_code == 404 and route.json()["code"] == "NOT_FOUND"
    assert (await client.get("/v1/search")).status_code == 405
    assert (await client.post("/v1/corpora")).status_code == 405


async def _stop(server: RunningServer) -> None:
    await server.stop(0)


# --- indexer ------------------------------------------------------------------------------------


async def test_corpora_index_and_delete(stack: Stack, client: httpx.AsyncClient, tmp_path: Path) -> None:
    corpora = await client.get("/v1/corpora")
    assert corpora.status_code == 200
    assert SAMPLE_CORPUS in {c["corpusId"] for c in corpora.json()["corpora"]}
    async with stack.channel("indexer") as channel:
        direct = await indexer_pb2_grpc.IndexerStub(channel).ListCorpora(indexer_pb2.ListCorporaRequest())
    assert corpora.json() == _json(direct)
    unknown = await client.get("/v1/corpora?corpusId=x")
    assert unknown.status_code == 400 and "unknown query parameter 'corpusId'" in unknown.json()["message"]

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
        # a curated graph over HTTP: the file base64-encoded, progress as for /v1/index; a bad line is a 400
        lines = [
            {"id": "ada", "type": "person", "name": "Ada"},
            {"id": "acme", "type": "organization", "name": "ACME"},
            {"source": "ada", "relation": "MEMBER_OF", "target": "acme", "properties": {"role": "founder"}},
        ]
        graph = "\n".join(json.dumps(line) for line in lines)
        imported = await client.post(
            f"/v1/corpora/{corpus}/graph", json={"content": base64.b64encode(graph.encode()).decode()}
        )
        assert imported.status_code == 200, imported.text
        assert (imported.json()["importedNodes"], imported.json()["importedEdges"]) == (2, 1)
        broken = await client.post(
            f"/v1/corpora/{corpus}/graph", json={"content": base64.b64encode(b'{"id": "x"}').decode()}
        )
        assert broken.status_code == 400 and "content line 1: type" in broken.json()["message"]
        missing = await client.post("/v1/index", json={"corpusId": corpus, "path": str(tmp_path / "nope")})
        assert missing.status_code in (400, 404) and missing.json()["code"] in (
            "INVALID_ARGUMENT",
            "NOT_FOUND",
        )
        chunks = final.json()["chunksTotal"]
        deleted = await client.delete(f"/v1/corpora/{corpus}")
        assert deleted.status_code == 200, deleted.text
        assert deleted.json() == {"deleted": True, "chunksDeleted": chunks}
        assert corpus not in {c["corpusId"] for c in (await client.get("/v1/corpora")).json()["corpora"]}
        again = await client.delete(f"/v1/corpora/{corpus}")
        assert again.status_code == 200 and again.json() == {"deleted": False, "chunksDeleted": 0}
        bad = await client.delete("/v1/corpora/not%20a%20corpus")
        assert bad.status_code == 400 and bad.json()["code"] == "INVALID_ARGUMENT"
    finally:
        async with stack.channel("indexer") as channel:
            await indexer_pb2_grpc.IndexerStub(channel).DeleteCorpus(
                indexer_pb2.DeleteCorpusRequest(corpus_id=corpus)
            )


# --- graph --------------------------------------------------------------------------------------


def _json(message: Message) -> dict[str, Any]:
    return json_format.MessageToDict(message, always_print_fields_with_no_presence=True)


def _timeless(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k != "tookMs"}


async def _graph_direct(stack: Stack, method: str, request: Message) -> dict[str, Any]:
    async with stack.channel("graph") as channel:
        reply = await getattr(graph_pb2_grpc.GraphSearchStub(channel), method)(request, timeout=30)
    return _timeless(_json(reply))


def _ref(name: str) -> graph_pb2.EntityRef:
    return graph_pb2.EntityRef(name=name)


GRAPH_CALLS: list[tuple[str, str, Message]] = [
    (
        "Search",
        "/v1/graph/search",
        common_pb2.SearchRequest(corpus_id=SAMPLE_CORPUS, query="who calls apply_tax"),
    ),
    (
        "Neighbors",
        "/v1/graph/neighbors",
        graph_pb2.NeighborsRequest(
            corpus_id=SAMPLE_CORPUS, entity=_ref("total_price"), direction=graph_pb2.EDGE_DIRECTION_OUT
        ),
    ),
    (
        "PathBetween",
        "/v1/graph/path",
        graph_pb2.PathBetweenRequest(
            corpus_id=SAMPLE_CORPUS, source=_ref("total_price"), target=_ref("apply_tax")
        ),
    ),
    (
        "EntityChunks",
        "/v1/graph/chunks",
        graph_pb2.EntityChunksRequest(corpus_id=SAMPLE_CORPUS, entity=_ref("validate_card_number")),
    ),
]


@pytest.mark.parametrize(("method", "path", "request_message"), GRAPH_CALLS, ids=[c[0] for c in GRAPH_CALLS])
async def test_graph_rpcs_over_http_answer_as_grpc(
    stack: Stack, client: httpx.AsyncClient, method: str, path: str, request_message: Message
) -> None:
    reply = await client.post(path, json=_json(request_message))
    assert reply.status_code == 200, reply.text
    assert _timeless(reply.json()) == await _graph_direct(stack, method, request_message)
    # and the answers are the ones asked for
    body = reply.json()
    if method == "Neighbors":
        names = {e["qualifiedName"] for e in body["entities"]}
        assert {"shop.pricing.apply_tax", "shop.pricing.compute_discount"} <= names
    elif method == "PathBetween":
        assert body["found"] and body["entities"][0]["qualifiedName"] == "shop.cart.Cart.total_price"
        assert body["entities"][-1]["qualifiedName"] == "shop.pricing.apply_tax"
    elif method == "EntityChunks":
        assert [m["symbol"] for m in body["matches"]] == ["shop.payment.validate_card_number"]
    else:
        assert body["matches"]


async def test_graph_stats_and_expand_over_http(stack: Stack, client: httpx.AsyncClient) -> None:
    stats = await client.get(f"/v1/graph/{SAMPLE_CORPUS}/stats")
    assert stats.status_code == 200, stats.text
    assert stats.json() == await _graph_direct(
        stack, "Stats", graph_pb2.GraphStatsRequest(corpus_id=SAMPLE_CORPUS)
    )
    assert int(stats.json()["entities"]) > 0 and isinstance(stats.json()["entities"], str)  # uint64

    chunks = await client.post(
        "/v1/graph/chunks",
        json={"corpusId": SAMPLE_CORPUS, "entity": {"qualifiedName": "shop.cart.Cart.total_price"}},
    )
    assert chunks.status_code == 200, chunks.text
    chunk_ids = [m["chunkId"] for m in chunks.json()["matches"]]
    request = graph_pb2.ExpandContextRequest(corpus_id=SAMPLE_CORPUS, chunk_ids=chunk_ids, max_hops=1)
    expand = await client.post("/v1/graph/expand", json=_json(request))
    assert expand.status_code == 200, expand.text
    assert _timeless(expand.json()) == await _graph_direct(stack, "ExpandContext", request)
    assert {"shop.pricing.apply_tax", "shop.pricing.compute_discount"} <= {
        m["symbol"] for m in expand.json()["matches"]
    }


async def test_graph_errors_over_http(client: httpx.AsyncClient) -> None:
    unknown = await client.post(
        "/v1/graph/neighbors", json={"corpusId": SAMPLE_CORPUS, "entity": {"name": "no_such_entity_xyz"}}
    )
    assert unknown.status_code == 404, unknown.text
    assert unknown.json()["code"] == "NOT_FOUND" and "no_such_entity_xyz" in unknown.json()["message"]
    ambiguous = await client.post(
        "/v1/graph/chunks", json={"corpusId": SAMPLE_CORPUS, "entity": {"name": "charge"}}
    )
    assert ambiguous.status_code == 400, ambiguous.text
    assert "shop.payment.CardGateway.charge" in ambiguous.json()["message"]
    assert "shop.payment.PaymentGateway.charge" in ambiguous.json()["message"]
    for body in ("{not json", json.dumps({"corpusId": SAMPLE_CORPUS, "entity": {"nome": "x"}})):
        bad = await client.post("/v1/graph/neighbors", content=body)
        assert bad.status_code == 400 and bad.json()["code"] == "INVALID_ARGUMENT"
        assert "malformed JSON" in bad.json()["message"]
    direction = await client.post(
        "/v1/graph/neighbors",
        json={"corpusId": SAMPLE_CORPUS, "entity": {"name": "total_price"}, "direction": "SIDEWAYS"},
    )
    assert direction.status_code == 400
    no_corpus = await client.get("/v1/graph/no-such-corpus/stats")
    assert no_corpus.status_code == 404 and "no-such-corpus" in no_corpus.json()["message"]
    extra = await client.get(f"/v1/graph/{SAMPLE_CORPUS}/stats?limit=3")
    assert extra.status_code == 400 and "unknown query parameter 'limit'" in extra.json()["message"]
    twice = await client.get(f"/v1/graph/{SAMPLE_CORPUS}/stats?corpusId=other")
    assert twice.status_code == 400 and "set by the path" in twice.json()["message"]
