"""One fused search yields one connected trace: the gateway's server span is an ancestor of every leg's."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.instrumentation.asyncpg import AsyncPGInstrumentor
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.stack import SAMPLE_CORPUS, Stack, collected_spans
from tribrid import telemetry
from tribrid.v1 import common_pb2, fusion_pb2, fusion_pb2_grpc, indexer_pb2, legs_pb2


@pytest.fixture(scope="module")
def spans() -> Iterator[InMemorySpanExporter]:
    with collected_spans() as exporter:
        yield exporter
    AsyncPGInstrumentor().uninstrument()  # type: ignore[no-untyped-call]


def _server_span(spans: list[ReadableSpan], method: str) -> list[ReadableSpan]:
    return [s for s in spans if s.kind == trace.SpanKind.SERVER and s.name == method]


async def test_fused_search_is_one_connected_trace(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress, spans: InMemorySpanExporter
) -> None:
    telemetry.instrument_asyncpg()
    spans.clear()
    async with stack.channel("fusion") as channel:
        reply = await fusion_pb2_grpc.FusionStub(channel).Search(
            # a filter: the vector and sparse legs answer it in PostgreSQL (unfiltered, a small
            # corpus may be answered from their memory, with no database span)
            common_pb2.SearchRequest(
                corpus_id=SAMPLE_CORPUS,
                query="validate_card_number",
                filters=common_pb2.SearchFilters(languages=["python"]),
            ),
            timeout=30,
        )
    assert reply.matches
    finished = list(spans.get_finished_spans())
    (gateway,) = _server_span(finished, "/tribrid.v1.Fusion/Search")
    assert gateway.context is not None
    by_id = {s.context.span_id: s for s in finished if s.context is not None}

    def ancestors(span: ReadableSpan) -> list[int]:
        chain = []
        while span.parent is not None and span.parent.span_id in by_id:
            chain.append(span.parent.span_id)
            span = by_id[span.parent.span_id]
        return chain

    legs = {
        "vector": "/tribrid.v1.VectorSearch/Search",
        "sparse": "/tribrid.v1.SparseSearch/Search",
        "graph": "/tribrid.v1.GraphSearch/Search",
    }
    for leg, method in legs.items():
        (leg_server,) = _server_span(finished, method)
        assert leg_server.context is not None
        assert leg_server.context.trace_id == gateway.context.trace_id, leg
        assert gateway.context.span_id in ancestors(leg_server), leg
        # the gateway's hand-made leg span sits between them and carries the leg's attributes
        (leg_span,) = [s for s in finished if s.name == f"leg.{leg}"]
        assert leg_span.context is not None and leg_span.context.span_id in ancestors(leg_server)
        attrs = dict(leg_span.attributes or {})
        assert attrs["tribrid.leg"] == leg and attrs["tribrid.corpus"] == SAMPLE_CORPUS
        assert "tribrid.timeout_ms" in attrs and "tribrid.status" in attrs and "tribrid.hits" in attrs
        report = next(r for r in reply.legs if r.leg == legs_pb2.Leg.Value(f"LEG_{leg.upper()}"))
        names = {fusion_pb2.LEG_STATUS_OK: "ok", fusion_pb2.LEG_STATUS_TIMEOUT: "timeout"}
        assert attrs["tribrid.status"] == names.get(report.status, "error")
        if leg != "graph" and report.status == fusion_pb2.LEG_STATUS_OK:  # its SQL: database spans
            db = [s for s in finished if (s.attributes or {}).get("db.system") == "postgresql"]
            assert any(leg_server.context.span_id in ancestors(s) for s in db)
    (search_span,) = [s for s in finished if s.name == "fusion.search"]
    assert dict(search_span.attributes or {})["tribrid.hits"] == len(reply.matches)


async def test_graph_store_calls_get_database_spans(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress, spans: InMemorySpanExporter
) -> None:
    spans.clear()
    await stack.resources.graph().counts("c0")
    with telemetry.graph_span("custom", "c1", hits=3):
        pass
    names = {s.name: s for s in spans.get_finished_spans()}
    assert names["graphstore.counts"].kind == trace.SpanKind.CLIENT
    assert dict(names["graphstore.custom"].attributes or {})["tribrid.corpus"] == "c1"
