"""One index run: walk -> diff by content hash -> chunk + extract -> embed changed -> write both stores.

Consistency: each run builds the next index generation. Its chunk rows go into PostgreSQL as
generation G+1, hidden from searches, and the graph of G+1 is written under its own key beside G;
one PostgreSQL transaction then deletes the rows the changed files replace and flips the corpus
to G+1. Searches read the generation PostgreSQL names, so an interrupted run leaves G searchable,
and the next run discards the half-built G+1 and redoes it. Runs of one corpus take turns, across
processes too (an advisory lock).

Throughput: three things overlap. Parsing (Python, holds the GIL) of the next files runs while
the previous batch is embedded (torch, releases it), and each embedded batch is written to
PostgreSQL (`_RowStream`) while the next ones embed. An unchanged corpus costs only the walk and
the hashes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

import asyncpg
import numpy as np

from services.indexer import graph_writer
from services.indexer.chunker import chunk_file
from services.indexer.code_mentions import code_mentions
from services.indexer.communities import detect_communities
from services.indexer.document_graph import chunk_vectors, document_chunks, document_nodes, similar_chunks
from services.indexer.entity_cache import recognize_cached
from services.indexer.graph import extract_file, resolve_corpus
from services.indexer.graph_import import ImportedGraph
from services.indexer.graph_writer import GraphChange, drop_generation, write_next_generation
from services.indexer.imported_graph import link_chunks, merge_imported
from services.indexer.named_entities import DocumentGraph, build_document_graph
from services.indexer.pg_writer import (
    ChunkVectors,
    CorpusInfo,
    FileRecord,
    RunCommit,
    commit_run,
    discard_uncommitted,
    embed_hash,
    ensure_corpus,
    load_file_hashes,
    load_graph_import,
    load_index_format,
    move_root,
    run_lock,
    store_graph_import,
    stored_vectors,
    tidy_postings,
    write_chunks,
)
from services.indexer.python_graph import FileGraph
from services.indexer.relation_extraction import Extraction, extract_relations
from services.indexer.walker import Skipped, SourceFile, walk_corpus
from tribrid.config import TriBridConfig
from tribrid.coverage import Coverage, model_coverage
from tribrid.embedding import Embedder
from tribrid.generation import GenerationClient
from tribrid.graphstore import GraphStore
from tribrid.graphstore.base import graph_key
from tribrid.models import Chunk, Entity, Relation
from tribrid.ner import EntityRecognizer
from tribrid.options import invalid
from tribrid.search_common import validate_corpus_id
from tribrid.stores.postgres import corpus_generation, index_corpus_vectors
from tribrid.v1 import indexer_pb2

log = logging.getLogger(__name__)

# How files become chunks and postings. Bump it when chunking, chunk headers or tokenizing change:
# the next run of an older corpus then redoes every file instead of mixing the two formats.
#   1: Python chunked by tree-sitter; BM25 postings leave out the chunk header's labels.
#   2: documents (Markdown, RST, HTML, PDF, DOCX, text) chunked by section with title, breadcrumb, pages.
#   3: Unicode words (case-folded, accents kept, folded forms beside them), Chinese segmented by
#      jieba, Japanese as character bigrams. Flipping sparse.fold_accents also needs a full
#      re-index: it is not part of this number.
#   4: documents chunked within 48..128 estimated tokens (was 80..224).
#   5: calling a class also calls the class, bare decorators are calls, and inferred call edges
#      (by method name, with a confidence) for calls on receivers of unknown type.
#   6: the document graph (document and chunk nodes, CONTAINS, SIMILAR_TO, named entities with
#      MENTIONS and RELATED_TO), type labels on nodes, aliases in the fulltext index.
#   7: edges inferred by class name (with a confidence): `inherits` for bases no scope resolves,
#      `calls` for instantiations `new C()` / `C(...)` of a class no scope binds.
#   8: plain text opens a chunk after two or more blank lines; documents carry their metadata;
#      Java overloads are entities of their own, and inner classes call enclosing methods;
#      a JS/TS `export default Name;` exports Name as the default.
#   9: BM25 terms are English stems of Latin-alphabet words (`tribrid.text.stem`).
#  10: definitions' signatures are embedded too (Chunk.signature, chunks.signature_embedding).
#  11: a call `x.m()` on a local whose class the code states (`x: C`, `x = C(...)`), `C(...).m()`
#      and `self.x.m()` of an attribute the class states follow C's `m` (Python); Java on-demand
#      imports (`import a.b.*;`) bring their package's types.
#  12: documentation MENTIONS the definitions its Sphinx autodoc directives name, and a form a
#      public definition shares only with private ones names the public one (code_mentions);
#      known entities are linked by their names without punctuation too ("Mme Bonacieux").
#  13: documentation MENTIONS a function by its keyword parameters (`multiple=True`), and the
#      variables autodoc's `.. autodata::` names (code_mentions).
#  14: each chunk's share of word pieces the local model reads (chunks.model_coverage).
#  15: an NER model of another language names nothing in Chinese, Japanese, Korean or Thai text
#      (tribrid.ner.ScriptFilter): the graphs of such corpora lose the whole paragraphs it labelled.
INDEX_FORMAT = 15

EMBED_BATCH = 256  # chunks per embedding call: big enough for throughput, small for progress
PARSE_BATCH = 32  # files parsed per step while the previous embedding batch runs


@dataclass(frozen=True, slots=True)
class GraphImport:
    """A validated graph to import with the next generation, and where it came from."""

    graph: ImportedGraph
    source: str


@dataclass(slots=True)
class _Counts:
    started: float = field(default_factory=time.monotonic)
    files_seen: int = 0
    files_changed: int = 0
    files_deleted: int = 0
    chunks_total: int = 0
    chunks_to_embed: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    entities: int = 0
    relationships: int = 0
    communities: int = 0
    unresolved_references: int = 0
    named_entities: int = 0
    named_entities_merged: int = 0
    imported_nodes: int = 0
    imported_edges: int = 0
    linked_mentions: int = 0
    extracted_relations: int = 0
    extraction_failures: int = 0
    generation: int = 0
    syntax_errors: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    stage_seconds: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))

    @contextmanager
    def timed(self, stage: str) -> Iterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            self.stage_seconds[stage] += time.monotonic() - started

    def event(self, phase: str, done: bool = False, message: str = "") -> indexer_pb2.IndexProgress:
        return indexer_pb2.IndexProgress(
            phase=phase,
            files_seen=self.files_seen,
            files_changed=self.files_changed,
            files_skipped=sum(self.skipped.values()),
            files_deleted=self.files_deleted,
            chunks_total=self.chunks_total,
            chunks_to_embed=self.chunks_to_embed,
            chunks_embedded=self.chunks_embedded,
            entities=self.entities,
            relationships=self.relationships,
            elapsed_s=time.monotonic() - self.started,
            done=done,
            message=message,
            skipped_by_reason=dict(self.skipped),
            generation=self.generation,
            stage_seconds=dict(self.stage_seconds),
            syntax_errors=self.syntax_errors,
            communities=self.communities,
            unresolved_references=self.unresolved_references,
            chunks_reused=self.chunks_reused,
            named_entities=self.named_entities,
            named_entities_merged=self.named_entities_merged,
            imported_nodes=self.imported_nodes,
            imported_edges=self.imported_edges,
            linked_mentions=self.linked_mentions,
            extracted_relations=self.extracted_relations,
            extraction_failures=self.extraction_failures,
        )


@dataclass(slots=True)
class _Parsed:
    """What parsing produced: chunks per file and the graph of every file (parsing is cheap)."""

    chunks_by_file: dict[str, list[Chunk]] = field(default_factory=dict)
    graphs: list[FileGraph] = field(default_factory=list)
    syntax_errors: int = 0
    failed: list[str] = field(default_factory=list)  # files our chunker or extractor choked on

    def add(self, other: _Parsed) -> None:
        self.chunks_by_file.update(other.chunks_by_file)
        self.graphs.extend(other.graphs)
        self.syntax_errors += other.syntax_errors
        self.failed.extend(other.failed)


def _walk(root: Path, cfg: TriBridConfig) -> tuple[list[SourceFile], list[Skipped]]:
    files: list[SourceFile] = []
    skipped: list[Skipped] = []
    for item in walk_corpus(root, cfg.indexer):
        if isinstance(item, SourceFile):
            files.append(item)
        else:
            skipped.append(item)
    return files, skipped


@dataclass(frozen=True, slots=True)
class _FileParse:
    """One file's parse, reusable while its content hash is the same."""

    content_hash: str
    chunks: list[Chunk]
    graph: FileGraph | None
    syntax_error: bool
    failed: bool


ParseCache = dict[str, _FileParse]  # corpus-relative path -> its last parse


def _parse(corpus_id: str, files: list[SourceFile], cfg: TriBridConfig, cache: ParseCache | None) -> _Parsed:
    """Chunks and graphs of these files; a file whose content the cache has seen is not parsed."""
    parsed = _Parsed()
    for source in files:
        kept = cache.get(source.path) if cache is not None else None
        if kept is None or kept.content_hash != source.content_hash:
            kept = _parse_file(corpus_id, source, cfg)
            if cache is not None:
                cache[source.path] = kept
        parsed.chunks_by_file[source.path] = kept.chunks
        parsed.syntax_errors += int(kept.syntax_error)
        if kept.failed:
            parsed.failed.append(source.path)
        if kept.graph is not None:
            parsed.graphs.append(kept.graph)
    return parsed


def _parse_file(corpus_id: str, source: SourceFile, cfg: TriBridConfig) -> _FileParse:
    try:
        result = chunk_file(corpus_id, source, cfg.indexer)
    except Exception:  # a bug of ours on one odd file must not abort the whole run
        log.exception("chunking %s failed; the file is skipped", source.path)
        return _FileParse(source.content_hash, [], None, False, True)
    try:
        graph = extract_file(corpus_id, source, result)
    except Exception:  # its chunks stay searchable; only its graph is missing
        log.exception("graph extraction of %s failed; its chunks are kept", source.path)
        return _FileParse(source.content_hash, result.chunks, None, result.syntax_error, True)
    return _FileParse(source.content_hash, result.chunks, graph, result.syntax_error, False)


# Unresolved references kept per entity: enough to answer "who calls requests.get", bounded so a
# generated file with thousands of external calls cannot bloat one node.
MAX_UNRESOLVED_PER_ENTITY = 64


def _graph_of(
    corpus_id: str, parsed: _Parsed, max_inferred_candidates: int
) -> tuple[list[Entity], list[Relation], int]:
    """Every entity (with its unresolved references), every relation, and the unresolved count."""
    links = resolve_corpus(corpus_id, parsed.graphs, max_inferred_candidates)
    relations = [r for g in parsed.graphs for r in g.relations] + links.relations
    unresolved: defaultdict[str, set[str]] = defaultdict(set)
    for ref in links.unresolved:
        unresolved[ref.source_id].add(ref.name)
    entities = [
        replace(e, unresolved=tuple(sorted(unresolved[e.entity_id])[:MAX_UNRESOLVED_PER_ENTITY]))
        if e.entity_id in unresolved
        else e
        for g in parsed.graphs
        for e in g.entities
    ]
    return entities, list(dict.fromkeys(relations)), sum(len(names) for names in unresolved.values())


def _batches(items: list[SourceFile], size: int) -> Iterator[list[SourceFile]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


# A batch of chunks and their vectors, on its way to PostgreSQL.
_Batch = tuple[list[Chunk], ChunkVectors]


class _RowStream:
    """Writes embedded batches to PostgreSQL one after another, behind the embedding.

    The rows are generation G+1, hidden until the run commits. The queue is bounded, so a slow
    database holds the embedding back instead of piling batches up in memory. A failed write
    fails the run at its next batch.
    """

    QUEUE_BATCHES = 4

    def __init__(
        self,
        pool: asyncpg.Pool,
        corpus_id: str,
        generation: int,
        model: str,
        counts: _Counts,
        *,
        hold: bool = False,
        fold_accents: bool = True,
        coverage: Coverage | None = None,
    ) -> None:
        self._pool = pool
        self._fold_accents = fold_accents
        self._coverage = coverage
        self._corpus_id = corpus_id
        self._generation = generation
        self._model = model
        self._counts = counts
        self._queue: asyncio.Queue[_Batch | None] = asyncio.Queue(self.QUEUE_BATCHES)
        self._error: BaseException | None = None
        self._held: list[_Batch] | None = [] if hold else None
        self._task = asyncio.create_task(self._drain())

    async def put(self, chunks: list[Chunk], vectors: ChunkVectors) -> None:
        if self._error is not None:
            raise self._error
        if self._held is not None:  # indexer.write_while_embedding off: written by finish()
            self._held.append((chunks, vectors))
            return
        await self._queue.put((chunks, vectors))

    async def finish(self) -> None:
        """Wait until every batch is written; raises the first write error."""
        for item in self._held or []:
            await self._queue.put(item)
        self._held = None
        await self._queue.put(None)
        await self._task
        if self._error is not None:
            raise self._error

    def close(self) -> None:
        """Stop writing (a run that failed or was cancelled); harmless after finish."""
        self._task.cancel()

    async def _drain(self) -> None:
        while (item := await self._queue.get()) is not None:
            if self._error is not None:
                continue  # keep taking batches, so put() never blocks on a dead writer
            try:
                # Busy time of a background writer: it overlaps embedding, not added to the run.
                with self._counts.timed("postgres_rows"):
                    await write_chunks(
                        self._pool,
                        self._corpus_id,
                        self._generation,
                        self._model,
                        *item,
                        self._fold_accents,
                        self._coverage,
                    )
            except Exception as error:  # reported by the next put() or by finish()
                self._error = error


class IndexPipeline:
    def __init__(self, cfg: TriBridConfig, pool: asyncpg.Pool, graph: GraphStore, embedder: Embedder) -> None:
        self._cfg = cfg
        self._pool = pool
        self._graph = graph
        self._embedder = embedder
        # how much of each chunk the local model reads (chunks.model_coverage; None for an endpoint)
        self._coverage = model_coverage(cfg.embedding)
        self._locks: dict[str, asyncio.Lock] = {}
        # named entities of document chunks; the model loads on first use
        self._recognizer = EntityRecognizer(cfg.entities)
        # corpus -> the last parse of each of its files (indexer.keep_parses)
        self._parses: dict[str, ParseCache] = {}
        # the model that reads relations out of chunks (entities.extract_relations)
        self._extractor = GenerationClient(cfg.generation) if cfg.entities.extract_relations else None

    def forget(self, corpus_id: str) -> None:
        """Drop what this process keeps of a corpus (after DeleteCorpus)."""
        self._parses.pop(corpus_id, None)

    async def run(
        self, corpus_id: str, path: str, graph_import: GraphImport | None = None
    ) -> AsyncIterator[indexer_pb2.IndexProgress]:
        """Index `path` as the corpus's next generation; with `graph_import`, that generation also
        brings the imported graph (and is written even when no file changed)."""
        validate_corpus_id(corpus_id)
        root = Path(path)
        if not path or not root.is_absolute():
            raise invalid(f"path {path!r} must be an absolute directory path")
        if not await asyncio.to_thread(root.is_dir):
            raise invalid(f"path {path!r} does not exist or is not a directory")
        # One run per corpus at a time, in this process and (the PostgreSQL lock) across processes.
        async with self._locks.setdefault(corpus_id, asyncio.Lock()), run_lock(self._pool, corpus_id):
            async for event in self._run(corpus_id, root, graph_import):
                yield event

    async def _run(
        self, corpus_id: str, root: Path, graph_import: GraphImport | None
    ) -> AsyncIterator[indexer_pb2.IndexProgress]:
        counts = _Counts()
        yield counts.event("walking")
        with counts.timed("walk"):
            files, skipped = await asyncio.to_thread(_walk, root, self._cfg)
            counts.files_seen = len(files) + len(skipped)
            counts.skipped.update(s.reason for s in skipped)
            committed = await corpus_generation(self._pool, corpus_id)
            old_hashes = await load_file_hashes(self._pool, corpus_id) if committed is not None else {}
            same_format = await load_index_format(self._pool, corpus_id) == INDEX_FORMAT
        base = committed or 0
        with counts.timed("postgres"):
            await discard_uncommitted(self._pool, corpus_id)
            if graph_import is not None:
                await store_graph_import(
                    self._pool, corpus_id, base + 1, graph_import.source, graph_import.graph
                )
        # Before the unchanged check: a run killed after its commit left the previous generation's
        # graph behind, and a re-run of the same tree has nothing else to do.
        with counts.timed("graph"):
            await graph_writer.discard_uncommitted(self._graph, corpus_id, base)
            # The graph store lost the committed graph (a store restored from an older snapshot,
            # or emptied): rebuild it from every file, reusing the stored vectors.
            graph_lost = committed is not None and not await graph_writer.generation_present(
                self._graph, corpus_id, committed
            )
        rebuild = not same_format or graph_lost
        changed = [f for f in files if old_hashes.get(f.path) != f.content_hash or rebuild]
        deleted = sorted(set(old_hashes) - {f.path for f in files})
        counts.files_changed, counts.files_deleted = len(changed), len(deleted)
        counts.generation = base
        if committed is not None and not changed and not deleted and graph_import is None:
            await move_root(self._pool, corpus_id, str(root))
            await self._report_unchanged(corpus_id, base, counts)
            yield counts.event("done", done=True, message="unchanged")
            return

        await ensure_corpus(
            self._pool, CorpusInfo(corpus_id, str(root), self._embedder.name, self._embedder.dim)
        )
        parsed = _Parsed()
        cache = self._parses.setdefault(corpus_id, {}) if self._cfg.indexer.keep_parses else None
        rows = _RowStream(
            self._pool,
            corpus_id,
            base + 1,
            self._embedder.name,
            counts,
            hold=not self._cfg.indexer.write_while_embedding,
            fold_accents=self._cfg.sparse.fold_accents,
            coverage=self._coverage,
        )
        try:
            # A vector is reused only for the same model, prefixes and text (its embed_hash), so
            # a new index format that leaves a chunk's text alone (a graph change) embeds nothing.
            reuse = committed is not None
            async for event in self._parse_and_embed(corpus_id, changed, parsed, rows, counts, cache, reuse):
                yield event
            with counts.timed("postgres_wait"):
                await rows.finish()
        finally:
            rows.close()
        unchanged = [f for f in files if f.path not in parsed.chunks_by_file]
        with counts.timed("parse"):
            # the other files' parses, for cross-file resolution: kept from earlier runs if we can
            parsed.add(await asyncio.to_thread(_parse, corpus_id, unchanged, self._cfg, cache))
        if cache is not None:
            for gone in set(cache) - {f.path for f in files}:
                del cache[gone]
        counts.syntax_errors = parsed.syntax_errors
        if parsed.failed:
            counts.skipped["parse_failed"] += len(parsed.failed)
        counts.chunks_total = sum(len(c) for c in parsed.chunks_by_file.values())

        yield counts.event("graph")
        with counts.timed("graph"):
            entities, relations, counts.unresolved_references = _graph_of(
                corpus_id, parsed, self._cfg.indexer.inferred_max_candidates
            )
        with counts.timed("document_graph"):
            document_entities, document_relations = await self._document_graph(
                corpus_id, base + 1, parsed, counts, entities
            )
            entities += document_entities
            relations += document_relations
        with counts.timed("graph"):
            await write_next_generation(
                self._graph,
                GraphChange(
                    corpus_id=corpus_id,
                    base_generation=base,
                    entities=entities,
                    relations=relations,
                    replaced_files=[f.path for f in changed],
                    deleted_files=deleted,
                    rebuild=rebuild,
                ),
            )
        counts.entities, counts.relationships = len(entities), len(relations)
        if self._cfg.graph.include_communities:
            yield counts.event("communities")
            with counts.timed("communities"):
                communities = await detect_communities(
                    self._graph,
                    graph_key(corpus_id, base + 1),
                    self._cfg.graph.community_algorithm,
                    self._cfg.graph.community_seed,
                    self._cfg.graph.community_resolution,
                    # what the new generation holds: written just now from these lists
                    known=([e.entity_id for e in entities], [(r.source_id, r.target_id) for r in relations]),
                )
            counts.communities = communities.communities

        yield counts.event("writing")
        with counts.timed("postgres"):
            counts.generation = await commit_run(
                self._pool,
                RunCommit(
                    corpus_id=corpus_id,
                    root_path=str(root),
                    replaced_files=[FileRecord(f.path, f.content_hash, f.language) for f in changed],
                    deleted_files=deleted,
                    base_generation=base,
                    index_format=INDEX_FORMAT,
                ),
            )
        with counts.timed("vector_index"):
            await index_corpus_vectors(self._pool, corpus_id, self._cfg.vector)
        with counts.timed("graph"):
            await drop_generation(self._graph, corpus_id, base)
        with counts.timed("vacuum"):
            await tidy_postings(self._pool)
        yield counts.event("done", done=True)

    async def _document_graph(
        self, corpus_id: str, generation: int, parsed: _Parsed, counts: _Counts, code: list[Entity]
    ) -> tuple[list[Entity], list[Relation]]:
        """The document graph of the generation being built: document and chunk nodes, CONTAINS
        and SIMILAR_TO edges, the named entities with MENTIONS and RELATED_TO, an imported graph,
        and MENTIONS of the `code` definitions the documents name."""
        chunks = document_chunks(parsed.chunks_by_file)
        imported = await load_graph_import(self._pool, corpus_id, generation)
        if not chunks and imported is None:
            return [], []
        nodes = document_nodes(corpus_id, chunks)
        entities, relations = nodes.entities, nodes.contains
        gcfg = self._cfg.graph
        if gcfg.similar_to_k > 0 and chunks:
            with counts.timed("similar_to"):
                vectors = await chunk_vectors(self._pool, corpus_id, generation, [c.chunk_id for c in chunks])
                relations += await asyncio.to_thread(
                    similar_chunks, vectors, gcfg.similar_to_threshold, gcfg.similar_to_k
                )
        named = DocumentGraph()
        if self._cfg.entities.enabled and chunks:
            with counts.timed("entities"):
                # cached by text: only new or changed chunks are analysed
                found = await recognize_cached(self._pool, self._recognizer, [c.content for c in chunks])
                named = build_document_graph(
                    corpus_id, {c.chunk_id: m for c, m in zip(chunks, found, strict=True)}, self._cfg.entities
                )
            counts.named_entities = len(named.entities)
            counts.named_entities_merged = len(named.merges)
            for merge in named.merges:
                log.info("entities: %s %r merged into %r", merge.type, merge.name, merge.into)
        if imported is not None:
            with counts.timed("linking"):
                texts = {c.chunk_id: c.content for c in chunks}
                linked = await asyncio.to_thread(link_chunks, imported, texts)
                named = merge_imported(corpus_id, imported, named, linked, self._cfg.entities)
            counts.imported_nodes, counts.imported_edges = len(imported.nodes), len(imported.edges)
            counts.linked_mentions = sum(len(found) for found in linked.values())
        if self._extractor is not None and chunks:
            with counts.timed("extraction"):
                extracted = await self._extract(named, {c.chunk_id: c.content for c in chunks})
            counts.extracted_relations, counts.extraction_failures = (
                len(extracted.relations),
                extracted.failed,
            )
            curated = {(r.source_id, r.type, r.target_id) for r in named.typed}
            named.typed += [
                r for r in extracted.relations if (r.source_id, r.type, r.target_id) not in curated
            ]
        entities += named.entities
        relations += named.mentions + named.related + named.typed
        if code and chunks:
            with counts.timed("linking"):
                texts = {c.chunk_id: c.content for c in chunks}
                keywords = {k: v for graph in parsed.graphs for k, v in graph.keywords.items()}
                relations += await asyncio.to_thread(code_mentions, code, texts, keywords)
        return entities, relations

    async def _extract(self, named: DocumentGraph, texts: dict[str, str]) -> Extraction:
        """Relations the model reads out of the chunks between the entities each one mentions."""
        assert self._extractor is not None
        mentioned: dict[str, list[str]] = {}
        for mention in named.mentions:
            mentioned.setdefault(mention.source_id, []).append(mention.target_id)
        names = {e.entity_id: (e.name, *e.aliases) for e in named.entities}
        return await extract_relations(self._extractor, self._pool, texts, mentioned, names)

    async def _parse_and_embed(
        self,
        corpus_id: str,
        changed: list[SourceFile],
        parsed: _Parsed,
        rows: _RowStream,
        counts: _Counts,
        cache: ParseCache | None,
        reuse: bool,
    ) -> AsyncIterator[indexer_pb2.IndexProgress]:
        """Parse changed files in steps; each step runs while the previous batch is being embedded,
        and each embedded batch goes to PostgreSQL while the next one embeds. With `reuse`, a chunk
        whose embedding text the corpus already holds keeps its stored vector."""
        yield counts.event("embedding")
        pending: list[Chunk] = []
        in_flight: tuple[list[Chunk], asyncio.Task[np.ndarray]] | None = None
        for files in _batches(changed, PARSE_BATCH):
            with counts.timed("parse"):
                step = await asyncio.to_thread(_parse, corpus_id, files, self._cfg, cache)
            parsed.add(step)
            new_chunks = [c for f in files for c in step.chunks_by_file[f.path]]
            if reuse:
                new_chunks = await self._reuse_stored(corpus_id, new_chunks, rows, counts)
            pending.extend(new_chunks)
            counts.chunks_to_embed += len(new_chunks)
            while len(pending) >= EMBED_BATCH:
                if in_flight is not None:
                    await self._finish(in_flight, rows, counts)
                    yield counts.event("embedding")
                batch, pending = pending[:EMBED_BATCH], pending[EMBED_BATCH:]
                in_flight = self._start_embedding(batch)
        if pending:
            if in_flight is not None:
                await self._finish(in_flight, rows, counts)
                yield counts.event("embedding")
            in_flight = self._start_embedding(pending)
        if in_flight is not None:
            await self._finish(in_flight, rows, counts)
            yield counts.event("embedding")

    async def _reuse_stored(
        self, corpus_id: str, chunks: list[Chunk], rows: _RowStream, counts: _Counts
    ) -> list[Chunk]:
        """Send the chunks whose vectors are stored straight to PostgreSQL; return the others."""
        hashes = [embed_hash(self._embedder.name, c) for c in chunks]
        with counts.timed("reuse"):
            stored = await stored_vectors(self._pool, corpus_id, hashes)
        reused = [(c, stored[h]) for c, h in zip(chunks, hashes, strict=True) if h in stored]
        if reused:
            text = np.vstack([text for _, (text, _) in reused]).astype(np.float32)
            await rows.put(
                [c for c, _ in reused], ChunkVectors(text, [signature for _, (_, signature) in reused])
            )
            counts.chunks_reused += len(reused)
        return [c for c, h in zip(chunks, hashes, strict=True) if h not in stored]

    def _start_embedding(self, batch: list[Chunk]) -> tuple[list[Chunk], asyncio.Task[np.ndarray]]:
        """Embed the batch's texts, then the signatures of those that have one, in one model call."""
        prefix = self._cfg.embedding.passage_prefix
        texts = [prefix + c.embed_text for c in batch] + [prefix + c.signature for c in batch if c.signature]
        return batch, asyncio.create_task(self._embedder.embed(texts))

    @staticmethod
    async def _finish(
        in_flight: tuple[list[Chunk], asyncio.Task[np.ndarray]], rows: _RowStream, counts: _Counts
    ) -> None:
        batch, task = in_flight
        # Only the wait is counted: embedding that overlapped parsing costs the run nothing extra.
        with counts.timed("embed_wait"):
            vectors = await task
        counts.chunks_embedded += len(batch)
        signatures = iter(vectors[len(batch) :])
        await rows.put(
            batch,
            ChunkVectors(vectors[: len(batch)], [next(signatures) if c.signature else None for c in batch]),
        )

    async def _report_unchanged(self, corpus_id: str, generation: int, counts: _Counts) -> None:
        graph_counts = await self._graph.counts(graph_key(corpus_id, generation))
        counts.entities = graph_counts.get("entities", 0)
        counts.relationships = graph_counts.get("relationships", 0)
        counts.named_entities = sum(
            graph_counts.get(f"entities.{type_}", 0) for type_ in set(self._cfg.entities.types.values())
        )
        counts.communities = await self._graph.community_count(graph_key(corpus_id, generation))
        stored = await self._graph.unresolved_refs(graph_key(corpus_id, generation))
        counts.unresolved_references = sum(len(refs) for refs in stored.values())
        counts.chunks_total = int(
            await self._pool.fetchval("SELECT chunk_count FROM corpora WHERE corpus_id = $1", corpus_id) or 0
        )
