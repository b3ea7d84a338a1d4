"""One index run: walk -> diff by content hash -> chunk + extract -> embed changed -> write both stores.

PostgreSQL is written in one transaction at the end, so an interrupted run leaves the previous
state searchable; only changed files are re-embedded.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg
import numpy as np

from services.indexer.pg_writer import FileRecord, RunWrite, apply_run, load_file_hashes
from tribrid.config import TriBridConfig
from tribrid.embedding import Embedder
from tribrid.graphstore import GraphStore
from tribrid.indexing.chunker import chunk_file
from tribrid.indexing.python_graph import FileGraph, extract_python, resolve
from tribrid.indexing.walker import Skipped, SourceFile, walk_corpus
from tribrid.models import Chunk, Entity, Relation
from tribrid.search_common import invalid, validate_corpus_id
from tribrid.v1 import indexer_pb2

EMBED_BATCH = 128  # chunks per embedding call: big enough for throughput, small for progress


@dataclass(slots=True)
class _Counts:
    started: float = field(default_factory=time.monotonic)
    files_seen: int = 0
    files_changed: int = 0
    files_deleted: int = 0
    chunks_total: int = 0
    chunks_to_embed: int = 0
    chunks_embedded: int = 0
    entities: int = 0
    relationships: int = 0
    generation: int = 0
    skipped: Counter[str] = field(default_factory=Counter)

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
        )


@dataclass(slots=True)
class _Parsed:
    """What parsing every file produced (cheap next to embedding, so done for all files)."""

    chunks_by_file: dict[str, list[Chunk]] = field(default_factory=dict)
    graphs: list[FileGraph] = field(default_factory=list)
    syntax_errors: int = 0


def _walk(root: Path, cfg: TriBridConfig) -> tuple[list[SourceFile], list[Skipped]]:
    files: list[SourceFile] = []
    skipped: list[Skipped] = []
    for item in walk_corpus(root, cfg.indexer):
        if isinstance(item, SourceFile):
            files.append(item)
        else:
            skipped.append(item)
    return files, skipped


def _parse(corpus_id: str, files: list[SourceFile], cfg: TriBridConfig) -> _Parsed:
    parsed = _Parsed()
    for source in files:
        result = chunk_file(corpus_id, source, cfg.indexer)
        parsed.chunks_by_file[source.path] = result.chunks
        parsed.syntax_errors += int(result.syntax_error)
        if source.language == "python" and result.tree is not None:
            parsed.graphs.append(extract_python(corpus_id, source, result.chunks, result.tree))
    return parsed


def _graph_of(corpus_id: str, parsed: _Parsed) -> tuple[list[Entity], list[Relation]]:
    entities = [e for g in parsed.graphs for e in g.entities]
    relations = [r for g in parsed.graphs for r in g.relations]
    relations.extend(resolve(corpus_id, parsed.graphs))
    return entities, list(dict.fromkeys(relations))


class IndexPipeline:
    def __init__(self, cfg: TriBridConfig, pool: asyncpg.Pool, graph: GraphStore, embedder: Embedder) -> None:
        self._cfg = cfg
        self._pool = pool
        self._graph = graph
        self._embedder = embedder
        self._locks: dict[str, asyncio.Lock] = {}

    async def run(self, corpus_id: str, path: str) -> AsyncIterator[indexer_pb2.IndexProgress]:
        validate_corpus_id(corpus_id)
        root = Path(path)
        if not path or not root.is_absolute():
            raise invalid(f"path {path!r} must be an absolute directory path")
        if not await asyncio.to_thread(root.is_dir):
            raise invalid(f"path {path!r} does not exist or is not a directory")
        # One run per corpus at a time in this process; the database row lock guards across processes.
        async with self._locks.setdefault(corpus_id, asyncio.Lock()):
            async for event in self._run(corpus_id, root):
                yield event

    async def _run(self, corpus_id: str, root: Path) -> AsyncIterator[indexer_pb2.IndexProgress]:
        counts = _Counts()
        yield counts.event("walking")
        files, skipped = await asyncio.to_thread(_walk, root, self._cfg)
        counts.files_seen = len(files) + len(skipped)
        counts.skipped.update(s.reason for s in skipped)

        old_hashes = await load_file_hashes(self._pool, corpus_id)
        changed = [f for f in files if old_hashes.get(f.path) != f.content_hash]
        deleted = sorted(set(old_hashes) - {f.path for f in files})
        counts.files_changed, counts.files_deleted = len(changed), len(deleted)
        yield counts.event("chunking")

        parsed = await asyncio.to_thread(_parse, corpus_id, files, self._cfg)
        if parsed.syntax_errors:
            counts.skipped["syntax_error"] += parsed.syntax_errors
        counts.chunks_total = sum(len(c) for c in parsed.chunks_by_file.values())
        to_embed = [c for f in changed for c in parsed.chunks_by_file[f.path]]
        counts.chunks_to_embed = len(to_embed)
        yield counts.event("embedding")

        vectors: list[np.ndarray] = []
        for start in range(0, len(to_embed), EMBED_BATCH):
            batch = to_embed[start : start + EMBED_BATCH]
            vectors.append(await self._embedder.embed([c.embed_text for c in batch]))
            counts.chunks_embedded += len(batch)
            yield counts.event("embedding")

        if changed or deleted or not old_hashes:
            yield counts.event("writing")
            counts.generation = await apply_run(
                self._pool,
                RunWrite(
                    corpus_id=corpus_id,
                    root_path=str(root),
                    embedding_model=self._embedder.name,
                    embedding_dim=self._embedder.dim,
                    replaced_files=[FileRecord(f.path, f.content_hash, f.language) for f in changed],
                    deleted_files=deleted,
                    chunks=to_embed,
                    vectors=np.vstack(vectors) if vectors else np.zeros((0, self._embedder.dim), np.float32),
                ),
            )
            yield counts.event("graph")
            entities, relations = _graph_of(corpus_id, parsed)
            # The graph is rebuilt whole: call edges from unchanged files may point into changed ones.
            await self._graph.delete_corpus(corpus_id)
            await self._graph.ensure_schema(corpus_id)
            counts.entities = await self._graph.upsert_entities(corpus_id, entities)
            counts.relationships = await self._graph.upsert_relations(corpus_id, relations)
        else:
            graph_counts = await self._graph.counts(corpus_id)
            counts.entities = graph_counts.get("entities", 0)
            counts.relationships = graph_counts.get("relationships", 0)
            counts.generation = int(
                await self._pool.fetchval("SELECT generation FROM corpora WHERE corpus_id = $1", corpus_id)
                or 0
            )
        yield counts.event("done", done=True)
