"""What the integration and end-to-end tests share over the session's stores and services (the
`config`, `stack` and `sample_corpus` fixtures of tests/conftest.py): the running stack, the sample
corpus, and helpers that write to the stores or call the services."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path

import grpc
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from services.bridge.service import BridgeServer, start_bridge
from tests import FIXTURES
from tribrid.config import AuthConfig, TokenConfig, TriBridConfig
from tribrid.graphstore.base import graph_key
from tribrid.legs import BY_NAME
from tribrid.models import Entity, Relation
from tribrid.resources import Resources
from tribrid.server import RunningServer
from tribrid.v1 import common_pb2, fusion_options_pb2, indexer_pb2, indexer_pb2_grpc
from tribridctl.compose import ALL_SERVICES, _with_leg_addresses, start_services

FIXTURE_REPO = FIXTURES / "sample_repo"
SAMPLE_CORPUS = "sample-shop"


@dataclass
class Stack:
    """All five services running in this test process on ephemeral ports, over the real stores."""

    cfg: TriBridConfig
    resources: Resources
    servers: dict[str, RunningServer]

    def channel(self, service: str) -> grpc.aio.Channel:
        return grpc.aio.insecure_channel(f"127.0.0.1:{self.servers[service].port}")


@dataclass(frozen=True)
class StoredChunk:
    chunk_id: str
    file_path: str
    language: str
    symbol: str
    content: str


async def store_committed_chunks(
    stack: Stack, corpus_id: str, generation: int, chunks: Sequence[StoredChunk]
) -> None:
    """A committed corpus at `generation` holding these chunk rows (no postings, a dummy vector),
    written straight into PostgreSQL for tests of what reads them."""
    pool = await stack.resources.pool()
    dim = stack.cfg.embedding.dim
    await pool.execute(
        "INSERT INTO corpora (corpus_id, root_path, embedding_model, embedding_dim, generation)"
        " VALUES ($1, '/nowhere', 'none', $2, $3)",
        corpus_id,
        dim,
        generation,
    )
    await pool.executemany(
        "INSERT INTO chunks (corpus_id, chunk_id, generation, file_path, start_line, end_line, language,"
        " kind, symbol, content, embedding, tsv, term_count)"
        " VALUES ($1, $2, $3, $4, 1, 5, $5, 'function', $6, $7,"
        " array_fill(0.1, ARRAY[$8::int])::real[]::vector, to_tsvector('simple', $7), 1)",
        [
            (corpus_id, c.chunk_id, generation, c.file_path, c.language, c.symbol, c.content, dim)
            for c in chunks
        ],
    )


@asynccontextmanager
async def committed_graph(
    stack: Stack,
    corpus_id: str,
    generation: int,
    chunks: Sequence[StoredChunk],
    entities: Sequence[Entity],
    relations: Sequence[Relation],
) -> AsyncIterator[str]:
    """A committed corpus (store_committed_chunks) and the graph of that generation; both are
    removed on leaving."""
    await store_committed_chunks(stack, corpus_id, generation, chunks)
    store = stack.resources.graph()
    key = graph_key(corpus_id, generation)
    await store.ensure_schema(key)
    await store.upsert_entities(key, entities)
    await store.upsert_relations(key, relations)
    try:
        yield corpus_id
    finally:
        await store.delete_corpus(key)
        await (await stack.resources.pool()).execute("DELETE FROM corpora WHERE corpus_id = $1", corpus_id)


async def index_corpus(stack: Stack, corpus_id: str, path: Path | str) -> indexer_pb2.IndexProgress:
    last = indexer_pb2.IndexProgress()
    async with stack.channel("indexer") as channel:
        stub = indexer_pb2_grpc.IndexerStub(channel)
        async for event in stub.IndexCorpus(
            indexer_pb2.IndexCorpusRequest(corpus_id=corpus_id, path=str(path))
        ):
            last = event
    return last


def fusion_options(
    *,
    enabled: dict[str, bool] | None = None,
    weights: dict[str, float] | None = None,
    method: str = "",
    normalization: str = "",
    **fields: object,
) -> common_pb2.SearchOptions:
    """SearchOptions with these FusionOptions: legs by name, enums by their config spelling."""
    options = fusion_options_pb2.FusionOptions(**fields)  # type: ignore[arg-type]
    if method:
        options.method = fusion_options_pb2.FusionMethod.Value(f"FUSION_METHOD_{method.upper()}")
    if normalization:
        options.normalization = fusion_options_pb2.Normalization.Value(
            f"NORMALIZATION_{normalization.upper()}"
        )
    for leg in sorted(set(enabled or {}) | set(weights or {})):
        setting = options.legs.add(leg=BY_NAME[leg].value)
        if enabled and leg in enabled:
            setting.enabled = enabled[leg]
        if weights and leg in weights:
            setting.weight = weights[leg]
    return common_pb2.SearchOptions(fusion=options)


@contextmanager
def collected_spans() -> Iterator[InMemorySpanExporter]:
    """Every span finished meanwhile, in memory. The services' tracers are proxies until a provider
    is set: they pick this one up."""
    exporter = InMemorySpanExporter()
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    processor = SimpleSpanProcessor(exporter)
    provider.add_span_processor(processor)
    try:
        yield exporter
    finally:
        processor.shutdown()  # stop collecting
        exporter.clear()


@dataclass
class BridgedStack:
    cfg: TriBridConfig
    servers: dict[str, RunningServer]
    bridge: BridgeServer

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.bridge.port}"


@asynccontextmanager
async def bridged_stack(config: TriBridConfig, tokens: list[TokenConfig]) -> AsyncIterator[BridgedStack]:
    """Every service and the HTTP bridge in this process, with bearer tokens on (these), on free
    ports over the session's stores; stopped and closed on the way out."""
    ports = {f"{name}_port": 0 for name in ("fusion", "vector", "sparse", "graph", "indexer")}
    cfg = config.model_copy(
        update={
            "auth": AuthConfig(enabled=True, tokens=tokens),
            "services": config.services.model_copy(update=ports),
        }
    )
    resources = Resources(cfg)
    servers = await start_services(cfg, ALL_SERVICES, resources)
    bridge = await start_bridge(_with_leg_addresses(cfg, servers), "127.0.0.1", 0)
    try:
        yield BridgedStack(cfg, {str(n): s for n, s in servers.items()}, bridge)
    finally:
        await bridge.stop(0)
        for server in servers.values():
            await server.stop(0)
        await resources.close()
