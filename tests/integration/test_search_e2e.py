"""The whole stack on real stores: index the fixture repository, then ask each leg and the gateway."""

from __future__ import annotations

import grpc
import pytest

from tests.stack import SAMPLE_CORPUS, Stack, fusion_options
from tribrid.legs import BY_VALUE
from tribrid.options import spelling
from tribrid.v1 import (
    common_pb2,
    fusion_pb2,
    fusion_pb2_grpc,
    graph_pb2_grpc,
    indexer_pb2,
    legs_pb2,
    sparse_pb2_grpc,
    vector_pb2_grpc,
)
from tribrid.v1.reading_pb2 import QueryKind

STUBS = {
    "vector": vector_pb2_grpc.VectorSearchStub,
    "sparse": sparse_pb2_grpc.SparseSearchStub,
    "graph": graph_pb2_grpc.GraphSearchStub,
    "fusion": fusion_pb2_grpc.FusionStub,
}


async def search(stack: Stack, service: str, query: str, **fields: object) -> list[common_pb2.ChunkMatch]:
    async with stack.channel(service) as channel:
        request = common_pb2.SearchRequest(corpus_id=SAMPLE_CORPUS, query=query, **fields)  # type: ignore[arg-type]
        reply = await STUBS[service](channel).Search(request, timeout=30)
    return list(reply.matches)


def symbols(matches: list[common_pb2.ChunkMatch]) -> list[str]:
    return [m.symbol for m in matches]


async def test_index_counts_and_gitignore(sample_corpus: indexer_pb2.IndexProgress) -> None:
    assert sample_corpus.done
    # 5 python files + README.md + .gitignore; build/ and *.log are ignored by .gitignore
    assert sample_corpus.files_seen - sample_corpus.files_skipped == 7
    assert sample_corpus.chunks_total == sample_corpus.chunks_embedded
    assert sample_corpus.entities > 0 and sample_corpus.relationships > 0


async def test_vector_leg_finds_paraphrase(stack: Stack, sample_corpus: indexer_pb2.IndexProgress) -> None:
    matches = await search(
        stack, "vector", "reduce the price for customers who have been members a long time"
    )
    assert matches[0].symbol == "shop.pricing.compute_discount"
    assert matches[0].leg == legs_pb2.LEG_VECTOR
    assert [e.rank for e in matches[0].explain] == [1]


async def test_sparse_leg_finds_identifier(stack: Stack, sample_corpus: indexer_pb2.IndexProgress) -> None:
    matches = await search(stack, "sparse", "validate_card_number")
    assert matches[0].symbol == "shop.payment.validate_card_number"
    assert matches[0].file_path == "shop/payment.py"
    assert (matches[0].start_line, matches[0].end_line) == (4, 14)
    # identifier parts match too: "card number" reaches the same definition
    assert "shop.payment.validate_card_number" in symbols(await search(stack, "sparse", "card number"))


async def test_graph_leg_finds_callers(stack: Stack, sample_corpus: indexer_pb2.IndexProgress) -> None:
    matches = await search(stack, "graph", "who calls compute_discount")
    found = symbols(matches)
    # "who calls X" follows incoming calls: the caller ranks first, X's own definition below it
    assert found[0] == "shop.cart.Cart.total_price"  # its caller, one hop away
    assert "shop.pricing.compute_discount" in found  # the seed itself, hop 0, lower
    assert found.index("shop.pricing.compute_discount") > 0
    caller = matches[0]
    assert "hops=1" in caller.explain[0].detail
    provenance = caller.explain[0].graph
    assert provenance.seed_entity == "shop.pricing.compute_discount"
    assert list(provenance.path) == ["shop.pricing.compute_discount", "shop.cart.Cart.total_price"]
    assert list(provenance.relationship_types) == ["calls"]
    assert (provenance.hops, provenance.seed_match) == (1, "exact")


async def test_fusion_uses_all_legs(stack: Stack, sample_corpus: indexer_pb2.IndexProgress) -> None:
    async with stack.channel("fusion") as channel:
        request = common_pb2.SearchRequest(corpus_id=SAMPLE_CORPUS, query="validate_card_number", top_k=5)
        reply = await fusion_pb2_grpc.FusionStub(channel).Search(request, timeout=30)
    assert [r.status for r in reply.legs] == [fusion_pb2.LEG_STATUS_OK] * 3
    assert not reply.partial
    assert reply.matches[0].symbol == "shop.payment.validate_card_number"
    assert len(reply.matches) <= 5
    top = reply.matches[0]
    assert {e.leg for e in top.explain} == {
        legs_pb2.LEG_VECTOR,
        legs_pb2.LEG_SPARSE,
        legs_pb2.LEG_GRAPH,
    }
    # an identifier: the identifier profile's weights
    assert spelling(QueryKind.DESCRIPTOR, reply.query_kind) == "identifier"
    profile = stack.cfg.fusion.query_kind_weights["identifier"]
    total = sum(profile.values())
    assert dict(reply.weights) == pytest.approx({leg: w / total for leg, w in profile.items()})
    # the default fusion, DBSF: each leg adds its weight x its z-score-normalized score
    for match in reply.matches:
        for e in match.explain:
            assert 0.0 <= e.normalized_score <= 1.0
            assert e.contribution == pytest.approx(reply.weights[BY_VALUE[e.leg].name] * e.normalized_score)
        assert match.score == pytest.approx(sum(e.contribution for e in match.explain))
    assert top.content  # the gateway reads the content of its answers


@pytest.mark.parametrize(
    ("query", "options", "kind", "weights"),
    [
        ("who calls checkout", {}, "structural", (0.05, 0.1, 0.85)),
        ("charge the card and apply the tax", {}, "natural", (0.75, 0.2, 0.05)),
        ("who calls checkout", {"adaptive_weights": False}, "structural", (0.4, 0.3, 0.3)),
        ("how is compute_total computed", {}, "mixed", (0.6, 0.2, 0.2)),
        # a request's own weights are used as given (normalized)
        ("who calls checkout", {"weights": {"vector": 1.0, "graph": 1.0}}, "structural", (0.0, 0.0, 0.0)),
    ],
)
async def test_weights_follow_the_kind_of_query(
    stack: Stack,
    sample_corpus: indexer_pb2.IndexProgress,
    query: str,
    options: dict[str, object],
    kind: str,
    weights: tuple[float, float, float],
) -> None:
    async with stack.channel("fusion") as channel:
        request = common_pb2.SearchRequest(
            corpus_id=SAMPLE_CORPUS,
            query=query,
            options=fusion_options(**options),  # type: ignore[arg-type]
        )
        reply = await fusion_pb2_grpc.FusionStub(channel).Search(request, timeout=30)
    assert spelling(QueryKind.DESCRIPTOR, reply.query_kind) == kind
    got = (reply.weights["vector"], reply.weights["sparse"], reply.weights["graph"])
    if "weights" in options:  # 1.0 / 0.3 (configured) / 1.0
        assert got == pytest.approx((1 / 2.3, 0.3 / 2.3, 1 / 2.3))
    elif kind in ("natural", "mixed"):
        # prose: the profile scaled by each leg's confidence squared, as the reason reports it
        said = reply.weights_reason.split("top score's z): ", 1)[1]
        confidence = {leg: float(value) for leg, value in (part.split() for part in said.split(", "))}
        scaled = [
            w * confidence[leg] ** 2 for leg, w in zip(("vector", "sparse", "graph"), weights, strict=True)
        ]
        assert got == pytest.approx([w / sum(scaled) for w in scaled], abs=0.005)  # the reason rounds
    else:
        assert got == pytest.approx(weights)


async def test_filters_on_every_leg(stack: Stack, sample_corpus: indexer_pb2.IndexProgress) -> None:
    for service in ("vector", "sparse", "graph"):
        only_md = await search(
            stack,
            service,
            "card payments Luhn validate_card_number",
            filters=common_pb2.SearchFilters(languages=["markdown"]),
        )
        assert all(m.language == "markdown" for m in only_md), service
        in_cart = await search(
            stack,
            service,
            "compute_discount price",
            filters=common_pb2.SearchFilters(path_glob="shop/cart.py"),
        )
        assert in_cart and all(m.file_path == "shop/cart.py" for m in in_cart), service


@pytest.mark.parametrize("query", ["the of and", "?!", "how does it", "... ()"])
async def test_stop_words_or_punctuation_only_is_empty_and_ok(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress, query: str
) -> None:
    for service in ("vector", "sparse", "graph"):
        assert await search(stack, service, query) == [], service
    async with stack.channel("fusion") as channel:
        request = common_pb2.SearchRequest(corpus_id=SAMPLE_CORPUS, query=query)
        reply = await fusion_pb2_grpc.FusionStub(channel).Search(request, timeout=30)
    assert list(reply.matches) == [] and not reply.partial
    assert [(r.status, r.hits) for r in reply.legs] == [(fusion_pb2.LEG_STATUS_OK, 0)] * 3


@pytest.mark.parametrize("service", ["vector", "sparse", "graph", "fusion"])
@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"query": "  "}, "query is empty"),
        ({"query": "x", "top_k": 0}, "top_k must be between 1 and"),
        ({"query": "x", "top_k": 100_000}, "top_k must be between 1 and"),
        ({"query": "cart", "corpus_id": "bad name!"}, "corpus_id"),
    ],
)
async def test_bad_requests_are_invalid_argument(
    stack: Stack,
    sample_corpus: indexer_pb2.IndexProgress,
    service: str,
    fields: dict[str, object],
    message: str,
) -> None:
    request = common_pb2.SearchRequest(corpus_id=SAMPLE_CORPUS)
    for key, value in fields.items():
        setattr(request, key, value)
    async with stack.channel(service) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as excinfo:
            await STUBS[service](channel).Search(request, timeout=30)
    assert excinfo.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert message in (excinfo.value.details() or "")


@pytest.mark.parametrize("service", ["vector", "sparse", "graph", "fusion"])
async def test_unknown_corpus_is_not_found(stack: Stack, service: str) -> None:
    request = common_pb2.SearchRequest(corpus_id="no-such-corpus", query="cart")
    async with stack.channel(service) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as excinfo:
            await STUBS[service](channel).Search(request, timeout=30)
    assert excinfo.value.code() == grpc.StatusCode.NOT_FOUND
    assert "corpus 'no-such-corpus' not found" in (excinfo.value.details() or "")


async def test_graph_answers_structure_questions(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress
) -> None:
    methods = symbols(await search(stack, "graph", "methods of class Cart"))
    own = [s for s in methods if s.startswith("shop.cart.Cart.")]
    # the methods first; the class itself (the seed) after them
    assert own and methods[: len(own)] == own
    assert "shop.cart.Cart" in methods[len(own) :]


async def test_a_structural_answer_holds_no_module_head(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress
) -> None:
    """cart.py's first lines import compute_discount: a match for the name, no answer to who calls it."""

    def heads(matches: list[common_pb2.ChunkMatch]) -> list[str]:
        return [m.file_path for m in matches if m.kind == "module" and m.start_line == 1]

    assert "shop/cart.py" in heads(await search(stack, "fusion", "compute_discount", top_k=20))
    callers = await search(stack, "fusion", "who calls compute_discount", top_k=20)
    assert heads(callers) == []
    assert "shop.cart.Cart.total_price" in symbols(callers)
