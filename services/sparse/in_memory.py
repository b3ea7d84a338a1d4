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
from tribrid.stores.postgres import CHUNK_COLUMNS, ChunkRow, chunk_row, committed
from tribrid.stores.small_corpora import TooLarge, corpus_row, version_of

_ROW_BYTES = 1024  # a ChunkRow: 0.78-0.81 KB on average in the demo corpora
_TERM_BYTES = 200  # a term's dict entry, its string and its arrays' headers


@dataclass(frozen=True, slots=True)
class Postings:
    """One term's postings: chunk positions (ascending), term frequencies, chunk lengths."""

    chunks: np.ndarray  # int32
    tf: np.ndarray  # float64
    doc_terms: np.ndarray  # float64


@dataclass(frozen=True, slots=True)
class Snapshot:
    version: Version
    n: float  # corpora.chunk_count, as the statement's N
    avgdl: float  # greatest(corpora.avg_chunk_terms, 1)
    rows: list[ChunkRow]  # in chunk-id order
    postings: dict[str, Postings]
    df: dict[str, int]  # term_stats

    @property
    def nbytes(self) -> int:
        arrays = sum(p.chunks.nbytes + p.tf.nbytes + p.doc_terms.nbytes for p in self.postings.values())
        return arrays + len(self.rows) * _ROW_BYTES + (len(self.postings) + len(self.df)) * _TERM_BYTES


_ROWS = f"""
    SELECT {", ".join("c." + col for col in CHUNK_COLUMNS.split(", "))} FROM chunks c
    WHERE c.corpus_id = $1 AND {committed("c")} ORDER BY c.chunk_id"""
_POSTINGS = f"""
    SELECT p.term, p.chunk_id, p.tf, p.doc_terms FROM postings p
    WHERE p.corpus_id = $1 AND {committed("p")} ORDER BY p.term"""


async def read_snapshot(pool: asyncpg.Pool, corpus_id: str, max_rows: int) -> Snapshot | TooLarge | None:
    """The corpus's committed chunks, postings and term statistics, in one transaction's view."""
    async with pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
        corpus = await corpus_row(conn, corpus_id)
        if corpus is None:
            return None
        version = version_of(corpus)
        if corpus["chunk_count"] > max_rows:
            return TooLarge(version)
        rows = [chunk_row(r) for r in await conn.fetch(_ROWS, corpus_id)]
        records = await conn.fetch(_POSTINGS, corpus_id)
        df = {
            r["term"]: int(r["df"])
            for r in await conn.fetch("SELECT term, df FROM term_stats WHERE corpus_id = $1", corpus_id)
        }
    if len(rows) > max_rows:
        return TooLarge(version)
    position = {row.chunk_id: i for i, row in enumerate(rows)}
    terms = [r["term"] for r in records]
    chunks = np.fromiter((position[r["chunk_id"]] for r in records), dtype=np.int32, count=len(records))
    tf = np.fromiter((r["tf"] for r in records), dtype=np.float64, count=len(records))
    doc_terms = np.fromiter((r["doc_terms"] for r in records), dtype=np.float64, count=len(records))
    postings: dict[str, Postings] = {}
    start = 0
    for end in range(1, len(terms) + 1):
        if end == len(terms) or terms[end] != terms[start]:
            order = np.argsort(chunks[start:end], kind="stable") + start
            postings[terms[start]] = Postings(chunks[order], tf[order], doc_terms[order])
            start = end
    return Snapshot(
        version=version,
        n=float(corpus["chunk_count"]),
        avgdl=max(float(corpus["avg_chunk_terms"] or 0.0), 1.0),
        rows=rows,
        postings=postings,
        df=df,
    )


def bm25_any_in_memory(snapshot: Snapshot, terms: list[str], k1: float, b: float, top_k: int) -> Bm25Result:
    """bm25_any's answer for an unfiltered search, from the snapshot."""
    if not terms or not snapshot.rows:
        return Bm25Result([])
    score = np.zeros(len(snapshot.rows), dtype=np.float64)
    hit = np.zeros(len(snapshot.rows), dtype=bool)
    for term in terms:  # a term given twice counts twice, as in the statement
        postings = snapshot.postings.get(term)
        if postings is None:
            continue
        df = snapshot.df.get(term, 0)
        idf = np.log(1 + (snapshot.n - df + 0.5) / (df + 0.5))
        tf = postings.tf
        score[postings.chunks] += (
            idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * postings.doc_terms / snapshot.avgdl))
        )
        hit[postings.chunks] = True
    found = np.flatnonzero(hit)
    ranked = np.round(score[found], SCORE_DIGITS)
    top = found[np.lexsort((found, -ranked))[:top_k]]  # best rounded score, then chunk id
    # which query terms each answer holds, a term at a time (sorted, as the statement's array_agg)
    held = [
        (term, _holds(postings.chunks, top))
        for term in sorted(set(terms))
        if (postings := snapshot.postings.get(term)) is not None
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
