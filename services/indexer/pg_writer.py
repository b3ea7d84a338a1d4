"""Bulk writes of index runs into PostgreSQL.

A run writes its chunks as generation G+1 while it is still embedding, batch after batch
(`write_chunks`); searches see only rows of the committed generation G, so those rows stay hidden.
`commit_run` then deletes the rows they replace and flips the corpus to G+1 in one transaction.
An interrupted run leaves hidden rows behind, which the next run discards (`discard_uncommitted`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

import asyncpg
import numpy as np

from services.indexer.graph_import import ImportedGraph
from tribrid.coverage import Coverage
from tribrid.models import Chunk
from tribrid.stores.postgres import committed, drop_corpus_vector_index
from tribrid.text import index_tokens, to_tsvector_literal

_CHUNK_COLS = [
    "corpus_id",
    "chunk_id",
    "generation",
    "file_path",
    "start_line",
    "end_line",
    "language",
    "kind",
    "symbol",
    "content",
    "embedding",
    "tsv",
    "term_count",
    "embed_hash",
    "document_title",
    "section",
    "page_start",
    "page_end",
    "document_metadata",
    "signature_embedding",
    "model_coverage",
]


@dataclass(frozen=True, slots=True)
class FileRecord:
    file_path: str
    content_hash: str
    language: str


@dataclass(frozen=True, slots=True)
class CorpusInfo:
    corpus_id: str
    root_path: str
    embedding_model: str
    embedding_dim: int


@dataclass(frozen=True, slots=True)
class RunCommit:
    """What a run changes besides its chunk rows: the file list, and the generation it flips."""

    corpus_id: str
    root_path: str
    replaced_files: Sequence[FileRecord]  # new or changed: their old chunks go
    deleted_files: Sequence[str]
    base_generation: int  # the generation this run started from; it commits base_generation + 1
    index_format: int  # how its chunks were made (pipeline.INDEX_FORMAT)


# The advisory lock of a corpus's index runs ($1: the corpus id).
_RUN_LOCK = "hashtextextended('tribrid-index:' || $1, 0)"


class CorpusBusy(Exception):
    """An index run of the corpus is in progress (in this process or another)."""


class GenerationConflict(Exception):
    """Another run committed a generation of this corpus while this one was working."""


@asynccontextmanager
async def run_lock(pool: asyncpg.Pool, corpus_id: str) -> AsyncIterator[None]:
    """Hold the corpus's index lock: runs of one corpus in any process take turns.

    A session advisory lock on its own connection: a crashed process's lock goes with its connection.
    """
    async with pool.acquire() as conn:
        await conn.execute(f"SELECT pg_advisory_lock({_RUN_LOCK})", corpus_id)
        try:
            yield
        finally:
            await conn.execute(f"SELECT pg_advisory_unlock({_RUN_LOCK})", corpus_id)


async def load_file_hashes(pool: asyncpg.Pool, corpus_id: str) -> dict[str, str]:
    rows = await pool.fetch("SELECT file_path, content_hash FROM files WHERE corpus_id = $1", corpus_id)
    return {r["file_path"]: r["content_hash"] for r in rows}


async def load_index_format(pool: asyncpg.Pool, corpus_id: str) -> int | None:
    value: int | None = await pool.fetchval(
        "SELECT index_format FROM corpora WHERE corpus_id = $1", corpus_id
    )
    return value


async def discard_uncommitted(pool: asyncpg.Pool, corpus_id: str) -> int:
    """Delete the hidden rows an interrupted run left; returns how many chunks went."""
    await pool.execute(
        """DELETE FROM graph_imports g USING corpora k
           WHERE g.corpus_id = $1 AND k.corpus_id = $1 AND g.generation > k.generation""",
        corpus_id,
    )
    status: str = await pool.execute(
        """DELETE FROM chunks c USING corpora k
           WHERE c.corpus_id = $1 AND k.corpus_id = $1 AND c.generation > k.generation""",
        corpus_id,
    )
    return int(status.rsplit(" ", 1)[-1])


async def store_graph_import(
    pool: asyncpg.Pool, corpus_id: str, generation: int, source: str, graph: ImportedGraph
) -> None:
    """The import a run at `generation` brings; hidden until that generation commits."""
    await pool.execute(
        """INSERT INTO graph_imports (corpus_id, generation, source, graph) VALUES ($1, $2, $3, $4::jsonb)
           ON CONFLICT (corpus_id, generation)
           DO UPDATE SET source = $3, graph = $4::jsonb, imported_at = now()""",
        corpus_id,
        generation,
        source,
        graph.to_json(),
    )


async def committed_root(pool: asyncpg.Pool, corpus_id: str) -> str | None:
    """The directory a committed corpus was indexed from (None: no such corpus yet)."""
    root: str | None = await pool.fetchval(
        "SELECT root_path FROM corpora WHERE corpus_id = $1 AND generation > 0", corpus_id
    )
    return root


async def move_root(pool: asyncpg.Pool, corpus_id: str, root_path: str) -> None:
    """Record where an unchanged corpus was indexed from now: the same files read from a moved
    directory make no new generation, but a later graph import re-reads them from here."""
    await pool.execute(
        "UPDATE corpora SET root_path = $2 WHERE corpus_id = $1 AND root_path IS DISTINCT FROM $2",
        corpus_id,
        root_path,
    )


async def load_graph_import(pool: asyncpg.Pool, corpus_id: str, generation: int) -> ImportedGraph | None:
    """The newest import up to `generation` (None: the corpus has none)."""
    text = await pool.fetchval(
        """SELECT graph::text FROM graph_imports WHERE corpus_id = $1 AND generation <= $2
           ORDER BY generation DESC LIMIT 1""",
        corpus_id,
        generation,
    )
    return None if text is None else ImportedGraph.from_json(text)


async def ensure_corpus(pool: asyncpg.Pool, info: CorpusInfo) -> None:
    """The corpus row the run's rows hang on; a new corpus stays unsearchable (generation 0) until its
    first run commits."""
    await pool.execute(
        """INSERT INTO corpora (corpus_id, root_path, embedding_model, embedding_dim)
           VALUES ($1, $2, $3, $4) ON CONFLICT (corpus_id) DO NOTHING""",
        info.corpus_id,
        info.root_path,
        info.embedding_model,
        info.embedding_dim,
    )


# Labels of the context header the chunker puts above a chunk's code (`# file: a/b.py`): the same
# in every chunk, so as terms they only match everything. Their values (path, class) stay.
_HEADER_LABEL = re.compile(r"^# (?:file|class|module|section):", re.MULTILINE)


def sparse_text(chunk: Chunk) -> str:
    """What BM25 indexes: the chunk's embedding text without the header's labels."""
    header_length = len(chunk.embed_text) - len(chunk.content)
    if header_length <= 0 or not chunk.embed_text.endswith(chunk.content):
        return chunk.embed_text
    return _HEADER_LABEL.sub("#", chunk.embed_text[:header_length]) + chunk.content


def embed_hash(model: str, chunk: Chunk) -> str:
    """Identifies a chunk's embeddings: the same model on the same texts gives the same vectors."""
    texts = f"{model}\0{chunk.embed_text}" + (f"\0{chunk.signature}" if chunk.signature else "")
    return hashlib.blake2b(texts.encode(), digest_size=16).hexdigest()


@dataclass(frozen=True, slots=True)
class ChunkVectors:
    """A batch's embeddings: one row per chunk of its text, and of its signature where it has one."""

    text: np.ndarray
    signature: Sequence[np.ndarray | None]


async def stored_vectors(
    pool: asyncpg.Pool, corpus_id: str, hashes: Sequence[str]
) -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
    """The (text, signature) vectors the corpus's committed chunks already have, by embed_hash."""
    rows = await pool.fetch(
        f"""SELECT DISTINCT ON (c.embed_hash) c.embed_hash, c.embedding, c.signature_embedding
            FROM chunks c
            WHERE c.corpus_id = $1 AND c.embed_hash = ANY($2::text[]) AND {committed("c")}""",
        corpus_id,
        list(hashes),
    )
    return {
        r["embed_hash"]: (
            r["embedding"].to_numpy(),
            None if r["signature_embedding"] is None else r["signature_embedding"].to_numpy(),
        )
        for r in rows
    }


def _chunk_records(
    corpus_id: str,
    generation: int,
    model: str,
    chunks: Sequence[Chunk],
    vectors: ChunkVectors,
    fold_accents: bool,
    coverage: Coverage | None,
) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    chunk_rows: list[tuple[object, ...]] = []
    posting_rows: list[tuple[object, ...]] = []
    read: Sequence[float | None] = (
        coverage.of_texts([c.embed_text for c in chunks]) if coverage is not None else [None] * len(chunks)
    )
    for chunk, vector, signature_vector, share in zip(
        chunks, vectors.text, vectors.signature, read, strict=True
    ):
        tokens = index_tokens(sparse_text(chunk), fold_accents)
        tsv, length = to_tsvector_literal(tokens)
        chunk_rows.append(
            (
                corpus_id,
                chunk.chunk_id,
                generation,
                chunk.file_path,
                chunk.start_line,
                chunk.end_line,
                chunk.language,
                chunk.kind,
                chunk.symbol,
                chunk.content,
                vector,
                tsv,
                length,
                embed_hash(model, chunk),
                chunk.document_title,
                chunk.section,
                chunk.page_start,
                chunk.page_end,
                json.dumps(chunk.document_metadata, ensure_ascii=False, sort_keys=True),
                signature_vector,
                share,
            )
        )
        for term, tf in Counter(term for term, _ in tokens).items():
            posting_rows.append((corpus_id, term, chunk.chunk_id, generation, tf, length))
    return chunk_rows, posting_rows


async def write_chunks(
    pool: asyncpg.Pool,
    corpus_id: str,
    generation: int,
    model: str,
    chunks: Sequence[Chunk],
    vectors: ChunkVectors,
    fold_accents: bool = True,
    coverage: Coverage | None = None,
) -> None:
    """Add chunk rows (with their postings) as `generation`, hidden until that generation commits;
    `model` made the vectors; fold_accents adds accented terms' folded forms (sparse.fold_accents);
    `coverage` measures how much of each chunk's text the model read (NULL without)."""
    # Tokenizing is pure Python: in a thread, so the event loop keeps serving while it runs.
    chunk_rows, posting_rows = await asyncio.to_thread(
        _chunk_records, corpus_id, generation, model, chunks, vectors, fold_accents, coverage
    )
    async with pool.acquire() as conn, conn.transaction():
        # COPY has no binary tsvector encoder in asyncpg: stage the tsvector as text, cast on insert.
        await conn.execute(
            "CREATE TEMP TABLE chunk_stage (LIKE chunks INCLUDING DEFAULTS) ON COMMIT DROP;"
            "ALTER TABLE chunk_stage ALTER COLUMN tsv TYPE text"
        )
        await conn.copy_records_to_table("chunk_stage", records=chunk_rows, columns=_CHUNK_COLS)
        await conn.execute(
            f"INSERT INTO chunks ({', '.join(_CHUNK_COLS)}) "
            f"SELECT {', '.join(c if c != 'tsv' else 'tsv::tsvector' for c in _CHUNK_COLS)} "
            "FROM chunk_stage"
        )
        await conn.copy_records_to_table(
            "postings",
            records=posting_rows,
            columns=["corpus_id", "term", "chunk_id", "generation", "tf", "doc_terms"],
        )


async def commit_run(pool: asyncpg.Pool, run: RunCommit) -> int:
    """Delete the replaced files' rows and make generation base + 1 the searched one, atomically."""
    gone = [f.file_path for f in run.replaced_files] + list(run.deleted_files)
    # Statistics that know the run's rows first: planned on statistics from before a new corpus's
    # rows, the join below ran past the 30 s command timeout in `make eval` (1,348 chunks, 41k
    # postings; 0.14 s once analyzed). ANALYZE samples: about 0.5 s on 8k chunks, 290k postings.
    await pool.execute("ANALYZE chunks, postings")
    async with pool.acquire() as conn, conn.transaction():
        generation: int | None = await conn.fetchval(
            "SELECT generation FROM corpora WHERE corpus_id = $1 FOR UPDATE", run.corpus_id
        )
        if generation != run.base_generation:  # raising rolls the whole transaction back
            raise GenerationConflict(
                f"corpus {run.corpus_id!r} is at generation {generation}, "
                f"this run started from {run.base_generation}"
            )
        # The terms whose document frequency this commit changes: those of the rows it deletes and
        # of the rows it makes visible (all of them rows of the files it replaces or deletes).
        touched = await conn.fetchval(
            """SELECT coalesce(array_agg(DISTINCT p.term), '{}') FROM chunks c
               JOIN postings p ON p.chunk_id = c.chunk_id AND p.generation = c.generation
                   AND p.corpus_id = c.corpus_id
               WHERE c.corpus_id = $1 AND c.file_path = ANY($2::text[]) AND c.generation <= $3::bigint + 1""",
            run.corpus_id,
            gone,
            run.base_generation,
        )
        await conn.execute(
            "DELETE FROM chunks WHERE corpus_id = $1 AND file_path = ANY($2::text[]) AND generation <= $3",
            run.corpus_id,
            gone,
            run.base_generation,
        )
        await _count_terms(conn, run.corpus_id, touched, run.base_generation + 1)
        await conn.execute(
            "DELETE FROM files WHERE corpus_id = $1 AND file_path = ANY($2::text[])", run.corpus_id, gone
        )
        await conn.copy_records_to_table(
            "files",
            records=[(run.corpus_id, f.file_path, f.content_hash, f.language) for f in run.replaced_files],
            columns=["corpus_id", "file_path", "content_hash", "language"],
        )
        await conn.execute(  # an import this run brings replaces the one before it
            """DELETE FROM graph_imports WHERE corpus_id = $1 AND generation < (
                   SELECT max(generation) FROM graph_imports
                   WHERE corpus_id = $1 AND generation <= $2::bigint + 1)""",
            run.corpus_id,
            run.base_generation,
        )
        await conn.execute(
            """UPDATE corpora SET
                   generation = $2::bigint + 1,
                   root_path = $3,
                   index_format = $4,
                   updated_at = now(),
                   chunk_count = s.n,
                   avg_chunk_terms = s.avg_terms
               FROM (SELECT count(*) AS n, coalesce(avg(term_count), 0) AS avg_terms
                     FROM chunks WHERE corpus_id = $1) s
               WHERE corpus_id = $1""",
            run.corpus_id,
            run.base_generation,
            run.root_path,
            run.index_format,
        )
    return run.base_generation + 1


async def _count_terms(conn: asyncpg.Connection, corpus_id: str, terms: list[str], generation: int) -> None:
    """Recount these terms' document frequencies over the rows of `generation` and before."""
    await conn.execute(
        "DELETE FROM term_stats WHERE corpus_id = $1 AND term = ANY($2::text[])", corpus_id, terms
    )
    await conn.execute(
        """INSERT INTO term_stats (corpus_id, term, df)
           SELECT $1, p.term, count(*) FROM postings p
           WHERE p.corpus_id = $1 AND p.term = ANY($2::text[]) AND p.generation <= $3
           GROUP BY p.term""",
        corpus_id,
        terms,
        generation,
    )


async def tidy_postings(pool: asyncpg.Pool) -> None:
    """Vacuum and analyze the postings after a run: BM25's index-only scans need the pages a run
    wrote marked all-visible, and the planner wants the new term statistics. (Not `chunks`: a
    vacuum there also cleans the HNSW index, which autovacuum can do in its own time.)"""
    await pool.execute("VACUUM (ANALYZE) postings")


async def delete_corpus(pool: asyncpg.Pool, corpus_id: str) -> int | None:
    """Delete a corpus and everything in it; None if it did not exist, else its chunk count."""
    async with pool.acquire() as conn, conn.transaction():
        # A run of this corpus holds the lock for its whole run: refuse rather than wait minutes.
        if not await conn.fetchval(f"SELECT pg_try_advisory_xact_lock({_RUN_LOCK})", corpus_id):
            raise CorpusBusy(f"corpus {corpus_id!r} is being indexed: delete it when the run has finished")
        count = await conn.fetchval(
            "SELECT chunk_count FROM corpora WHERE corpus_id = $1 FOR UPDATE", corpus_id
        )
        if count is None:
            return None
        await conn.execute("DELETE FROM postings WHERE corpus_id = $1", corpus_id)
        await conn.execute("DELETE FROM corpora WHERE corpus_id = $1", corpus_id)
    await drop_corpus_vector_index(pool, corpus_id)  # empty now; outside the delete's transaction
    return int(count)
