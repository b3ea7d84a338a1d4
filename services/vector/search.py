"""Dense search: nearest chunk embeddings by pgvector HNSW, filters applied inside the SQL.

The scan settings: `hnsw.ef_search`, iterative scan in relaxed order, `hnsw.max_scan_tuples`, no
sorts where an index can order. A corpus of more than `exact_scan_max_rows` chunks is searched in
an HNSW index of its own rows (tribrid.stores.postgres.corpus_vector_index), which the statement
names the corpus for; a smaller one, or a selective filter, is scanned exactly. Under a filter the
scan goes on in relaxed order, which finds far more of the true nearest rows than strict order at
the same cost (2026-11-24, in one index of 17 corpora: recall 0.95-1.00 against 0.41-0.82); the
few rows found out of order are put back in order by a MATERIALIZED CTE, as pgvector's
documentation advises.

A definition's score blends two similarities: the query's to the chunk's text and to its signature
(qualified name and declaration, embedded on its own at index time), (text + w * signature) / (1 + w)
with w = `signature_weight`. A docstring-like question ("Return the number of ...") matches a
function's name and parameters better than its body, which the text's one vector mostly averages
away. The `signature_candidates` rows nearest by text are re-ordered by the blend.

The common request (no filter, the configured ef_search) is one round trip on the vector leg's
own pool, whose connections start with those settings (`session_settings`): the HNSW query for a
corpus above `exact_scan_max_rows`, the exact scan for a smaller one, with the corpus's model and
size read in the same statement. Every other request, or one that query cannot answer, takes two
statements, in a read-only transaction (the pool's connections go back unreset: see `create_pool`):
- statement 1 sets the settings for this transaction and counts, up to `exact_scan_max_rows` + 1,
  the chunks that corpus and filters allow;
- statement 2 is either the HNSW query (many rows allowed: the iterative scan keeps going until
  top_k rows pass the filters) or, for a selective filter, an exact scan over the allowed rows
  (a MATERIALIZED CTE, which the planner cannot serve from the index). Should HNSW still return
  fewer than top_k rows while more are allowed, the exact scan runs as well.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import asyncpg
import grpc
import numpy as np

from tribrid.config import VectorConfig
from tribrid.options import RequestError, not_found
from tribrid.search_common import ScoredChunk, SearchParams, chunk_filter
from tribrid.stores.postgres import CHUNK_COLUMNS, OPCLASS, chunk_row, committed, literal

# distance operator, and a similarity (higher = better) from the distance `{d}`. For the unit
# vectors every Embedder returns, all three similarities equal the cosine similarity.
METRIC_SQL: dict[str, tuple[str, str]] = {
    "cosine": ("<=>", "1 - ({d})"),
    "l2": ("<->", "1 - ({d}) * ({d}) / 2"),
    "inner_product": ("<#>", "-({d})"),  # pgvector's <#> is the negated inner product
}
METRIC_OF_OPCLASS = {opclass: metric for metric, opclass in OPCLASS.items()}

# what a chunk row holds, and the share of its text the model read (tribrid/coverage.py)
_COLS = ", ".join("c." + col for col in (*CHUNK_COLUMNS.split(", "), "model_coverage"))


def session_settings(cfg: VectorConfig) -> dict[str, str]:
    """The scan settings as connection defaults, for a pool of the vector leg's own.

    The common request's one statement (`build_direct_query`) runs on a generic plan: its shape
    does not depend on its parameters, and under `auto` PostgreSQL kept planning it afresh for a
    corpus scanned exactly (0.35-0.4 ms of the server's CPU per query, 2026-12-02). The
    two-statement path sets `auto` back for its transaction (`build_probe`)."""
    return {
        "hnsw.ef_search": str(cfg.ef_search),
        "hnsw.iterative_scan": "relaxed_order",
        "hnsw.max_scan_tuples": str(cfg.max_scan_tuples),
        "enable_sort": "off",
        "plan_cache_mode": "force_generic_plan",
    }


def _similarities(to_similarity: str) -> str:
    """The text's similarity (`score`) and the signature's (`signature_score`, NULL without one)
    from the distances a `found` CTE kept."""
    text = to_similarity.format(d="c.distance")
    return f"{text} AS score, {to_similarity.format(d='c.signature_distance')} AS signature_score"


@functools.lru_cache(maxsize=1024)  # built once per metric and corpus: it runs on every common request
def build_direct_query(metric: str, corpus_id: str) -> str:
    """$1 corpus, $2 query vector, $3 candidates, $4 exact_scan_max_rows: an unfiltered request in
    one statement. Above $4 rows, the HNSW scan (`plan` 'hnsw'); at most $4, the exact scan of
    the corpus's rows (`plan` 'exact'). Nothing for an unknown or uncommitted corpus. Each row
    carries the corpus's model and chunk count. The HNSW scan names the corpus in the statement's
    text, so that its plan (a generic one too) can use the corpus's own index (see
    `corpus_vector_index`): a statement per corpus."""
    op, to_similarity = METRIC_SQL[metric]
    distance = f"c.embedding {op} $2"
    return f"""
        WITH k AS MATERIALIZED (
            SELECT generation, chunk_count, embedding_model FROM corpora
            WHERE corpus_id = $1 AND generation > 0
        ), found AS MATERIALIZED (
            SELECT {_COLS}, {distance} AS distance, c.signature_embedding {op} $2 AS signature_distance,
                   'hnsw' AS plan
            FROM k
            CROSS JOIN LATERAL (
                SELECT {_COLS}, c.embedding, c.signature_embedding FROM chunks c
                WHERE c.corpus_id = {literal(corpus_id)} AND c.generation <= k.generation
                ORDER BY {distance}
                LIMIT $3
            ) c
            WHERE k.chunk_count > $4
        ), allowed AS MATERIALIZED (  -- materialized: the planner cannot order it by the index
            -- the distance as each row is read: the CTE keeps it, not the 1.5 KB vector
            SELECT c.chunk_id, c.generation, c.embedding {op} $2 AS distance FROM k
            JOIN chunks c ON c.corpus_id = $1 AND c.generation <= k.generation
            WHERE k.chunk_count <= $4
        ), top AS (
            SELECT a.chunk_id, a.generation, a.distance FROM allowed a
            ORDER BY a.distance, a.chunk_id
            LIMIT $3
        ), exact AS (
            SELECT {_COLS}, top.distance, c.signature_embedding {op} $2 AS signature_distance,
                   'exact' AS plan
            FROM top JOIN chunks c
                ON c.corpus_id = $1 AND c.chunk_id = top.chunk_id AND c.generation = top.generation
        )
        SELECT {_COLS}, {_similarities(to_similarity)}, c.plan, k.embedding_model AS model,
               k.chunk_count
        FROM (SELECT * FROM found UNION ALL SELECT * FROM exact) c, k
        ORDER BY c.distance, c.chunk_id"""


def build_probe(params: SearchParams) -> tuple[str, list[object]]:
    """$1 ef_search, $2 max_scan_tuples, $3 corpus, $4 count limit: settings + corpus model + allowed rows."""
    flt = chunk_filter(params, first_arg=5)
    if flt.clauses:
        allowed = f"""(SELECT count(*) FROM (
                   SELECT 1 FROM chunks c
                   WHERE c.corpus_id = $3 AND {committed("c", "$3")}{flt.sql()} LIMIT $4
               ) s)"""
    else:  # every committed chunk: the corpus row keeps that count
        allowed = "(SELECT least(chunk_count, $4) FROM corpora WHERE corpus_id = $3)"
    sql = f"""
        SELECT set_config('hnsw.ef_search', $1, true) AS ef,
               set_config('hnsw.iterative_scan', 'relaxed_order', true) AS iterative,
               set_config('hnsw.max_scan_tuples', $2, true) AS max_tuples,
               -- only the HNSW index yields rows in distance order: with planner statistics
               -- stale after an index run, a bitmap scan + sort could otherwise look cheaper
               set_config('enable_sort', 'off', true) AS no_sort,
               -- a filter's selectivity decides its plan: planned per request, as by default
               set_config('plan_cache_mode', 'auto', true) AS planning,
               (SELECT embedding_model FROM corpora WHERE corpus_id = $3) AS model,
               {allowed} AS allowed"""
    return sql, flt.args


def build_hnsw_query(metric: str, params: SearchParams) -> tuple[str, list[object]]:
    """$1 corpus, $2 query vector, $3 candidates, then the filter's: served by the HNSW index (the
    corpus's own where it has one: named in the text, as in build_direct_query)."""
    op, to_similarity = METRIC_SQL[metric]
    flt = chunk_filter(params, first_arg=4)
    distance = f"c.embedding {op} $2"
    sql = f"""
        WITH found AS MATERIALIZED (
            SELECT {_COLS}, {distance} AS distance, c.signature_embedding {op} $2 AS signature_distance
            FROM chunks c
            WHERE c.corpus_id = {literal(params.corpus_id)} AND {committed("c")}{flt.sql()}
            ORDER BY {distance}
            LIMIT $3
        )
        SELECT {_COLS}, {_similarities(to_similarity)}
        FROM found c
        ORDER BY c.distance, c.chunk_id"""
    return sql, flt.args


def build_exact_query(metric: str, params: SearchParams) -> tuple[str, list[object]]:
    """Same arguments and answer as build_hnsw_query, by an exact scan of the allowed rows."""
    op, to_similarity = METRIC_SQL[metric]
    flt = chunk_filter(params, first_arg=4)
    sql = f"""
        WITH allowed AS MATERIALIZED (  -- the distance kept, not the vector (build_direct_query)
            SELECT c.chunk_id, c.generation, c.embedding {op} $2 AS distance FROM chunks c
            WHERE c.corpus_id = $1 AND {committed("c")}{flt.sql()}
        ), top AS (
            SELECT a.chunk_id, a.generation, a.distance FROM allowed a
            ORDER BY a.distance, a.chunk_id
            LIMIT $3
        )
        SELECT {_COLS}, {to_similarity.format(d="top.distance")} AS score,
               {to_similarity.format(d=f"c.signature_embedding {op} $2")} AS signature_score
        FROM top JOIN chunks c
            ON c.corpus_id = $1 AND c.chunk_id = top.chunk_id AND c.generation = top.generation
        ORDER BY top.distance, top.chunk_id"""
    return sql, flt.args


async def index_metrics(pool: asyncpg.Pool) -> dict[str, str]:
    """The metric each HNSW index of chunks.embedding (a corpus's own) was built for, from its
    operator class, by index name."""
    rows = await pool.fetch(
        "SELECT indexname, indexdef FROM pg_indexes"
        " WHERE tablename = 'chunks' AND indexdef LIKE '%USING hnsw%'"
    )
    metrics = {}
    for row in rows:
        opclass = re.search(r"\(embedding (\w+)\)", row["indexdef"])
        if opclass and opclass.group(1) in METRIC_OF_OPCLASS:
            metrics[row["indexname"]] = METRIC_OF_OPCLASS[opclass.group(1)]
    return metrics


@dataclass(frozen=True, slots=True)
class VectorResult:
    chunks: list[ScoredChunk]
    # none: nothing to search for; memory: the exact scan of a small corpus kept in memory
    plan: Literal["hnsw", "exact", "hnsw+exact", "memory", "none"]
    allowed: int  # rows corpus and filters allow, counted up to exact_scan_max_rows + 1
    statements: int = 0  # SQL statements it took
    # the mean share of its answers' texts the model read; None when no answer's was measured
    coverage: float | None = None


async def vector_search(
    pool: asyncpg.Pool,
    cfg: VectorConfig,
    params: SearchParams,
    query_vector: np.ndarray,
    embedding_model: str | None = None,
    pool_settings: Mapping[str, str] | None = None,
) -> VectorResult:
    """Top-k chunks by similarity (a definition's blended with its signature's), at least
    `cfg.similarity_threshold`, best first.

    `pool_settings`: what the pool's connections start with (`session_settings`), if anything.
    Raises NOT_FOUND for an unknown corpus, FAILED_PRECONDITION when the corpus was
    embedded by another model than `embedding_model` (if given).
    """
    candidates = max(params.top_k, cfg.signature_candidates if cfg.signature_weight > 0 else 0)
    ef = max(cfg.ef_search, candidates)  # ef_search must cover the rows asked, or HNSW returns fewer
    detail = scan_detail(cfg, params.top_k)
    direct = (
        pool_settings is not None
        and pool_settings.get("hnsw.ef_search") == str(ef)
        and not chunk_filter(params, first_arg=1).clauses
    )
    if direct:
        rows = await pool.fetch(
            build_direct_query(cfg.metric, params.corpus_id),
            params.corpus_id,
            query_vector,
            candidates,
            cfg.exact_scan_max_rows,
        )
        # else: an unknown or empty corpus, or an HNSW scan that stopped short
        if rows and (rows[0]["plan"] == "exact" or len(rows) == candidates):
            check_model(params.corpus_id, rows[0]["model"], embedding_model)
            plan = rows[0]["plan"]
            chunks = _scored(rows, cfg, params.top_k, detail.format(plan=plan))
            allowed = min(rows[0]["chunk_count"], cfg.exact_scan_max_rows + 1)  # as the probe counts
            return VectorResult(chunks, plan, allowed, 1, answers_coverage(_coverages(rows), chunks))
    plan, allowed, rows = await _search_in_two(
        pool, cfg, params, query_vector, ef, candidates, embedding_model
    )
    statements = int(direct) + (3 if plan == "hnsw+exact" else 2)
    chunks = _scored(rows, cfg, params.top_k, detail.format(plan=plan))
    return VectorResult(chunks, plan, allowed, statements, answers_coverage(_coverages(rows), chunks))


def scan_detail(cfg: VectorConfig, top_k: int) -> str:
    """An answer's explain, with `{plan}` to fill in."""
    candidates = max(top_k, cfg.signature_candidates if cfg.signature_weight > 0 else 0)
    blend = f", signature weight {cfg.signature_weight:g}" if cfg.signature_weight > 0 else ""
    return f"{cfg.metric} similarity{blend}; plan={{plan}} ef_search={max(cfg.ef_search, candidates)}"


def blended_score(text: float, signature: float | None, weight: float) -> float:
    """A chunk's score: its text's similarity, blended with its signature's when it has one."""
    return text if signature is None else (text + weight * signature) / (1 + weight)


def answers_coverage(shares: Mapping[str, float | None], chunks: list[ScoredChunk]) -> float | None:
    """The mean `model_coverage` (by chunk id in `shares`) of the answered chunks, over those measured."""
    measured = [share for c in chunks if (share := shares.get(c.chunk.chunk_id)) is not None]
    return sum(measured) / len(measured) if measured else None


def _coverages(rows: list[asyncpg.Record]) -> dict[str, float | None]:
    return {r["chunk_id"]: r["model_coverage"] for r in rows}


def _scored(rows: list[asyncpg.Record], cfg: VectorConfig, top_k: int, detail: str) -> list[ScoredChunk]:
    """The top_k rows by blended score, at least `similarity_threshold`; ties keep the text's order."""
    scored = [
        ScoredChunk(
            chunk_row(r), blended_score(r["score"], r["signature_score"], cfg.signature_weight), detail
        )
        for r in rows
    ]
    scored.sort(key=lambda hit: -hit.score)  # stable
    return [hit for hit in scored[:top_k] if hit.score >= cfg.similarity_threshold]


def check_model(corpus_id: str, model: str | None, embedding_model: str | None) -> None:
    if model is None:
        raise not_found(f"corpus {corpus_id!r} not found: index it first")
    if embedding_model is not None and model != embedding_model:
        raise RequestError(
            grpc.StatusCode.FAILED_PRECONDITION,
            f"corpus {corpus_id!r} was embedded with {model!r} but this vector "
            f"service embeds queries with {embedding_model!r}: re-index it or configure that model",
        )


async def _search_in_two(
    pool: asyncpg.Pool,
    cfg: VectorConfig,
    params: SearchParams,
    query_vector: np.ndarray,
    ef: int,
    candidates: int,
    embedding_model: str | None,
) -> tuple[Literal["hnsw", "exact", "hnsw+exact"], int, list[asyncpg.Record]]:
    metric = cfg.metric
    probe_sql, probe_args = build_probe(params)
    args: list[object] = [params.corpus_id, query_vector, candidates]
    # The probe's settings are transaction-local: the pool's connections go back unreset.
    async with pool.acquire() as conn, conn.transaction(readonly=True):
        probe = await conn.fetchrow(
            probe_sql,
            str(ef),
            str(cfg.max_scan_tuples),
            params.corpus_id,
            cfg.exact_scan_max_rows + 1,
            *probe_args,
        )
        assert probe is not None
        check_model(params.corpus_id, probe["model"], embedding_model)
        allowed = int(probe["allowed"])
        plan: Literal["hnsw", "exact", "hnsw+exact"]
        if allowed <= cfg.exact_scan_max_rows:
            sql, filter_args = build_exact_query(metric, params)
            rows = await conn.fetch(sql, *args, *filter_args)
            plan = "exact"
        else:
            sql, filter_args = build_hnsw_query(metric, params)
            rows = await conn.fetch(sql, *args, *filter_args)
            plan = "hnsw"
            if len(rows) < candidates:  # the scan hit max_scan_tuples before enough rows passed
                sql, filter_args = build_exact_query(metric, params)
                rows = await conn.fetch(sql, *args, *filter_args)
                plan = "hnsw+exact"
    return plan, allowed, rows
