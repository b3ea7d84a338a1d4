"""The exact scan of a small corpus, from the vector leg's memory.

A corpus of at most `exact_scan_max_rows` chunks is always scanned exactly. In PostgreSQL that
scan reads every row of the corpus on every request: 2.0 ms of the server's CPU per search on
the 677 chunks of click (2026-12-03), about half of PostgreSQL's CPU per fused answer there. Here
a corpus's vectors are read once per committed generation, kept as two matrices (text and
signature), and a search is one matrix-vector product over them.

The answers are the SQL scan's (`build_direct_query`'s exact branch): the same distances
(pgvector's formulas over the same float32 vectors), the same order (distance, then chunk id: the
rows are kept in chunk-id order, read in PostgreSQL's own collation), the same
`signature_candidates`, blend and threshold. A score may differ from pgvector's in its last
digits (about 1e-7: the products are summed in another order).

Snapshots are kept per committed version, within `vector.in_memory_mb` (tribrid/stores/small_corpora.py);
0 leaves every scan to PostgreSQL.
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg
import numpy as np

from services.vector.search import VectorResult, answers_coverage, check_model, scan_detail
from tribrid.config import VectorConfig
from tribrid.search_common import ScoredChunk, SearchParams
from tribrid.stores.corpus_versions import Version
from tribrid.stores.postgres import CHUNK_COLUMNS, ChunkRow, chunk_row, committed, version_of
from tribrid.stores.small_corpora import Limits, TooLarge, corpus_row

# per row kept besides its two vectors: its ChunkRow, 0.78-0.81 KB on average in the demo corpora
_ROW_BYTES = 1024


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One committed generation of a small corpus: its rows in chunk-id order, and their vectors."""

    version: Version
    model: str
    rows: list[ChunkRow]
    coverage: dict[str, float]  # by chunk id, the rows whose coverage was measured
    text: np.ndarray  # (n, dim) float32, as stored
    text_norm: np.ndarray  # (n,) float64: each text vector's norm
    signature: np.ndarray  # (n, dim) float32; zeros where a chunk has none
    signature_norm: np.ndarray  # (n,) float64
    has_signature: np.ndarray  # (n,) bool

    @property
    def nbytes(self) -> int:
        return self.text.nbytes + self.signature.nbytes + len(self.rows) * _ROW_BYTES


_LOAD = f"""
    SELECT {", ".join("c." + col for col in CHUNK_COLUMNS.split(", "))}, c.model_coverage,
           c.embedding, c.signature_embedding
    FROM chunks c
    WHERE c.corpus_id = $1 AND {committed("c")}
    ORDER BY c.chunk_id"""


async def read_snapshot(pool: asyncpg.Pool, corpus_id: str, limits: Limits) -> Snapshot | TooLarge | None:
    """The corpus's committed rows and vectors, all read in one transaction's view; None for a
    corpus that is unknown or not yet committed; TooLarge above `limits.max_rows` chunks (a
    snapshot over the budget is dropped once read: at most `exact_scan_max_rows` rows, it is small)."""
    max_rows = limits.max_rows
    async with pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
        corpus = await corpus_row(conn, corpus_id, max_rows)
        if not isinstance(corpus, asyncpg.Record):
            return corpus
        version = version_of(corpus)
        records = await conn.fetch(_LOAD, corpus_id)
    if len(records) > max_rows:  # chunk_count disagreed with the rows: leave it to the SQL scan
        return TooLarge(version)
    dim = records[0]["embedding"].dimensions() if records else 0
    text = np.zeros((len(records), dim), dtype=np.float32)
    signature = np.zeros((len(records), dim), dtype=np.float32)
    has_signature = np.zeros(len(records), dtype=bool)
    for i, record in enumerate(records):
        text[i] = record["embedding"].to_numpy()
        if record["signature_embedding"] is not None:
            signature[i] = record["signature_embedding"].to_numpy()
            has_signature[i] = True
    return Snapshot(
        version=version,
        model=corpus["embedding_model"],
        rows=[chunk_row(r) for r in records],
        coverage={r["chunk_id"]: r["model_coverage"] for r in records if r["model_coverage"] is not None},
        text=text,
        text_norm=np.linalg.norm(text.astype(np.float64), axis=1),
        signature=signature,
        signature_norm=np.linalg.norm(signature.astype(np.float64), axis=1),
        has_signature=has_signature,
    )


def _distances(metric: str, matrix: np.ndarray, norms: np.ndarray, query: np.ndarray) -> np.ndarray:
    """pgvector's distance of each row to the query (`<=>`, `<->`, `<#>`), summed in float32 as
    pgvector sums; NaN where undefined (a zero vector's cosine), which sorts last, as in PostgreSQL."""
    q = query.astype(np.float32, copy=False)
    if metric == "l2":
        return np.asarray(np.sqrt(np.square(matrix - q).sum(axis=1, dtype=np.float64)), dtype=np.float64)
    dots = (matrix @ q).astype(np.float64)
    if metric == "inner_product":
        return -dots
    with np.errstate(divide="ignore", invalid="ignore"):
        # pgvector: 1 - clamp(dot / sqrt(|a|² |b|²), -1, 1)
        similarity = np.clip(dots / np.sqrt(norms * norms * float(q.astype(np.float64) @ q)), -1.0, 1.0)
    return np.asarray(1.0 - similarity, dtype=np.float64)


def _similarity(metric: str, distance: np.ndarray) -> np.ndarray:
    """METRIC_SQL's similarity of a distance."""
    if metric == "l2":
        return np.asarray(1.0 - distance * distance / 2.0, dtype=np.float64)
    return np.asarray(-distance if metric == "inner_product" else 1.0 - distance, dtype=np.float64)


def scan(
    snapshot: Snapshot, cfg: VectorConfig, top_k: int, query: np.ndarray, detail: str
) -> list[ScoredChunk]:
    """The SQL exact scan's answer: the `signature_candidates` (at least top_k) rows nearest by
    text, re-ordered by the blended score, top_k of them at least `similarity_threshold`."""
    if not snapshot.rows:
        return []
    candidates = max(top_k, cfg.signature_candidates if cfg.signature_weight > 0 else 0)
    distance = _distances(cfg.metric, snapshot.text, snapshot.text_norm, query)
    nearest = np.argsort(distance, kind="stable")[:candidates]  # ties in chunk-id order; NaN last
    text = _similarity(cfg.metric, distance[nearest])
    near_signatures = snapshot.signature[nearest]
    signature = _similarity(
        cfg.metric, _distances(cfg.metric, near_signatures, snapshot.signature_norm[nearest], query)
    )
    has_signature = snapshot.has_signature[nearest]
    weight = cfg.signature_weight
    blended = np.where(has_signature, (text + weight * signature) / (1 + weight), text)
    best = np.argsort(-blended, kind="stable")[:top_k]  # ties keep the text's order; NaN last
    return [
        ScoredChunk(snapshot.rows[int(nearest[i])], score, detail)
        for i, score in zip(best.tolist(), blended[best].tolist(), strict=True)
        if score >= cfg.similarity_threshold
    ]


def search_snapshot(
    snapshot: Snapshot,
    cfg: VectorConfig,
    params: SearchParams,
    query: np.ndarray,
    embedding_model: str | None,
) -> VectorResult:
    """vector_search's answer for an unfiltered request on a kept corpus, with no statement."""
    check_model(params.corpus_id, snapshot.model, embedding_model)
    chunks = scan(
        snapshot, cfg, params.top_k, query, scan_detail(cfg, params.top_k).format(plan="exact in memory")
    )
    return VectorResult(chunks, "memory", len(snapshot.rows), 0, answers_coverage(snapshot.coverage, chunks))
