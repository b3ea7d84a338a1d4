"""The rerank stage against the real legs over the sample corpus, with a real local HTTP server
speaking the /rerank API as the reranker (scripted scores)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from pydantic import SecretStr

from services.bridge.service import start_bridge
from services.fusion.gateway import Gateway, LegClient
from services.fusion.rerank import LocalReranker, RerankClient, document_text
from tests.rerank_server import ScriptedReranker, rerank_server
from tests.stack import SAMPLE_CORPUS, Stack, fusion_options
from tribrid.config import RerankConfig
from tribrid.embedding import bundled_model_path
from tribrid.legs import LEGS
from tribrid.options import RequestError, set_option
from tribrid.resources import Resources
from tribrid.v1 import common_pb2, fusion_pb2, fusion_pb2_grpc, indexer_pb2, legs_pb2
from tribridctl.compose import start_services

QUERY = "cart total price"
API_KEY = "rk-test-51c0-never-in-answers"


@pytest.fixture
async def reranker() -> AsyncIterator[ScriptedReranker]:
    async with rerank_server() as server:
        yield server


def make_gateway(stack: Stack, pool: object, url: str, *, timeout_s: float = 30.0) -> Gateway:
    client = RerankClient(
        RerankConfig(base_url=url, model="scripted", api_key=SecretStr(API_KEY), timeout_s=timeout_s)
    )
    legs = {leg.name: LegClient(leg, f"127.0.0.1:{stack.servers[leg.name].port}") for leg in LEGS}
    return Gateway(stack.cfg.fusion, stack.cfg.limits, legs, pool, reranker=client)  # type: ignore[arg-type]


def request(top_k: int = 10, **fields: Any) -> common_pb2.SearchRequest:
    return common_pb2.SearchRequest(
        corpus_id=SAMPLE_CORPUS, query=QUERY, top_k=top_k, options=fusion_options(**fields)
    )


def ids(reply: fusion_pb2.FusionSearchResponse) -> list[str]:
    return [m.chunk_id for m in reply.matches]


def rerank_report(reply: fusion_pb2.FusionSearchResponse) -> fusion_pb2.LegReport:
    (report,) = [r for r in reply.legs if r.leg == legs_pb2.LEG_RERANK]
    return report


async def test_a_reversing_reranker_reverses_the_answer_and_explains_both_ranks(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress, reranker: ScriptedReranker
) -> None:
    gateway = make_gateway(stack, await stack.resources.pool(), reranker.url)
    fused = await gateway.search(request(top_k=5), remaining_s=30)
    reranked = await gateway.search(request(top_k=5, enable_rerank=True, rerank_candidates=5), remaining_s=30)
    await gateway.close()
    assert len(fused.matches) == 5
    assert ids(reranked) == ids(fused)[::-1]
    assert rerank_report(reranked).status == fusion_pb2.LEG_STATUS_OK
    assert rerank_report(reranked).hits == 5
    for rank, match in enumerate(reranked.matches, start=1):
        (entry,) = [e for e in match.explain if e.leg == legs_pb2.LEG_RERANK]
        assert (entry.rank, entry.fused_rank) == (rank, 6 - rank)
        assert match.score == entry.raw_score == 5 - rank  # the reranker's score is the answer's
        # the legs' entries are kept next to it
        assert {e.leg for e in match.explain} - {legs_pb2.LEG_RERANK} <= {leg.value for leg in LEGS}
    ((authorization, body),) = reranker.calls
    assert authorization == f"Bearer {API_KEY}"
    assert body["query"] == QUERY and body["model"] == "scripted" and body["top_n"] == 5
    # each document is its match's place and content, in the fused order
    for document, match in zip(body["documents"], fused.matches, strict=True):
        assert match.content[:100] in document and match.file_path in document
    assert API_KEY not in str(reranked)


async def test_the_window_is_reranked_and_cut_to_top_k(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress, reranker: ScriptedReranker
) -> None:
    gateway = make_gateway(stack, await stack.resources.pool(), reranker.url)
    window = await gateway.search(request(top_k=8), remaining_s=30)
    answer = await gateway.search(request(top_k=3, enable_rerank=True, rerank_candidates=8), remaining_s=30)
    await gateway.close()
    assert len(reranker.calls[0][1]["documents"]) == 8
    assert ids(answer) == ids(window)[::-1][:3]  # the fused 8th first: it came from outside the top 3
    assert all(m.content for m in answer.matches)


@pytest.mark.parametrize("behaviour", ["status", "partial", "hang"])
async def test_a_failing_reranker_keeps_the_fused_order(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress, reranker: ScriptedReranker, behaviour: str
) -> None:
    reranker.behaviour = behaviour  # type: ignore[assignment]
    gateway = make_gateway(stack, await stack.resources.pool(), reranker.url)
    fused = await gateway.search(request(), remaining_s=30)
    answer = await gateway.search(request(enable_rerank=True, rerank_timeout_ms=300), remaining_s=30)
    await gateway.close()
    assert [(m.chunk_id, m.score) for m in answer.matches] == [(m.chunk_id, m.score) for m in fused.matches]
    assert not any(e.leg == legs_pb2.LEG_RERANK for m in answer.matches for e in m.explain)
    assert answer.partial == fused.partial
    report = rerank_report(answer)
    sent = len(reranker.calls[0][1]["documents"])
    assert sent >= len(fused.matches)  # the window: rerank_candidates (20) or what fusion found
    expected = {
        "status": (fusion_pb2.LEG_STATUS_ERROR, "HTTP 500"),
        "partial": (fusion_pb2.LEG_STATUS_ERROR, f"scored {sent - 1} of the {sent} documents"),
        "hang": (fusion_pb2.LEG_STATUS_TIMEOUT, "did not answer within the stage's 300 ms"),
    }[behaviour]
    assert (report.status, expected[1] in report.error) == (expected[0], True), report.error
    assert report.budget_ms == 300
    if behaviour == "hang":
        assert not reranker.release.is_set()  # still hanging when the stage gave up


async def test_the_callers_deadline_cuts_the_stage(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress, reranker: ScriptedReranker
) -> None:
    reranker.behaviour = "hang"
    gateway = make_gateway(stack, await stack.resources.pool(), reranker.url)
    answer = await gateway.search(request(enable_rerank=True, rerank_timeout_ms=60_000), remaining_s=2.0)
    await gateway.close()
    report = rerank_report(answer)
    assert report.status == fusion_pb2.LEG_STATUS_TIMEOUT
    assert report.budget_ms < 2000 - stack.cfg.fusion.merge_reserve_ms
    assert answer.matches


async def test_rerank_off_is_the_plain_answer(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress, reranker: ScriptedReranker
) -> None:
    gateway = make_gateway(stack, await stack.resources.pool(), reranker.url)
    plain = await gateway.search(request(), remaining_s=30)
    off = await gateway.search(request(enable_rerank=False, rerank_candidates=50), remaining_s=30)
    await gateway.close()
    for reply in (plain, off):
        reply.ClearField("took_ms")
        reply.ClearField("next_page_token")  # a token names its own request
    for reply in (plain, off):
        for report in reply.legs:
            report.ClearField("latency_ms")
    assert off == plain
    assert not reranker.calls


async def test_rerank_requests_are_checked(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress, reranker: ScriptedReranker
) -> None:
    gateway = make_gateway(stack, await stack.resources.pool(), reranker.url)
    for field, value, bounds in (("rerank_candidates", 0, "1"), ("rerank_candidates", 201, "200")):
        with pytest.raises(RequestError) as bad:
            await gateway.search(request(enable_rerank=True, **{field: value}), remaining_s=30)
        assert bad.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert f"options.fusion.{field}" in bad.value.message and bounds in bad.value.message
    with pytest.raises(RequestError) as bad_timeout:
        await gateway.search(request(enable_rerank=True, rerank_timeout_ms=0), remaining_s=30)
    assert "options.fusion.rerank_timeout_ms" in bad_timeout.value.message
    await gateway.close()
    assert not reranker.calls
    # the test stack's gateway has no reranker
    async with stack.channel("fusion") as channel:
        with pytest.raises(grpc.aio.AioRpcError) as no_reranker:
            await fusion_pb2_grpc.FusionStub(channel).Search(request(enable_rerank=True), timeout=30)
    assert no_reranker.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "rerank.base_url" in str(no_reranker.value.details())


async def test_a_fusion_service_with_a_reranker_over_grpc_and_http(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress, reranker: ScriptedReranker
) -> None:
    """The fusion service as `tribrid serve` builds it from config (rerank section set), asked
    through gRPC with the CLI's `-o` setter and through the HTTP bridge."""
    addresses = {f"{name}_address": f"127.0.0.1:{server.port}" for name, server in stack.servers.items()}
    cfg = stack.cfg.model_copy(
        update={
            "rerank": RerankConfig(base_url=reranker.url, model="scripted"),
            "services": stack.cfg.services.model_copy(update={**addresses, "fusion_port": 0}),
        }
    )
    resources = Resources(cfg)
    servers = await start_services(cfg, ("fusion",), resources)
    fusion = servers["fusion"]
    grpc_request = common_pb2.SearchRequest(corpus_id=SAMPLE_CORPUS, query=QUERY, top_k=4)
    set_option(grpc_request.options, "fusion.enable_rerank=true")
    set_option(grpc_request.options, "fusion.rerank_candidates=4")
    async with grpc.aio.insecure_channel(f"127.0.0.1:{fusion.port}") as channel:
        stub = fusion_pb2_grpc.FusionStub(channel)
        plain = await stub.Search(common_pb2.SearchRequest(corpus_id=SAMPLE_CORPUS, query=QUERY, top_k=4))
        reply = await stub.Search(grpc_request, timeout=30)
    assert ids(reply) == ids(plain)[::-1]
    bridge_cfg = cfg.model_copy(
        update={"services": cfg.services.model_copy(update={"fusion_address": f"127.0.0.1:{fusion.port}"})}
    )
    bridge = await start_bridge(bridge_cfg, "127.0.0.1", 0)
    body = {
        "corpusId": SAMPLE_CORPUS,
        "query": QUERY,
        "topK": 4,
        "options": {"fusion": {"enableRerank": True, "rerankCandidates": 4}},
    }
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{bridge.port}", timeout=30) as http:
        answer = await http.post("/v1/search", json=body)
        document = (await http.get("/openapi.json")).json()
    await bridge.stop(0)
    await fusion.stop(0)
    await resources.close()
    assert answer.status_code == 200, answer.text
    matches = answer.json()["matches"]
    assert [m["chunkId"] for m in matches] == ids(reply)
    entry = next(e for e in matches[0]["explain"] if e["leg"] == "LEG_RERANK")
    assert entry["rank"] == 1 and entry["fusedRank"] == 4
    (report,) = [r for r in answer.json()["legs"] if r["leg"] == "LEG_RERANK"]
    assert report["status"] == "LEG_STATUS_OK"
    assert "enableRerank" in json.dumps(document) and "fusedRank" in json.dumps(document)


@pytest.fixture(scope="module")
def cross_encoder_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cross-encoder saved in a local directory: the bundled MiniLM with a scoring head (seeded;
    its scores mean nothing, they only have to be the model's own)."""
    import torch
    from sentence_transformers import CrossEncoder

    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("cross-encoder")
    CrossEncoder(str(bundled_model_path()), num_labels=1, device="cpu", local_files_only=True).save(str(path))
    return path


async def test_a_local_cross_encoder_orders_the_answer_by_its_scores(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress, cross_encoder_dir: Path
) -> None:
    from sentence_transformers import CrossEncoder

    local = LocalReranker(RerankConfig(model_path=cross_encoder_dir))
    legs = {leg.name: LegClient(leg, f"127.0.0.1:{stack.servers[leg.name].port}") for leg in LEGS}
    gateway = Gateway(stack.cfg.fusion, stack.cfg.limits, legs, await stack.resources.pool(), reranker=local)  # type: ignore[arg-type]
    fused = await gateway.search(request(top_k=6), remaining_s=30)
    answer = await gateway.search(request(top_k=6, enable_rerank=True, rerank_candidates=6), remaining_s=30)
    await gateway.close()
    assert rerank_report(answer).status == fusion_pb2.LEG_STATUS_OK
    model = CrossEncoder(str(cross_encoder_dir), device="cpu", local_files_only=True)
    expected = model.predict([(QUERY, document_text(m, local.max_chars)) for m in fused.matches])
    by_score = sorted(zip(expected, ids(fused), strict=True), key=lambda pair: -pair[0])
    assert ids(answer) == [cid for _, cid in by_score]
    assert [m.score for m in answer.matches] == pytest.approx(
        sorted(expected.tolist(), reverse=True), abs=1e-5
    )
    assert local.model == cross_encoder_dir.name


def test_one_reranker_at_a_time() -> None:
    with pytest.raises(ValueError, match="not both"):
        RerankConfig(base_url="http://127.0.0.1:1/v1", model_path=Path("/models/x"))
