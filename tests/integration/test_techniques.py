"""Query techniques (HyDE, multi-query) against the real legs over the sample corpus, with a real
local HTTP server speaking the OpenAI chat API as the model (scripted answers)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Iterator

import grpc
import httpx
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import SecretStr

from services.bridge.service import start_bridge
from services.fusion.gateway import Gateway, LegClient
from tests.chat_server import Reply, ScriptedChat, chat_server
from tests.stack import FIXTURE_REPO, SAMPLE_CORPUS, Stack, collected_spans, fusion_options
from tribrid.config import (
    GenerationConfig,
    HydeSettings,
    MultiQuerySettings,
    TechniqueRegistry,
)
from tribrid.generation import GenerationClient
from tribrid.legs import BY_VALUE, LEGS
from tribrid.options import RequestError, set_option
from tribrid.resources import Resources
from tribrid.server import RunningServer, ServiceSpec, start_server
from tribrid.v1 import (
    common_pb2,
    fusion_pb2,
    fusion_pb2_grpc,
    indexer_pb2,
    vector_pb2_grpc,
)
from tribridctl import cli
from tribridctl.compose import start_services

API_KEY = "sk-test-7f3a9c-never-in-logs"
CARD_CHECK = "shop.payment.validate_card_number"


@pytest.fixture
async def chat() -> AsyncIterator[ScriptedChat]:
    async with chat_server() as server:
        yield server


def make_gateway(
    stack: Stack,
    pool: object,
    url: str,
    *,
    key: str = "",
    registry: TechniqueRegistry | None = None,
    legs: dict[str, LegClient] | None = None,
) -> Gateway:
    fcfg = stack.cfg.fusion.model_copy(update={"technique_settings": registry or TechniqueRegistry()})
    generation = GenerationClient(GenerationConfig(base_url=url, model="scripted", api_key=SecretStr(key)))
    legs = legs or {leg.name: LegClient(leg, f"127.0.0.1:{stack.servers[leg.name].port}") for leg in LEGS}
    return Gateway(fcfg, stack.cfg.limits, legs, pool, generation)  # type: ignore[arg-type]


def request(
    query: str, techniques: list[str], enabled: dict[str, bool] | None = None
) -> common_pb2.SearchRequest:
    return common_pb2.SearchRequest(
        corpus_id=SAMPLE_CORPUS,
        query=query,
        top_k=10,
        # plain RRF: its scores can be checked rank by rank over every list
        options=fusion_options(techniques=techniques, candidates_per_leg=3, enabled=enabled, method="rrf"),
    )


def leg_weight(reply: fusion_pb2.FusionSearchResponse, leg: int) -> float:
    return reply.weights[BY_VALUE[leg].name]


def assert_rrf_over_lists(reply: fusion_pb2.FusionSearchResponse, lists_per_leg: int) -> None:
    """Each fused score is the RRF sum over every ranked list the chunk is in, each list weighing
    as its leg, the weights normalized over all lists (each answering leg has `lists_per_leg`)."""
    answered = [r.leg for r in reply.legs if r.status == fusion_pb2.LEG_STATUS_OK]
    total = sum(leg_weight(reply, leg) for leg in answered) * lists_per_leg
    for match in reply.matches:
        expected = sum(leg_weight(reply, e.leg) / total / (60 + e.rank) for e in match.explain if e.rank)
        assert match.score == pytest.approx(expected)
        assert sum(e.contribution for e in match.explain) == pytest.approx(match.score)


def card_check_source() -> str:
    text = (FIXTURE_REPO / "shop" / "payment.py").read_text()
    return text[text.index("def validate_card_number") : text.index("class PaymentGateway")].strip()


async def test_hyde_adds_the_hypothetical_passages_hits(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress, chat: ScriptedChat
) -> None:
    passage = card_check_source()
    chat.respond = lambda prompt: Reply(text=f"```python\n{passage}\n```")
    gateway = make_gateway(stack, await stack.resources.pool(), chat.url)
    query = "restock the warehouse"
    plain = await gateway.search(request(query, []), remaining_s=30)
    assert CARD_CHECK not in {m.symbol for m in plain.matches}
    assert not plain.techniques

    reply = await gateway.search(request(query, ["hyde"]), remaining_s=30)
    await gateway.close()
    (report,) = reply.techniques
    assert report.technique == "hyde" and report.status == fusion_pb2.TECHNIQUE_STATUS_OK, report.error
    assert list(report.generated) == [passage] and report.hits > 0 and not report.cached
    (prompt,) = chat.prompts()
    assert query in prompt and "source code" in prompt  # the code variant of the prompt
    card = next(m for m in reply.matches if m.symbol == CARD_CHECK)
    hyde = [e for e in card.explain if e.source == "hyde"]
    assert len(hyde) == 1 and hyde[0].rank == 1 and hyde[0].source_query == passage
    assert hyde[0].leg == LEGS[0].value  # the vector leg: only it searches the passage
    for match in reply.matches:
        assert all(e.leg == LEGS[0].value for e in match.explain if e.source == "hyde")
    # the legs' lists of the original query are the same, and all lists fuse by plain RRF
    plain_ranks = {m.chunk_id: {e.leg: e.rank for e in m.explain} for m in plain.matches}
    for match in reply.matches:
        if match.chunk_id in plain_ranks:
            assert {e.leg: e.rank for e in match.explain if not e.source} == plain_ranks[match.chunk_id]
    answered = [r.leg for r in reply.legs if r.status == fusion_pb2.LEG_STATUS_OK]
    total = sum(leg_weight(reply, leg) for leg in answered) + leg_weight(reply, LEGS[0].value)
    for match in reply.matches:
        expected = sum(leg_weight(reply, e.leg) / total / (60 + e.rank) for e in match.explain if e.rank)
        assert match.score == pytest.approx(expected)
    assert reply.partial == plain.partial
    with cli.console.capture() as printed:
        cli.print_results(query, reply)
    assert "technique hyde=OK" in printed.get() and "techniques" in printed.get()


async def test_hyde_document_prompt_and_cache(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress, chat: ScriptedChat
) -> None:
    chat.respond = lambda prompt: Reply(text="Stock is reserved when an order is placed.")
    gateway = make_gateway(stack, await stack.resources.pool(), chat.url)
    docs = request("how is stock reserved", ["hyde"])
    docs.filters.languages.append("markdown")
    first = await gateway.search(docs, remaining_s=30)
    second = await gateway.search(docs, remaining_s=30)
    await gateway.close()
    assert len(chat.calls) == 1  # the second answer came from the cache
    assert "documentation" in chat.prompts()[0]
    assert not first.techniques[0].cached and second.techniques[0].cached
    assert [m.chunk_id for m in first.matches] == [m.chunk_id for m in second.matches]


async def test_multi_query_dedups_and_fuses_by_rrf(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress, chat: ScriptedChat
) -> None:
    query = "validate a card number"
    variants = ["Luhn checksum of card digits", "add value added tax to an amount"]
    # a repeated variant and the original query itself are dropped
    answer = [variants[0], variants[0].upper(), query, variants[1], "unused fourth"]
    chat.respond = lambda prompt: Reply(text=json.dumps(answer))
    registry = TechniqueRegistry(multi_query=MultiQuerySettings(num_queries=2))
    gateway = make_gateway(stack, await stack.resources.pool(), chat.url, registry=registry)
    plain = await gateway.search(request(query, []), remaining_s=30)
    reply = await gateway.search(request(query, ["multi_query"]), remaining_s=30)
    await gateway.close()
    (report,) = reply.techniques
    assert report.status == fusion_pb2.TECHNIQUE_STATUS_OK, report.error
    assert list(report.generated) == variants
    assert "2 different queries" in chat.prompts()[0]
    ids = [m.chunk_id for m in reply.matches]
    assert len(ids) == len(set(ids))  # one match per chunk over all lists
    sources = {(e.source, e.source_query) for m in reply.matches for e in m.explain if e.source}
    assert {("multi_query:1", variants[0]), ("multi_query:2", variants[1])} <= sources
    # a chunk only the second variant finds is in the answer
    assert "shop.pricing.apply_tax" not in {m.symbol for m in plain.matches}
    tax = next(m for m in reply.matches if m.symbol == "shop.pricing.apply_tax")
    assert {e.source for e in tax.explain if e.rank} == {"multi_query:2"}
    assert_rrf_over_lists(reply, lists_per_leg=1 + len(variants))
    assert reply.partial == plain.partial


@pytest.mark.parametrize(
    ("technique", "reply", "error"),
    [
        ("hyde", Reply("status", status=500), "the model answered HTTP 500"),
        ("hyde", Reply("empty"), "empty answer"),
        ("hyde", Reply("malformed"), "malformed answer"),
        ("multi_query", Reply(text="1. card checks\n2. taxes"), "not a JSON array"),
        ("multi_query", Reply(text='["validate a card number"]'), "no query different"),
    ],
)
async def test_model_failures_fall_back_to_the_original_query(
    stack: Stack,
    sample_corpus: indexer_pb2.IndexProgress,
    chat: ScriptedChat,
    technique: str,
    reply: Reply,
    error: str,
) -> None:
    chat.respond = lambda prompt: reply
    gateway = make_gateway(stack, await stack.resources.pool(), chat.url)
    query = "validate a card number"
    plain = await gateway.search(request(query, []), remaining_s=30)
    answer = await gateway.search(request(query, [technique]), remaining_s=30)
    await gateway.close()
    (report,) = answer.techniques
    assert report.status == fusion_pb2.TECHNIQUE_STATUS_ERROR and error in report.error
    assert not report.generated and len(chat.calls) == 1
    assert [(m.chunk_id, m.score) for m in answer.matches] == [(m.chunk_id, m.score) for m in plain.matches]
    assert answer.partial == plain.partial
    assert not any(e.source for m in answer.matches for e in m.explain)


async def test_a_hanging_model_is_cut_at_the_technique_budget(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress, chat: ScriptedChat
) -> None:
    chat.respond = lambda prompt: Reply("hang")  # answers only when the test ends
    registry = TechniqueRegistry(hyde=HydeSettings(timeout_ms=300), multi_query=MultiQuerySettings())
    gateway = make_gateway(stack, await stack.resources.pool(), chat.url, registry=registry)
    query = "cart total price"
    plain = await gateway.search(request(query, []), remaining_s=30)
    answer = await gateway.search(request(query, ["hyde", "multi_query"]), remaining_s=1.5)
    await gateway.close()
    hyde, multi = answer.techniques
    assert hyde.status == multi.status == fusion_pb2.TECHNIQUE_STATUS_TIMEOUT
    assert hyde.budget_ms == 300  # its own budget
    # multi_query's 30 s budget is cut to the caller's deadline less the merge reserve
    assert multi.budget_ms <= 1500 - stack.cfg.fusion.merge_reserve_ms
    assert "did not answer" in hyde.error
    assert [(m.chunk_id, m.score) for m in answer.matches] == [(m.chunk_id, m.score) for m in plain.matches]
    assert answer.partial == plain.partial
    assert len(chat.calls) == 2 and not chat.release.is_set()  # both still hanging when cut


async def test_hyde_without_the_vector_leg_is_skipped(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress, chat: ScriptedChat
) -> None:
    chat.respond = lambda prompt: Reply(text="def total(cart): ...")
    gateway = make_gateway(stack, await stack.resources.pool(), chat.url)
    reply = await gateway.search(request("cart total", ["hyde"], enabled={"vector": False}), remaining_s=30)
    await gateway.close()
    (report,) = reply.techniques
    assert report.status == fusion_pb2.TECHNIQUE_STATUS_SKIPPED and "legs" in report.error
    assert not chat.calls and reply.matches  # the model was not asked; the answer is there


class FailingVariants(vector_pb2_grpc.VectorSearchServicer):
    """A vector leg that answers the original query with `matches` and fails any other query."""

    def __init__(self, query: str, matches: list[common_pb2.ChunkMatch]) -> None:
        self.query = query
        self.matches = matches
        self.queries: list[str] = []

    async def Search(
        self,
        request: common_pb2.SearchRequest,
        context: grpc.aio.ServicerContext[common_pb2.SearchRequest, common_pb2.SearchResponse],
    ) -> common_pb2.SearchResponse:
        self.queries.append(request.query)
        if request.query != self.query:
            await context.abort(grpc.StatusCode.INTERNAL, "scripted leg failure")
        return common_pb2.SearchResponse(matches=self.matches)


@pytest.fixture
async def failing_vector(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress
) -> AsyncIterator[tuple[FailingVariants, RunningServer]]:
    query = "validate a card number"
    async with stack.channel("vector") as channel:
        real = await vector_pb2_grpc.VectorSearchStub(channel).Search(
            common_pb2.SearchRequest(corpus_id=SAMPLE_CORPUS, query=query, top_k=3)
        )
    fake = FailingVariants(query, list(real.matches))
    spec = ServiceSpec(
        "tribrid.v1.VectorSearch", lambda s: vector_pb2_grpc.add_VectorSearchServicer_to_server(fake, s)
    )
    server = await start_server([spec], "127.0.0.1", 0)
    yield fake, server
    await server.stop(0)


async def test_every_variant_failing_gives_the_original_result(
    stack: Stack, chat: ScriptedChat, failing_vector: tuple[FailingVariants, RunningServer]
) -> None:
    fake, server = failing_vector
    chat.respond = lambda prompt: Reply(text='["card digits checksum", "Luhn algorithm"]')
    legs = {"vector": LegClient(LEGS[0], f"127.0.0.1:{server.port}")}
    gateway = make_gateway(stack, await stack.resources.pool(), chat.url, legs=legs)
    off = {"sparse": False, "graph": False}
    plain = await gateway.search(request(fake.query, [], enabled=off), remaining_s=30)
    answer = await gateway.search(request(fake.query, ["multi_query"], enabled=off), remaining_s=30)
    await gateway.close()
    (report,) = answer.techniques
    assert report.status == fusion_pb2.TECHNIQUE_STATUS_ERROR
    assert "no leg answered its queries" in report.error and "scripted leg failure" in report.error
    assert list(report.generated) == ["card digits checksum", "Luhn algorithm"]
    assert set(report.generated) <= set(fake.queries)  # the variants were searched, and failed
    assert [(m.chunk_id, m.score) for m in answer.matches] == [(m.chunk_id, m.score) for m in plain.matches]
    assert not answer.partial


async def test_technique_requests_are_checked(stack: Stack, sample_corpus: indexer_pb2.IndexProgress) -> None:
    async with stack.channel("fusion") as channel:
        stub = fusion_pb2_grpc.FusionStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as unknown:
            await stub.Search(request("cart", ["hyde", "rag_fusion"]), timeout=30)
        assert unknown.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "rag_fusion" in str(unknown.value.details())
        assert "hyde, multi_query" in str(unknown.value.details())
        # the test stack has no generation endpoint
        with pytest.raises(grpc.aio.AioRpcError) as no_model:
            await stub.Search(request("cart", ["hyde"]), timeout=30)
        assert no_model.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "generation.base_url" in str(no_model.value.details())
    registry = TechniqueRegistry(hyde=HydeSettings(enabled=False))
    gateway = make_gateway(stack, await stack.resources.pool(), "http://127.0.0.1:9/v1", registry=registry)
    with pytest.raises(RequestError) as disabled:
        await gateway.search(request("cart", ["hyde"]), remaining_s=30)
    await gateway.close()
    assert disabled.value.code == grpc.StatusCode.FAILED_PRECONDITION and "disabled" in disabled.value.message


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    with collected_spans() as exporter:
        yield exporter


async def test_the_api_key_never_appears_in_logs_or_traces(
    stack: Stack,
    sample_corpus: indexer_pb2.IndexProgress,
    chat: ScriptedChat,
    spans: InMemorySpanExporter,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    answers = iter([Reply(text="def total(cart): ..."), Reply("status", status=401), Reply("malformed")])
    chat.respond = lambda prompt: next(answers, Reply("hang"))
    # long enough for the answered calls on a busy machine; the last one hangs until it ends
    registry = TechniqueRegistry(hyde=HydeSettings(timeout_ms=2000), multi_query=MultiQuerySettings())
    gateway = make_gateway(stack, await stack.resources.pool(), chat.url, key=API_KEY, registry=registry)
    replies = [
        await gateway.search(request(query, ["hyde"]), remaining_s=30)
        for query in ("cart total", "cart price", "cart items", "cart tax")
    ]
    text = repr(gateway._generation) + repr(GenerationConfig(base_url=chat.url, api_key=SecretStr(API_KEY)))
    await gateway.close()
    await asyncio.sleep(0)
    statuses = [r.techniques[0].status for r in replies]
    assert statuses == [
        fusion_pb2.TECHNIQUE_STATUS_OK,
        fusion_pb2.TECHNIQUE_STATUS_ERROR,
        fusion_pb2.TECHNIQUE_STATUS_ERROR,
        fusion_pb2.TECHNIQUE_STATUS_TIMEOUT,
    ]
    assert {auth for auth, _ in chat.calls} == {f"Bearer {API_KEY}"}  # the key was sent...
    finished = spans.get_finished_spans()
    assert any(s.name == "generation" for s in finished)
    recorded = [text, *(str(r) for r in replies)]
    recorded += [f"{r.getMessage()} {r.__dict__}" for r in caplog.records]
    recorded += [f"{s.name} {dict(s.attributes or {})} {[e.attributes for e in s.events]}" for s in finished]
    assert not [line for line in recorded if API_KEY in line]  # ...and is nowhere else


async def test_a_fusion_service_with_a_model_over_grpc_and_http(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress, chat: ScriptedChat
) -> None:
    """The fusion service as `tribrid serve` builds it from config (generation section set),
    asked through gRPC with the CLI's `-o` setter and through the HTTP bridge."""
    chat.respond = lambda prompt: Reply(text='["cart subtotal", "tax on a net amount"]')
    addresses = {f"{name}_address": f"127.0.0.1:{server.port}" for name, server in stack.servers.items()}
    cfg = stack.cfg.model_copy(
        update={
            "generation": GenerationConfig(base_url=chat.url, model="scripted", api_key=SecretStr(API_KEY)),
            "services": stack.cfg.services.model_copy(update={**addresses, "fusion_port": 0}),
        }
    )
    resources = Resources(cfg)
    servers = await start_services(cfg, ("fusion",), resources)
    fusion = servers["fusion"]
    grpc_request = common_pb2.SearchRequest(corpus_id=SAMPLE_CORPUS, query="cart total price")
    set_option(grpc_request.options, "fusion.techniques=multi_query")
    async with grpc.aio.insecure_channel(f"127.0.0.1:{fusion.port}") as channel:
        reply = await fusion_pb2_grpc.FusionStub(channel).Search(grpc_request, timeout=30)
    (report,) = reply.techniques
    assert report.status == fusion_pb2.TECHNIQUE_STATUS_OK, report.error
    assert list(report.generated) == ["cart subtotal", "tax on a net amount"]
    assert any(e.source == "multi_query:1" for m in reply.matches for e in m.explain)
    bridge_cfg = cfg.model_copy(
        update={"services": cfg.services.model_copy(update={"fusion_address": f"127.0.0.1:{fusion.port}"})}
    )
    bridge = await start_bridge(bridge_cfg, "127.0.0.1", 0)
    body = {
        "corpusId": SAMPLE_CORPUS,
        "query": "cart total price",
        "options": {"fusion": {"techniques": ["hyde"]}},
    }
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{bridge.port}", timeout=30) as http:
        answer = await http.post("/v1/search", json=body)
    await bridge.stop(0)
    await fusion.stop(0)
    await resources.close()
    assert answer.status_code == 200, answer.text
    (hyde,) = answer.json()["techniques"]
    # the model's answer is a JSON array, which HyDE takes as its passage: it is text all the same
    assert hyde["technique"] == "hyde" and hyde["status"] == "TECHNIQUE_STATUS_OK"
    assert {auth for auth, _ in chat.calls} == {f"Bearer {API_KEY}"}
