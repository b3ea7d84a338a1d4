"""Indexer gRPC servicer: IndexCorpus and ImportGraph (stream progress), DeleteCorpus, ListCorpora."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import asyncpg
import grpc

from services.indexer.graph_import import GraphImportError, ImportedGraph, read_csv, read_jsonl
from services.indexer.graph_writer import discard_uncommitted, drop_generation
from services.indexer.pg_writer import CorpusBusy, committed_root, delete_corpus
from services.indexer.pipeline import GraphImport, IndexPipeline
from tribrid import auth
from tribrid.config import TriBridConfig
from tribrid.embedding import Embedder
from tribrid.graphstore import GraphStore
from tribrid.options import RequestError, invalid
from tribrid.resources import Resources
from tribrid.search_common import validate_corpus_id
from tribrid.server import ServiceSpec, freeze_long_lived_objects
from tribrid.stores.postgres import corpus_generation, index_every_corpus_vectors, list_corpora
from tribrid.v1 import indexer_pb2, indexer_pb2_grpc

log = logging.getLogger(__name__)


class IndexerServicer(indexer_pb2_grpc.IndexerServicer):
    def __init__(self, cfg: TriBridConfig, pool: asyncpg.Pool, graph: GraphStore, embedder: Embedder) -> None:
        self._cfg = cfg
        self._pool = pool
        self._graph = graph
        self._pipeline = IndexPipeline(cfg, pool, graph, embedder)

    async def warm_up(self) -> list[str]:
        """Build the own HNSW index of each corpus that should have one and has none (indexed
        before there were such indexes), in the background: a migration would hold a start for
        as long as building them takes, about a minute per 100k chunks. Searches use the shared
        index meanwhile. The corpora it indexed."""
        built = await index_every_corpus_vectors(self._pool, self._cfg.vector)
        if built:
            log.info("vector indexes of their own built", extra={"corpora": built})
        return built

    async def IndexCorpus(
        self,
        request: indexer_pb2.IndexCorpusRequest,
        context: grpc.aio.ServicerContext[indexer_pb2.IndexCorpusRequest, indexer_pb2.IndexProgress],
    ) -> AsyncIterator[indexer_pb2.IndexProgress]:
        try:
            async for event in self._pipeline.run(request.corpus_id, request.path):
                yield event
        finally:
            # The run's kept parses live on (indexer.keep_parses): out of the collector's passes.
            freeze_long_lived_objects()

    async def ImportGraph(
        self,
        request: indexer_pb2.ImportGraphRequest,
        context: grpc.aio.ServicerContext[indexer_pb2.ImportGraphRequest, indexer_pb2.IndexProgress],
    ) -> AsyncIterator[indexer_pb2.IndexProgress]:
        validate_corpus_id(request.corpus_id)
        root = await committed_root(self._pool, request.corpus_id)
        if root is None:
            raise RequestError(
                grpc.StatusCode.NOT_FOUND,
                f"corpus {request.corpus_id!r} not found: index its documents (IndexCorpus)"
                " before importing a graph",
            )
        graph = await asyncio.to_thread(read_graph, request)
        async for event in self._pipeline.run(
            request.corpus_id, root, GraphImport(graph, request.source or "import")
        ):
            yield event

    async def DeleteCorpus(
        self,
        request: indexer_pb2.DeleteCorpusRequest,
        context: grpc.aio.ServicerContext[indexer_pb2.DeleteCorpusRequest, indexer_pb2.DeleteCorpusResponse],
    ) -> indexer_pb2.DeleteCorpusResponse:
        validate_corpus_id(request.corpus_id)
        generation = await corpus_generation(self._pool, request.corpus_id)
        try:
            deleted = await delete_corpus(self._pool, request.corpus_id)
        except CorpusBusy as busy:
            raise RequestError(grpc.StatusCode.FAILED_PRECONDITION, str(busy)) from None
        if generation is not None:  # PostgreSQL went first: searches no longer see the corpus
            await discard_uncommitted(self._graph, request.corpus_id, generation)
            await drop_generation(self._graph, request.corpus_id, generation)
        self._pipeline.forget(request.corpus_id)
        return indexer_pb2.DeleteCorpusResponse(deleted=deleted is not None, chunks_deleted=deleted or 0)

    async def ListCorpora(
        self,
        request: indexer_pb2.ListCorporaRequest,
        context: grpc.aio.ServicerContext[indexer_pb2.ListCorporaRequest, indexer_pb2.ListCorporaResponse],
    ) -> indexer_pb2.ListCorporaResponse:
        return indexer_pb2.ListCorporaResponse(
            corpora=[
                indexer_pb2.CorpusInfo(
                    corpus_id=c["corpus_id"],
                    root_path=c["root_path"],
                    files=c["files"],
                    chunks=c["chunk_count"],
                    generation=c["generation"],
                    updated_at=c["updated_at"].isoformat(),
                    embedding_model=c["embedding_model"],
                )
                for c in await list_corpora(self._pool)
                if auth.may_see(c["corpus_id"])  # a token lists only its own corpora
            ]
        )


# ImportGraph's request holds the whole file: a 10k-node, 30k-edge graph is about 5 MB of JSON Lines.
MAX_IMPORT_BYTES = 64 * 1024 * 1024


def read_graph(request: indexer_pb2.ImportGraphRequest) -> ImportedGraph:
    """The request's graph, validated; INVALID_ARGUMENT names the field, the line and what is wrong."""
    csv = request.format == indexer_pb2.GRAPH_FORMAT_CSV
    if not request.content.strip():
        raise invalid("content: empty; a graph needs at least one node")
    if request.edges and not csv:
        raise invalid("edges: only for format GRAPH_FORMAT_CSV (JSON Lines holds nodes and edges in content)")
    try:
        if csv:
            return read_csv(request.content, request.edges)
        return read_jsonl(request.content)
    except GraphImportError as err:
        raise invalid(f"{'' if csv else 'content '}{err}") from None


async def build(res: Resources) -> ServiceSpec:
    embedder = await asyncio.to_thread(res.embedder)
    servicer = IndexerServicer(res.cfg, await res.pool(), res.graph(), embedder)
    return ServiceSpec(
        full_name=indexer_pb2.DESCRIPTOR.services_by_name["Indexer"].full_name,
        register=lambda server: indexer_pb2_grpc.add_IndexerServicer_to_server(servicer, server),
        max_request_bytes=MAX_IMPORT_BYTES,
        warm_up=servicer.warm_up,
    )
