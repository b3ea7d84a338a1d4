"""Any-term BM25 over a corpus's postings kept in the sparse leg's memory.

In PostgreSQL a search reads the postings of its terms on every request (`build_any_query`): 2.4-3.9
ms per search on click's 677 chunks, 5.8-8.1 ms on the 10k bench corpus, against 0.37 and 0.59 ms
here (bench-quick's questions, one at a time, asyncpg included; 2026-12-03). Here a corpus of at
most `sparse.in_memory_max_chunks` chunks has its postings and term statistics read once per
committed generation (tribrid/stores/small_corpora.py, within `sparse.in_memory_mb`), and an
unfiltered any-mode search adds up its terms' contributions with numpy.

The answer is the SQL statement's: the same formula over the same postings and statistics, the
same order (the score rounded to 9 digits, then the chunk id), the same matched terms. Nothing is
pruned here, so an explain never says "pruned"; a score may differ from PostgreSQL's in its last
digits (the contributions are summed in another order).
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg
import numpy as np

from services.sparse.bm25 import SCORE_DIGITS, Bm25Result, bm25_detail
from tribrid.search_common import ScoredChunk
from tribrid.stores.corpus_versions import Version
from tribrid.stores.postgres import CHUNK_COLUMNS, ChunkRow, chunk_row, committed, version_of
from tribrid.stores.small_corpora import TooLarge, corpus_row

_ROW_BYTES = 1024  # a ChunkRow: 0.78-0.81 KB on average in the demo corpora
_TERM_BYTES = 160  # a term's dict entry, its string and its (start, end, df)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A committed generation's postings as three flat arrays, a term's postings one slice of them
    (its chunks' positions ascending): 12 bytes a posting, with no object per term but its key."""

    version: Version
    n: float  # corpora.chunk_count, as the statement's N
    avgdl: float  # greatest(corpora.avg_chunk_terms, 1)
    rows: list[ChunkRow]  # in chunk-id order
    terms: dict[str, tuple[int, int, int]]  # term -> its slice (start, end) and df (term_stats)
    chunks: np.ndarray  # int32: a posting's chunk, as a position in rows
    tf: np.ndarray  # int32
    doc_terms: np.ndarray  # int32

    @property
    def nbytes(self) -> int:
        arrays = self.chunks.nbytes + self.tf.nbytes + self.doc_terms.nbytes
        return arrays + len(self.rows) * _ROW_BYTES + len(self.terms) * _TERM_BYTES


_ROWS = f"""
    SELECT {", ".join("c." + col for col in CHUNK_COLUMNS.split(", "))} FROM chunks c
    WHERE c.corpus_id = $1 AND {committed("c")} ORDER BY c.chunk_id"""
# a term a row: its postings as arrays in chunk-id order (the order of _ROWS)
_POSTINGS = f"""
    SELECT a.term, coalesce(ts.df, 0) AS df, a.chunk_ids, a.tf, a.doc_terms
    FROM (
        SELECT p.term, array_agg(p.chunk_id ORDER BY p.chunk_id) AS chunk_ids,
               array_agg(p.tf ORDER BY p.chunk_id) AS tf,
               array_agg(p.doc_terms ORDER BY p.chunk_id) AS doc_terms
        FROM postings p WHERE p.corpus_id = $1 AND {committed("p")}
        GROUP BY p.term
    ) a
    LEFT JOIN term_stats ts ON ts.corpus_id = $1 AND ts.term = a.term"""


async def read_snapshot(pool: asyncpg.Pool, corpus_id: str, max_rows: int) -> Snapshot | TooLarge | None:
    """The corpus's committed chunks, postings and term statistics, in one transaction's view; the
    postings a few hundred terms at a time (a cursor), so that reading them costs little memory."""
    terms: dict[str, tuple[int, int, int]] = {}
    parts: dict[str, list[np.ndarray]] = {"chunks": [], "tf": [], "doc_terms": []}
    end = 0
    async with pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
        corpus = await corpus_row(conn, corpus_id, max_rows)
        if not isinstance(corpus, asyncpg.Record):
            return corpus
        version = version_of(corpus)
        rows = [chunk_row(r) for r in await conn.fetch(_ROWS, corpus_id)]
        if len(rows) > max_rows:
            return TooLarge(version)
        position = {row.chunk_id: i for i, row in enumerate(rows)}
        async for record in conn.cursor(_POSTINGS, corpus_id, prefetch=500):
            ids = record["chunk_ids"]
            start, end = end, end + len(ids)
            terms[record["term"]] = (start, end, int(record["df"]))
            parts["chunks"].append(
                np.fromiter(map(position.__getitem__, ids), dtype=np.int32, count=len(ids))
            )
            parts["tf"].append(np.asarray(record["tf"], dtype=np.int32))
            parts["doc_terms"].append(np.asarray(record["doc_terms"], dtype=np.int32))
    return Snapshot(
        version=version,
        n=float(corpus["chunk_count"]),
        avgdl=max(float(corpus["avg_chunk_terms"] or 0.0), 1.0),
        rows=rows,
        terms=terms,
        chunks=_joined(parts["chunks"]),
        tf=_joined(parts["tf"]),
        doc_terms=_joined(parts["doc_terms"]),
    )


def _joined(arrays: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int32)


def bm25_any_in_memory(snapshot: Snapshot, terms: list[str], k1: float, b: float, top_k: int) -> Bm25Result:
    """bm25_any's answer for an unfiltered search, from the snapshot."""
    if not terms or not snapshot.rows:
        return Bm25Result([])
    score = np.zeros(len(snapshot.rows), dtype=np.float64)
    hit = np.zeros(len(snapshot.rows), dtype=bool)
    for term in terms:  # a term given twice counts twice, as in the statement
        at = snapshot.terms.get(term)
        if at is None:
            continue
        start, end, df = at
        posted = snapshot.chunks[start:end]
        tf = snapshot.tf[start:end].astype(np.float64)
        length = 1 - b + b * snapshot.doc_terms[start:end] / snapshot.avgdl
        idf = np.log(1 + (snapshot.n - df + 0.5) / (df + 0.5))
        score[posted] += idf * tf * (k1 + 1) / (tf + k1 * length)
        hit[posted] = True
    found = np.flatnonzero(hit)
    ranked = np.round(score[found], SCORE_DIGITS)
    top = found[np.lexsort((found, -ranked))[:top_k]]  # best rounded score, then chunk id
    # which query terms each answer holds, a term at a time (sorted, as the statement's array_agg)
    held = [
        (term, _holds(snapshot.chunks[at[0] : at[1]], top))
        for term in sorted(set(terms))
        if (at := snapshot.terms.get(term)) is not None
    ]
    chunks = []
    for i, row in enumerate(top.tolist()):
        matched = [term for term, holds in held if holds[i]]
        detail = bm25_detail(k1, b, "any", matched, "")
        chunks.append(ScoredChunk(snapshot.rows[row], float(score[row]), detail))
    return Bm25Result(chunks)


def _holds(chunks: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """For each of `rows`, whether the ascending `chunks` hold it."""
    at = np.minimum(np.searchsorted(chunks, rows), len(chunks) - 1)
    return np.asarray(chunks[at] == rows)
