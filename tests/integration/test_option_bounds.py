"""Every request option's bounds, from one table, at every entry point: the leg's own gRPC service,
the gateway, the HTTP bridge (and the CLI: tests/e2e/test_option_bounds_cli.py). Each rejection is
INVALID_ARGUMENT (HTTP 400, a failing exit) naming the option and what it allows: the bounds are the
config section's, checked once."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import httpx
import pytest
from google.protobuf import json_format

from services.bridge.service import start_bridge
from tests.stack import SAMPLE_CORPUS, Stack
from tribrid.legs import BY_NAME
from tribrid.options import set_option
from tribrid.v1 import common_pb2, fusion_pb2, indexer_pb2

# (settings as the CLI takes them, what the message must say)
CASES: list[tuple[tuple[str, ...], str]] = [
    (("vector.ef_search=0",), "options.vector.ef_search: Input should be greater than or equal to 1"),
    (("vector.ef_search=401",), "options.vector: ef_search (401) must not exceed max_ef_search (400)"),
    (
        ("vector.similarity_threshold=1.5",),
        "options.vector.similarity_threshold: Input should be less than or equal to 1",
    ),
    (
        ("vector.similarity_threshold=nan",),
        "options.vector.similarity_threshold: Input should be less than or equal to 1",
    ),
    (("sparse.bm25_k1=3.5",), "options.sparse.bm25_k1: Input should be less than or equal to 3"),
    (("sparse.bm25_b=-0.1",), "options.sparse.bm25_b: Input should be greater than or equal to 0"),
    (
        ("sparse.relax_max_terms=11",),
        "options.sparse.relax_max_terms: Input should be less than or equal to 10",
    ),
    (
        ("sparse.query_mode=9",),
        "options.sparse.query_mode: unknown value 9; allowed: SPARSE_QUERY_MODE_PLAIN",
    ),
    (("graph.max_hops=6",), "options.graph.max_hops: Input should be less than or equal to 5"),
    (("graph.max_hops=0",), "options.graph.max_hops: Input should be greater than or equal to 1"),
    (
        ("graph.document_max_hops=4",),
        "options.graph.document_max_hops: Input should be less than or equal to 3",
    ),
    (("graph.entity_types=Macro-1",), "options.graph.entity_types.0: String should match pattern"),
    (("graph.relationship_types=LIKES]",), "options.graph.relationship_types.0: String should match pattern"),
    (("graph.direction=9",), "options.graph.direction: unknown value 9; allowed: GRAPH_DIRECTION_AUTO"),
    (("fusion.rrf_k=0",), "options.fusion.rrf_k: Input should be greater than 0"),
    (("fusion.rrf_k=inf",), "options.fusion.rrf_k: Input should be less than or equal to 10000"),
    (
        ("fusion.leg_timeout_ms=0",),
        "options.fusion.leg_timeout_ms: Input should be greater than or equal to 1",
    ),
    (
        ("fusion.max_chunks_per_file=-1",),
        "options.fusion.max_chunks_per_file: Input should be greater than or equal to 0",
    ),
    (
        ("fusion.candidates_per_leg=0",),
        "options.fusion.candidates_per_leg: Input should be greater than or equal to 1",
    ),
    (
        ("fusion.expansion_top_n=101",),
        "options.fusion.expansion_top_n: Input should be less than or equal to 100",
    ),
    (
        ("fusion.expansion_max_hops=4",),
        "options.fusion.expansion_max_hops: Input should be less than or equal to 3",
    ),
    (
        ("fusion.expansion_max_hops=0",),
        "options.fusion.expansion_max_hops: Input should be greater than or equal to 1",
    ),
    (
        ("fusion.expansion_chunk_weight=1.5",),
        "options.fusion.expansion_chunk_weight: Input should be less than or equal to 1",
    ),
    (
        ("fusion.expansion_min_score=-0.1",),
        "options.fusion.expansion_min_score: Input should be greater than or equal to 0",
    ),
    (
        ("fusion.expansion_max_chunks=0",),
        "options.fusion.expansion_max_chunks: Input should be greater than or equal to 1",
    ),
    (
        ("fusion.expansion_max_chunks=201",),
        "options.fusion.expansion_max_chunks: Input should be less than or equal to 200",
    ),
    (
        ("fusion.expansion_placement=9",),
        "options.fusion.expansion_placement: unknown value 9; allowed: EXPANSION_PLACEMENT_INTERLEAVE",
    ),
    (("fusion.method=9",), "options.fusion.method: unknown value 9; allowed: FUSION_METHOD_RRF"),
    (("fusion.normalization=9",), "options.fusion.normalization: unknown value 9"),
    (
        ("fusion.legs.graph.weight=-1",),
        "options.fusion.legs.graph.weight: Input should be greater than or equal to 0",
    ),
    (
        ("fusion.legs.vector.weight=1001",),
        "options.fusion.legs.vector.weight: Input should be less than or equal to 1000",
    ),
    (
        (
            "fusion.legs.vector.enabled=false",
            "fusion.legs.sparse.enabled=false",
            "fusion.legs.graph.enabled=false",
        ),
        "options.fusion: every leg is disabled: enable at least one of vector, sparse, graph",
    ),
    (
        ("fusion.legs.vector.weight=0", "fusion.legs.sparse.weight=0", "fusion.legs.graph.weight=0"),
        "options.fusion: the enabled legs' weights (vector, sparse, graph) sum to 0",
    ),
]
IDS = [" ".join(settings) for settings, _ in CASES]
# The cases of options a leg owns: the leg itself rejects them, before any gateway.
LEG_CASES = [case for case in CASES if case[0][0].split(".", 1)[0] in BY_NAME]


def request(settings: tuple[str, ...]) -> common_pb2.SearchRequest:
    req = common_pb2.SearchRequest(corpus_id=SAMPLE_CORPUS, query="cart total")
    for setting in settings:
        set_option(req.options, setting)
    return req


def flat(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
async def http(stack: Stack, sample_corpus: indexer_pb2.IndexProgress) -> AsyncIterator[httpx.AsyncClient]:
    update = {f"{name}_address": f"127.0.0.1:{server.port}" for name, server in stack.servers.items()}
    cfg = stack.cfg.model_copy(update={"services": stack.cfg.services.model_copy(update=update)})
    bridge = await start_bridge(cfg, "127.0.0.1", 0)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{bridge.port}", timeout=60) as client:
        yield client
    await bridge.stop(0)


@pytest.mark.parametrize(("settings", "message"), LEG_CASES, ids=[" ".join(s) for s, _ in LEG_CASES])
async def test_the_leg_rejects_its_own_options(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress, settings: tuple[str, ...], message: str
) -> None:
    leg = BY_NAME[settings[0].split(".", 1)[0]]
    async with stack.channel(leg.name) as channel:
        search = channel.unary_unary(
            f"/{leg.service}/Search",
            request_serializer=common_pb2.SearchRequest.SerializeToString,
            response_deserializer=common_pb2.SearchResponse.FromString,
        )
        with pytest.raises(grpc.aio.AioRpcError) as excinfo:
            await search(request(settings), timeout=30)
    assert excinfo.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert message in (excinfo.value.details() or "")


@pytest.mark.parametrize(("settings", "message"), CASES, ids=IDS)
async def test_the_gateway_rejects_every_option(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress, settings: tuple[str, ...], message: str
) -> None:
    async with stack.channel("fusion") as channel:
        search = channel.unary_unary(
            "/tribrid.v1.Fusion/Search",
            request_serializer=common_pb2.SearchRequest.SerializeToString,
            response_deserializer=fusion_pb2.FusionSearchResponse.FromString,
        )
        with pytest.raises(grpc.aio.AioRpcError) as excinfo:
            await search(request(settings), timeout=30)
    assert excinfo.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert message in (excinfo.value.details() or "")


@pytest.mark.parametrize(("settings", "message"), CASES, ids=IDS)
async def test_http_rejects_every_option(
    http: httpx.AsyncClient, settings: tuple[str, ...], message: str
) -> None:
    body = json_format.MessageToDict(request(settings))
    reply = await http.post("/v1/search", json=body)
    assert reply.status_code == 400, reply.text
    assert reply.json()["code"] == "INVALID_ARGUMENT"
    assert message in reply.json()["message"]
