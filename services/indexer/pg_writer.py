"""Bulk writes of one index run into PostgreSQL, in one transaction (all or nothing)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import asyncpg
import numpy as np

from tribrid.models import Chunk
from tribrid.text import to_tsvector_literal, tokenize

_CHUNK_COLS = [
    "corpus_id",
    "chunk_id",
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
]


@dataclass(frozen=True, slots=True)
class FileRecord:
    file_path: str
    content_hash: str
    language: str


@dataclass(frozen=True, slots=True)
class RunWrite:
    """Everything one index run changes in PostgreSQL."""

    corpus_id: str
    root_path: str
    embedding_model: str
    embedding_dim: int
    replaced_files: Sequence[FileRecord]  # new or changed: their old chunks go, new chunks come
    deleted_files: Sequence[str]
    chunks: Sequence[Chunk]  # chunks of replaced_files
    vectors: np.ndarray  # one row per chunk
    base_generation: int  # the generation this run started from; it commits base_generation + 1


class GenerationConflict(Exception):
    """Another run committed a generation of this corpus while this one was working."""


async def load_file_hashes(pool: asyncpg.Pool, corpus_id: str) -> dict[str, str]:
    rows = await pool.fetch("SELECT file_path, content_hash FROM files WHERE corpus_id = $1", corpus_id)
    return {r["file_path"]: r["content_hash"] for r in rows}


def _chunk_records(write: RunWrite) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    chunk_rows: list[tuple[object, ...]] = []
    posting_rows: list[tuple[object, ...]] = []
    for chunk, vector in zip(write.chunks, write.vectors, strict=True):
        terms = tokenize(chunk.embed_text)
        tsv, length = to_tsvector_literal(terms)
        chunk_rows.append(
            (
                write.corpus_id,
                chunk.chunk_id,
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
            )
        )
        for term, tf in Counter(terms).items():
            posting_rows.append((write.corpus_id, term, chunk.chunk_id, tf, length))
    return chunk_rows, posting_rows


async def apply_run(pool: asyncpg.Pool, write: RunWrite) -> int:
    """Replace the chunks of changed and deleted files and commit generation base + 1, atomically."""
    chunk_rows, posting_rows = _chunk_records(write)
    gone = [f.file_path for f in write.replaced_files] + list(write.deleted_files)
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute(
            """INSERT INTO corpora (corpus_id, root_path, embedding_model, embedding_dim)
               VALUES ($1, $2, $3, $4)
               ON CONFLICT (corpus_id) DO UPDATE SET root_path = EXCLUDED.root_path""",
            write.corpus_id,
            write.root_path,
            write.embedding_model,
            write.embedding_dim,
        )
        # Lock the corpus row: two runs on one corpus take turns instead of interleaving.
        await conn.execute("SELECT 1 FROM corpora WHERE corpus_id = $1 FOR UPDATE", write.corpus_id)
        await conn.execute(
            "DELETE FROM chunks WHERE corpus_id = $1 AND file_path = ANY($2::text[])", write.corpus_id, gone
        )
        await conn.execute(
            "DELETE FROM files WHERE corpus_id = $1 AND file_path = ANY($2::text[])", write.corpus_id, gone
        )
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
            "postings", records=posting_rows, columns=["corpus_id", "term", "chunk_id", "tf", "doc_terms"]
        )
        await conn.copy_records_to_table(
            "files",
            records=[
                (write.corpus_id, f.file_path, f.content_hash, f.language) for f in write.replaced_files
            ],
            columns=["corpus_id", "file_path", "content_hash", "language"],
        )
        generation: int | None = await conn.fetchval(
            """UPDATE corpora SET
                   generation = $2::bigint + 1,
                   updated_at = now(),
                   chunk_count = s.n,
                   avg_chunk_terms = s.avg_terms
               FROM (SELECT count(*) AS n, coalesce(avg(term_count), 0) AS avg_terms
                     FROM chunks WHERE corpus_id = $1) s
               WHERE corpus_id = $1 AND generation = $2::bigint
               RETURNING generation""",
            write.corpus_id,
            write.base_generation,
        )
        if generation is None:  # raising rolls the whole transaction back
            raise GenerationConflict(
                f"corpus {write.corpus_id!r} moved past generation {write.base_generation} during this run"
            )
    return generation


async def delete_corpus(pool: asyncpg.Pool, corpus_id: str) -> int | None:
    """Delete a corpus and everything in it; None if it did not exist, else its chunk count."""
    async with pool.acquire() as conn, conn.transaction():
        count = await conn.fetchval(
            "SELECT chunk_count FROM corpora WHERE corpus_id = $1 FOR UPDATE", corpus_id
        )
        if count is None:
            return None
        await conn.execute("DELETE FROM postings WHERE corpus_id = $1", corpus_id)
        await conn.execute("DELETE FROM corpora WHERE corpus_id = $1", corpus_id)
    return int(count)
