"""Dense search: nearest chunk embeddings by pgvector HNSW, filters applied inside the SQL."""

from __future__ import annotations

import asyncpg
import numpy as np

from tribrid.config import VectorConfig
from tribrid.search_common import ScoredChunk, SearchParams, chunk_filter
from tribrid.stores.postgres import CHUNK_COLUMNS, chunk_row

# distance operator, and how to turn a distance into a similarity (higher = better)
_METRIC_SQL = {
    "cosine": ("<=>", "1 - ({d})"),
    "l2": ("<->", "-({d})"),
    "inner_product": ("<#>", "-({d})"),  # pgvector's <#> is the negated inner product
}


def build_query(cfg: VectorConfig, params: SearchParams) -> tuple[str, list[object]]:
    op, to_similarity = _METRIC_SQL[cfg.metric]
    flt = chunk_filter(params, first_arg=4)
    distance = f"c.embedding {op} $2"
    sql = f"""
        SELECT {", ".join("c." + col for col in CHUNK_COLUMNS.split(", "))},
               {to_similarity.format(d=distance)} AS score
        FROM chunks c
        WHERE c.corpus_id = $1{flt.sql()}
        ORDER BY {distance}
        LIMIT $3"""
    return sql, flt.args


async def vector_search(
    pool: asyncpg.Pool,
    cfg: VectorConfig,
    params: SearchParams,
    query_vector: np.ndarray,
    ef_search: int,
    similarity_threshold: float,
) -> list[ScoredChunk]:
    sql, filter_args = build_query(cfg, params)
    async with pool.acquire() as conn, conn.transaction():
        # ef_search must cover top_k, or HNSW returns fewer rows than asked for.
        await conn.execute(
            "SELECT set_config('hnsw.ef_search', $1, true),"
            " set_config('hnsw.iterative_scan', 'strict_order', true)",
            str(max(ef_search, params.top_k)),
        )
        rows = await conn.fetch(sql, params.corpus_id, query_vector, params.top_k, *filter_args)
    return [
        ScoredChunk(chunk_row(r), float(r["score"]))
        for r in rows
        if float(r["score"]) >= similarity_threshold
    ]
