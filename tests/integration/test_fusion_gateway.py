"""Fusion explain data and the gateway's post-fusion stages through the gateway on the real stack,
and graph expansion against a stand-in ExpandContext and the real graph."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import grpc
import pytest

from services.fusion.gateway import Gateway, LegClient
from tests.stack import SAMPLE_CORPUS, Stack, fusion_options, index_corpus
from tribrid.legs import BY_NAME
from tribrid.options import spelling
from tribrid.server import RunningServer, ServiceSpec, start_server
from tribrid.v1 import (
    common_pb2,
    fusion_options_pb2,
    fusion_pb2,
    fusion_pb2_grpc,
    graph_pb2,
    graph_pb2_grpc,
    indexer_pb2,
    legs_pb2,
)
from tribrid.v1.fusion_options_pb2 import FusionMethod

# --- through the gateway, on the real stack ----------------------------------------------------------


async def fused_search(stack: Stack, request: common_pb2.SearchRequest) -> fusion_pb2.FusionSearchResponse:
    async with stack.channel("fusion") as channel:
        reply: fusion_pb2.FusionSearchResponse = await fusion_pb2_grpc.FusionStub(channel).Search(
            request, timeout=30
        )
        return reply


async def test_explain_carries_rank_raw_normalized_contribution(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress
) -> None:
    for method, normalization in (("rrf", "min_max"), ("weighted", "min_max"), ("weighted", "z_score")):
        options = fusion_options(method=method, normalization=normalization)
        reply = await fused_search(
            stack,
            common_pb2.SearchRequest(corpus_id=SAMPLE_CORPUS, query="cart total price", options=options),
        )
        assert spelling(FusionMethod.DESCRIPTOR, reply.fusion_method) == method
        assert reply.matches
        answered = {r.leg for r in reply.legs if r.status == fusion_pb2.LEG_STATUS_OK}
        assert answered
        scores = [m.score for m in reply.matches]
        assert scores == sorted(scores, reverse=True)
        assert len({m.chunk_id for m in reply.matches}) == len(reply.matches)  # deduplicated
        for match in reply.matches:
            assert {e.leg for e in match.explain} == answered  # every answering leg, present or not
            assert sum(e.contribution for e in match.explain) + match.document_context == pytest.approx(
                match.score
            )
            for e in match.explain:
                if e.rank == 0:
                    assert e.contribution == 0 and e.raw_score == 0
            present = [e for e in match.explain if e.rank]
            assert present and match.leg == min(present, key=lambda e: (e.rank, e.leg)).leg
            assert not match.expanded


async def test_options_renormalize_weights_and_disable_legs(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress
) -> None:
    options = fusion_options(
        enabled={"graph": False}, weights={"vector": 3, "sparse": 1, "graph": 50}, method="rrf"
    )
    reply = await fused_search(
        stack,
        common_pb2.SearchRequest(corpus_id=SAMPLE_CORPUS, query="validate_card_number", options=options),
    )
    status = {r.leg: r.status for r in reply.legs}
    assert status[legs_pb2.LEG_GRAPH] == fusion_pb2.LEG_STATUS_DISABLED
    answered = {leg for leg, st in status.items() if st == fusion_pb2.LEG_STATUS_OK}
    assert reply.partial == (len(answered) < 2)  # a disabled leg is not a missing answer
    raw = {legs_pb2.LEG_VECTOR: 3.0, legs_pb2.LEG_SPARSE: 1.0}
    weights = {leg: w / sum(raw[a] for a in answered) for leg, w in raw.items() if leg in answered}
    for match in reply.matches:
        terms = {e.leg: e for e in match.explain}
        assert set(terms) == answered
        expected = sum(weights[leg] / (60 + e.rank) for leg, e in terms.items() if e.rank)
        assert match.score == pytest.approx(expected)


async def test_max_chunks_per_file_and_final_k(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress
) -> None:
    request = common_pb2.SearchRequest(corpus_id=SAMPLE_CORPUS, query="cart price discount payment", top_k=8)
    uncapped = await fused_search(stack, request)
    assert len(uncapped.matches) <= 8
    request.options.fusion.max_chunks_per_file = 1
    capped = await fused_search(stack, request)
    files = [m.file_path for m in capped.matches]
    assert len(files) == len(set(files))
    # the cap keeps fused order: the capped list is the first chunk of each file, in order
    first_per_file: dict[str, str] = {}
    for m in uncapped.matches:
        first_per_file.setdefault(m.file_path, m.chunk_id)
    assert [m.chunk_id for m in capped.matches][: len(first_per_file)][:2] == list(first_per_file.values())[
        :2
    ]
    default_k = await fused_search(stack, common_pb2.SearchRequest(corpus_id=SAMPLE_CORPUS, query="cart"))
    assert len(default_k.matches) <= stack.cfg.fusion.final_k


# Two documents of three sections each (each section is a chunk of its own): the first is about
# backups throughout, the second names them once.
CONTEXT_DOCUMENTS = {
    "backups.md": """# Backups

## Schedule

The backup agent runs every night at two o'clock. Each run copies the changed blocks of every
volume to the backup target, checks the copy against its checksum, and records a catalogue entry
with the volume, the time and the size of the copy, so that an operator can find it again later.

## Restoring a volume

To restore a volume, pick a catalogue entry and restore it to a new volume. The agent reads the
blocks from the backup target, verifies them, and writes them in order. A restore never touches
the original volume, so a failed restore can simply be started again from the same entry.

## Retention

Old catalogue entries expire after thirty days. The agent deletes the blocks that no remaining
entry refers to, and keeps the weekly copies of each volume for a year. Operators can pin an entry
so that it never expires, for example before an upgrade of the database that uses the volume.
""",
    "kitchen.md": """# Kitchen notes

## Bread

Mix flour, water, salt and yeast, then knead the dough for ten minutes until it is smooth. Let it
rise in a warm place for an hour, shape it into a loaf, and bake it in a hot oven for forty minutes
until the crust is brown and the loaf sounds hollow when you tap the bottom of it.

## Soup

Chop onions, carrots and celery, and soften them in butter over a low heat. Add stock and simmer
for half an hour. Season with salt and pepper, blend until smooth, and serve the soup hot with a
slice of fresh bread and a spoon of cream on top of each bowl for the guests at the table.

## Storage

Keep a backup jar of stock in the freezer: a frozen volume of stock keeps for months. Label each
jar with the date, and use the oldest jar first so that nothing in the freezer goes to waste when
the kitchen is busy and there is no time to cook a fresh pot of stock for the evening meal.
""",
}


async def test_a_passage_gains_a_share_of_its_documents_best_other_passage(
    stack: Stack, tmp_path: Path
) -> None:
    """With `document_context` at 0.5, each prose match gains half the fused score (before the
    context) of the best other match of its file; at 0 nothing is added. The corpus is small enough
    that every candidate is in the answer, so the other passages' scores can be read off it."""
    for name, text in CONTEXT_DOCUMENTS.items():
        (tmp_path / name).write_text(text)
    done = await index_corpus(stack, "doc-context", tmp_path)
    assert done.done and done.chunks_total == 6
    query, share = "restore a volume from its backup", 0.5
    replies = {}
    for value in (0.0, share):
        request = common_pb2.SearchRequest(corpus_id="doc-context", query=query, top_k=100)
        request.options.fusion.document_context = value
        replies[value] = await fused_search(stack, request)
    plain = {m.chunk_id: m for m in replies[0.0].matches}
    assert all(m.document_context == 0 for m in plain.values())
    assert all(sum(e.contribution for e in m.explain) == pytest.approx(m.score) for m in plain.values())
    gained = replies[share].matches
    assert {m.chunk_id for m in gained} == set(plain)
    assert [m.score for m in gained] == sorted((m.score for m in gained), reverse=True)
    for match in gained:
        others = [
            o.score for o in plain.values() if o.file_path == match.file_path and o.chunk_id != match.chunk_id
        ]
        expected = share * max(max(others), 0.0) if others else 0.0
        assert match.document_context == pytest.approx(expected)
        assert match.score == pytest.approx(plain[match.chunk_id].score + expected)
    # the backup document's sections lead: each has another section that answers well
    assert [m.file_path for m in gained[:3]] == ["backups.md"] * 3
    # the option is bounded like every other
    request = common_pb2.SearchRequest(corpus_id="doc-context", query=query)
    request.options.fusion.document_context = 1.5
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await fused_search(stack, request)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "options.fusion.document_context" in (err.value.details() or "")


# --- graph expansion ----------------------------------------------------------------------------------


class FakeExpander(graph_pb2_grpc.GraphSearchServicer):
    """Stands in for GraphSearch/ExpandContext: returns fixed neighbours (one already fused)."""

    def __init__(self, neighbours: list[common_pb2.ChunkMatch], delay_s: float = 0.0) -> None:
        self.neighbours = neighbours
        self.delay_s = delay_s
        self.requests: list[graph_pb2.ExpandContextRequest] = []

    async def ExpandContext(
        self,
        request: graph_pb2.ExpandContextRequest,
        context: grpc.aio.ServicerContext[graph_pb2.ExpandContextRequest, common_pb2.SearchResponse],
    ) -> common_pb2.SearchResponse:
        self.requests.append(request)
        await asyncio.sleep(self.delay_s)
        return common_pb2.SearchResponse(matches=self.neighbours)


@pytest.fixture
async def expander_server() -> AsyncIterator[tuple[FakeExpander, RunningServer]]:
    fake = FakeExpander([])  # type: ignore[abstract]  # only ExpandContext is served
    spec = ServiceSpec(
        "tribrid.v1.GraphSearch", lambda s: graph_pb2_grpc.add_GraphSearchServicer_to_server(fake, s)
    )
    server = await start_server([spec], "127.0.0.1", 0)
    yield fake, server
    await server.stop(0)


def gateway_with_graph(stack: Stack, graph_port: int, pool: asyncpg.Pool) -> Gateway:
    """Real vector and sparse legs; `graph` (leg search and ExpandContext) at graph_port."""
    ports = {
        "vector": stack.servers["vector"].port,
        "sparse": stack.servers["sparse"].port,
        "graph": graph_port,
    }
    legs = {leg: LegClient(BY_NAME[leg], f"127.0.0.1:{port}") for leg, port in ports.items()}
    return Gateway(stack.cfg.fusion, stack.cfg.limits, legs, pool)


async def test_expansion_scores_the_neighbours_by_the_hybrid(
    stack: Stack,
    sample_corpus: indexer_pb2.IndexProgress,
    expander_server: tuple[FakeExpander, RunningServer],
) -> None:
    fake, server = expander_server
    gateway = gateway_with_graph(stack, server.port, await stack.resources.pool())
    base = common_pb2.SearchRequest(
        corpus_id=SAMPLE_CORPUS,
        query="validate_card_number",
        top_k=3,
        options=fusion_options(enabled={"graph": False}),
    )
    plain = await gateway.search(base, remaining_s=10)
    fused_ids = {m.chunk_id for m in plain.matches}
    others = await fused_search(
        stack, common_pb2.SearchRequest(corpus_id=SAMPLE_CORPUS, query="cart", top_k=20)
    )
    n1, n2, n3 = [m for m in others.matches if m.chunk_id not in fused_ids][:3]
    first, second = plain.matches[0].chunk_id, plain.matches[1].chunk_id

    def reached(match: common_pb2.ChunkMatch, score: float, seed: str, hops: int) -> common_pb2.ChunkMatch:
        """A document answer: seed_entity is the fused chunk the walk started from."""
        provenance = common_pb2.GraphProvenance(
            seed_entity=seed,
            path=[seed, *(f"entity-{i}" for i in range(1, hops)), match.chunk_id],
            relationship_types=["SIMILAR_TO"] if hops == 1 else ["MENTIONS", "RELATED_TO", "MENTIONS"][:hops],
            hops=hops,
            edges=[common_pb2.EdgeProperties(similarity=score)],
            graph_score=score,
        )
        explain = common_pb2.LegExplain(leg=legs_pb2.LEG_GRAPH, detail=f"from={seed}", graph=provenance)
        return common_pb2.ChunkMatch(
            chunk_id=match.chunk_id,
            corpus_id=SAMPLE_CORPUS,
            file_path=match.file_path,
            score=score,
            explain=[explain],
        )

    fake.neighbours = [
        reached(n1, 0.9, second, 1),
        reached(plain.matches[2], 1.0, first, 1),  # already fused: skipped
        reached(n2, 0.6, first, 2),
        reached(n3, 0.0, "not-a-fused-chunk", 1),  # 0.7 x the lowest expanded chunk score: kept
    ]
    request = common_pb2.SearchRequest()
    request.CopyFrom(base)
    request.options.fusion.enable_expansion = True
    request.options.fusion.expansion_top_n = 2
    request.options.fusion.expansion_max_hops = 2
    reply = await gateway.search(request, remaining_s=10)
    await gateway.close()

    assert list(fake.requests[-1].chunk_ids) == [first, second]
    assert fake.requests[-1].max_hops == 2
    fused, expanded = reply.matches[:3], reply.matches[3:]
    assert [m.chunk_id for m in fused] == [m.chunk_id for m in plain.matches]
    top, chunk2, last = fused[0].score, fused[1].score / fused[0].score, fused[2].score
    hybrid = {
        n1.chunk_id: 0.7 * chunk2 + 0.3 * 0.9,
        n2.chunk_id: 0.7 * 1.0 + 0.3 * 0.6,
        n3.chunk_id: 0.7 * chunk2,
    }
    order = sorted(hybrid, key=lambda cid: (-hybrid[cid], cid))
    assert [m.chunk_id for m in expanded] == order
    assert [m.content for m in expanded] == [  # read once, by the gateway
        {n.chunk_id: n.content for n in (n1, n2, n3)}[cid] for cid in order
    ]
    for m in expanded:
        assert m.expanded and m.leg == legs_pb2.LEG_EXPANSION
        assert m.score == pytest.approx(hybrid[m.chunk_id] * last) and m.score <= last <= top
        (explain,) = m.explain
        assert explain.leg == legs_pb2.LEG_EXPANSION and explain.contribution == pytest.approx(
            hybrid[m.chunk_id]
        )
    by_id = {m.chunk_id: m for m in expanded}
    assert by_id[n2.chunk_id].expansion_hops == 2 and by_id[n1.chunk_id].expansion_hops == 1
    deep = by_id[n2.chunk_id].explain[0]
    assert (deep.source, deep.normalized_score) == (first, 1.0) and deep.raw_score == pytest.approx(0.6)
    assert list(deep.graph.relationship_types) == ["MENTIONS", "RELATED_TO"]
    assert deep.graph.graph_score == pytest.approx(0.6) and deep.detail == f"from={first}"
    assert by_id[n1.chunk_id].explain[0].graph.edges[0].similarity == pytest.approx(0.9)
    assert by_id[n3.chunk_id].explain[0].source == second  # no fused chunk named: the lower one
    report = next(r for r in reply.legs if r.leg == legs_pb2.LEG_EXPANSION)
    assert report.status == fusion_pb2.LEG_STATUS_OK and report.hits == 3
    # expansion is not a leg: partial only reflects the legs (here: whether sparse answered)
    sparse = next(r for r in reply.legs if r.leg == legs_pb2.LEG_SPARSE)
    assert reply.partial == (sparse.status != fusion_pb2.LEG_STATUS_OK)

    # min_score above n3's hybrid, at most one, interleaved: n2 by hybrid x the top fused score
    request.options.fusion.expansion_min_score = 0.7 * chunk2 + 0.01
    request.options.fusion.expansion_max_chunks = 1
    request.options.fusion.expansion_placement = fusion_options_pb2.EXPANSION_PLACEMENT_INTERLEAVE
    gateway = gateway_with_graph(stack, server.port, await stack.resources.pool())
    interleaved = await gateway.search(request, remaining_s=10)
    await gateway.close()
    (one,) = [m for m in interleaved.matches if m.expanded]
    assert one.chunk_id == order[0] and one.score == pytest.approx(hybrid[order[0]] * top)
    scores = [m.score for m in interleaved.matches]
    assert scores == sorted(scores, reverse=True)


async def test_expansion_skipped_when_deadline_is_short(
    stack: Stack,
    sample_corpus: indexer_pb2.IndexProgress,
    expander_server: tuple[FakeExpander, RunningServer],
) -> None:
    fake, server = expander_server
    gateway = gateway_with_graph(stack, server.port, await stack.resources.pool())
    request = common_pb2.SearchRequest(
        corpus_id=SAMPLE_CORPUS,
        query="cart",
        options=fusion_options(enabled={"graph": False}, enable_expansion=True),
    )
    budget_s = stack.cfg.fusion.expansion_timeout_ms / 1000
    # the legs get the whole deadline minus the merge reserve; what is left is below the expansion budget
    reply = await gateway.search(request, remaining_s=budget_s * 0.9)
    await gateway.close()
    report = next(r for r in reply.legs if r.leg == legs_pb2.LEG_EXPANSION)
    assert report.status == fusion_pb2.LEG_STATUS_TIMEOUT and "skipped" in report.error
    assert not fake.requests
    assert reply.matches and not any(m.expanded for m in reply.matches)


async def test_expansion_against_the_real_graph_and_a_slow_expander(
    stack: Stack,
    sample_corpus: indexer_pb2.IndexProgress,
    expander_server: tuple[FakeExpander, RunningServer],
) -> None:
    # against the real graph service: neighbours of the top chunks come after the fused ones,
    # marked expanded, never repeating a fused chunk
    reply = await fused_search(
        stack,
        common_pb2.SearchRequest(
            corpus_id=SAMPLE_CORPUS,
            query="validate_card_number",
            top_k=2,  # the sample repo is small: room for neighbours outside the fused list
            options=fusion_options(enable_expansion=True, expansion_top_n=1),
        ),
    )
    report = next(r for r in reply.legs if r.leg == legs_pb2.LEG_EXPANSION)
    assert reply.matches[0].symbol == "shop.payment.validate_card_number"
    assert report.status == fusion_pb2.LEG_STATUS_OK, report.error
    fused_ids = [m.chunk_id for m in reply.matches if not m.expanded]
    expanded = [m for m in reply.matches if m.expanded]
    assert expanded and report.hits == len(expanded)
    assert all(m.chunk_id not in fused_ids for m in expanded)
    assert [m.expanded for m in reply.matches] == sorted(m.expanded for m in reply.matches)  # appended
    assert max(m.score for m in expanded) <= min(m.score for m in reply.matches if not m.expanded)
    for m in expanded:
        assert m.explain[0].source == reply.matches[0].chunk_id  # the one expanded chunk
        assert m.expansion_hops == m.explain[0].graph.hops == 1
    # a slow expander is cut at the expansion budget, not the caller's deadline
    fake, server = expander_server
    fake.delay_s = 5
    gateway = gateway_with_graph(stack, server.port, await stack.resources.pool())
    request = common_pb2.SearchRequest(
        corpus_id=SAMPLE_CORPUS,
        query="cart",
        options=fusion_options(enabled={"graph": False}, enable_expansion=True),
    )
    slow = await gateway.search(request, remaining_s=10)
    await gateway.close()
    report = next(r for r in slow.legs if r.leg == legs_pb2.LEG_EXPANSION)
    assert report.status == fusion_pb2.LEG_STATUS_TIMEOUT
    assert report.latency_ms < stack.cfg.fusion.expansion_timeout_ms + 1000
    assert slow.matches
