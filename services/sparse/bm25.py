"""BM25 inside PostgreSQL over the `postings` inverted index (term, chunk, tf, chunk length).

score(d, q) = sum over query terms t of
    idf(t) * tf(t,d) * (k1 + 1) / (tf(t,d) + k1 * (1 - b + b * |d| / avgdl))
with idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5)) (the Lucene form, never negative).
"""

from __future__ import annotations

import asyncpg

from tribrid.search_common import ScoredChunk, SearchParams, chunk_filter
from tribrid.stores.postgres import CHUNK_COLUMNS, chunk_row


def build_query(params: SearchParams) -> tuple[str, list[object]]:
    flt = chunk_filter(params, first_arg=6)
    sql = f"""
        WITH corpus AS (
            SELECT chunk_count::float8 AS n, greatest(avg_chunk_terms, 1.0) AS avgdl
            FROM corpora WHERE corpus_id = $1
        ), idf AS (
            SELECT p.term, ln(1 + (corpus.n - count(*) + 0.5) / (count(*) + 0.5)) AS idf
            FROM postings p, corpus
            WHERE p.corpus_id = $1 AND p.term = ANY($2::text[])
            GROUP BY p.term, corpus.n
        ), scored AS (
            SELECT p.chunk_id,
                   sum(idf.idf * p.tf * ($3 + 1) / (p.tf + $3 * (1 - $4 + $4 * p.doc_terms / corpus.avgdl)))
                       AS score
            FROM postings p JOIN idf ON idf.term = p.term CROSS JOIN corpus
            WHERE p.corpus_id = $1 AND p.term = ANY($2::text[])
            GROUP BY p.chunk_id
        )
        SELECT {", ".join("c." + col for col in CHUNK_COLUMNS.split(", "))}, s.score
        FROM scored s JOIN chunks c ON c.corpus_id = $1 AND c.chunk_id = s.chunk_id
        WHERE true{flt.sql()}
        ORDER BY s.score DESC, c.chunk_id
        LIMIT $5"""
    return sql, flt.args


async def bm25_search(
    pool: asyncpg.Pool, params: SearchParams, terms: list[str], k1: float, b: float
) -> list[ScoredChunk]:
    if not terms:
        return []
    sql, filter_args = build_query(params)
    rows = await pool.fetch(sql, params.corpus_id, terms, k1, b, params.top_k, *filter_args)
    return [ScoredChunk(chunk_row(r), float(r["score"])) for r in rows]
