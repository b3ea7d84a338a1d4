"""BM25 inside PostgreSQL over the `postings` inverted index (term, chunk, tf, chunk length).

score(d, q) = sum over query terms t of
    idf(t) * tf(t,d) * (k1 + 1) / (tf(t,d) + k1 * (1 - b + b * |d| / avgdl))
with idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5)) (the Lucene form, never negative), where
N, avgdl (`corpora.chunk_count`, `corpora.avg_chunk_terms`) and df (`term_stats`), all kept by
the indexer's commit, are per corpus. Filters restrict results, not statistics.

Each mode is one SQL statement:
- any (the default): every chunk holding any query term, ranked by BM25 alone, with exact top-k
  pruning (MaxScore, Turtle and Flood 1995). A term adds at most idf * (k1 + 1) to a chunk's score.
  A bar is set by scoring a few chunks of the rarest terms exactly (the top_k-th best of them).
  The commonest terms whose bounds sum below that bar cannot put a chunk in the top k alone: only
  the postings of the other terms are read in full, and the common ones are looked up for the
  chunks that can still reach the bar. The bar is then raised to the top_k-th exact score of the
  best partial scores. The result is the unpruned statement's (`build_plain_query` with no term
  required), exact ties ordered by chunk id. Queries whose terms have few postings are not pruned
  (`PRUNE_FROM_POSTINGS`). Statement time, bench-scale questions: 16 -> 7 ms median at 10k
  chunks, 110 -> 16 ms at 100k, where common terms have up to 50k postings each.
- plain: candidates come from the postings of the query terms; a chunk must hold every required
  term. If none does, the rarest required terms are dropped (up to `relax_max_terms`): a chunk's
  relaxation level is how many of the rarest terms must go before it holds the rest, and the
  statement keeps the chunks of the lowest level. With `any_term_fallback`, the rest of top_k is
  filled with the best-scoring chunks that hold only some terms (plain any-term BM25), so a
  natural-language query still gives fusion a full list; they always rank after the matches.
- phrase / boolean: the GIN index on `chunks.tsv` finds the chunks matching a tsquery (phrases
  checked on positions), and BM25 over the positive terms ranks them.
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from tribrid.search_common import ScoredChunk, SearchParams, chunk_filter
from tribrid.stores.postgres import CHUNK_COLUMNS, chunk_row
from tribrid.text import QueryTerms, TsQuery

# Relaxation levels are bit masks over the required terms' rarity ranks, in a bigint; a level is
# the highest bit of a mask, taken with float8 logarithms, which are exact below 2^40.
MAX_REQUIRED_TERMS = 40

_COLS = ", ".join("c." + col for col in CHUNK_COLUMNS.split(", "))

_STATS = """
    corpus AS (
        SELECT chunk_count::float8 AS n, greatest(avg_chunk_terms, 1.0) AS avgdl, generation
        FROM corpora WHERE corpus_id = $1
    ), q AS (
        SELECT t.term, t.req, t.ord FROM unnest($2::text[], $3::bool[]) WITH ORDINALITY AS t(term, req, ord)
    ), df AS MATERIALIZED (
        SELECT q.term, q.req, q.ord, coalesce(ts.df, 0) AS df
        FROM q LEFT JOIN term_stats ts ON ts.corpus_id = $1 AND ts.term = q.term
    ), idf AS (
        SELECT df.term, df.req, ln(1 + (corpus.n - df.df + 0.5) / (df.df + 0.5)) AS idf,
               CASE WHEN df.req THEN row_number() OVER (PARTITION BY df.req ORDER BY df.df, df.ord) END
                   AS rarity
        FROM df, corpus
    )"""

_BM25 = (
    "sum(idf.idf * p.tf * ($4::float8 + 1)"
    " / (p.tf + $4::float8 * (1 - $5::float8 + $5::float8 * p.doc_terms / corpus.avgdl)))"
)


# Connection settings for the sparse leg's own pool. The planner estimates a handful of postings
# per term (it cannot see which terms), so it would sort thousands of rows by chunk id to group
# them; hash-grouping is what those row counts want. Each statement is planned once per connection
# (a generic plan): planning it for its terms took a third of a typical statement's time, and its
# shape does not depend on them (df is read from term_stats, not counted by a per-term subplan
# that a generic plan turned into a scan of the whole corpus). Eval query mix, 10k chunks: median
# statement 2.65 -> 2.20 ms, p99 9.5 -> 9.4 ms; phrase, boolean and filtered queries also faster.
SESSION_SETTINGS = {"enable_sort": "off", "plan_cache_mode": "force_generic_plan"}

# The 1-based position of the highest set bit of a non-negative bigint (0 for 0).
_HIGHEST_BIT = "CASE WHEN {x} = 0 THEN 0 ELSE floor(ln(({x})::float8) / ln(2::float8))::int + 1 END"


def _matched(terms: str) -> str:
    """Which of `terms` a top row holds (for explain), sorted: one index probe per term, for the
    few rows returned, not while scoring."""
    return f"""(SELECT array_agg(p.term ORDER BY p.term) FROM postings p
                WHERE p.corpus_id = $1 AND p.chunk_id = top.chunk_id AND p.generation = top.generation
                  AND p.term = ANY({terms}))"""


# The query terms a top row holds (plain and tsquery modes).
_MATCHED = _matched("$2::text[]")


def build_plain_query(params: SearchParams) -> tuple[str, list[object]]:
    """Arguments: $1 corpus, $2 terms, $3 required flags, $4 k1, $5 b, $6 top_k, $7 relax_max_terms,
    $8 any-term fallback, then the filter's."""
    flt = chunk_filter(params, first_arg=9)
    if flt.clauses:
        join = (
            "JOIN chunks c ON c.corpus_id = $1 AND c.chunk_id = s.chunk_id AND c.generation = s.generation"
            f" WHERE true{flt.sql()}"
        )
    else:
        join = ""
    # A chunk's level: the rarity rank of the least rare required term it lacks (0: it has them all).
    level = _HIGHEST_BIT.format(x="(SELECT m FROM full_mask) # s.mask")
    sql = f"""
        WITH {_STATS}, scored AS (
            SELECT p.chunk_id, p.generation, {_BM25} AS score,
                   coalesce(bit_or(1::bigint << (idf.rarity - 1)::int) FILTER (WHERE idf.req), 0::bigint)
                       AS mask
            FROM postings p JOIN idf ON idf.term = p.term CROSS JOIN corpus
            WHERE p.corpus_id = $1 AND p.term = ANY($2::text[]) AND p.generation <= corpus.generation
            GROUP BY p.chunk_id, p.generation  -- one generation per chunk is committed at a time
        ), full_mask AS (
            SELECT (1::bigint << count(*)::int) - 1 AS m FROM q WHERE q.req
        ), leveled AS (
            SELECT s.chunk_id, s.generation, s.score, {level} AS level
            FROM scored s {join}
        ), pick AS MATERIALIZED (  -- once: inlined, it was re-aggregated for every row
            SELECT min(level) AS lvl FROM leveled
        ), top AS (
            -- the (relaxed) matches first; with the any-term fill, the best partial ones after them
            SELECT l.*, (pick.lvl <= $7 AND l.level = pick.lvl) AS is_match FROM leveled l, pick
            WHERE (pick.lvl <= $7 AND l.level = pick.lvl) OR $8
            ORDER BY is_match DESC, l.score DESC, l.chunk_id
            LIMIT $6
        )
        SELECT {_COLS}, top.score, {_MATCHED} AS matched, top.level,
               (SELECT array_agg(term ORDER BY rarity) FROM idf WHERE req) AS by_rarity
        FROM top
        JOIN chunks c ON c.corpus_id = $1 AND c.chunk_id = top.chunk_id AND c.generation = top.generation
        ORDER BY top.is_match DESC, top.score DESC, top.chunk_id"""
    return sql, flt.args


# Chunks of the rarest terms scored exactly to set the first bar (one index probe per query term
# each); the best partial scores made exact to raise it: HEAD_FACTOR * top_k of them.
SEED_CHUNKS = 64
HEAD_FACTOR = 4
# Below this many postings of the query's terms (their document frequencies' sum) there are no
# seeds, so no term is skipped: the probes cost more than reading every posting. Measured on the
# 10k scale corpus and click: the pruned statement is faster from about 3,000 postings on.
PRUNE_FROM_POSTINGS = 3000
# The any-term statement reads which query terms a top chunk holds from the postings it scores
# with, as bits of a bigint for the first HELD_BITS terms: looking them up again, an index probe
# per term and returned row, was a third of the statement's time on a small corpus.
HELD_BITS = 64
# Float sums of the same terms in another order differ in the last bits: scores are ranked rounded,
# so exact ties stay in chunk-id order whatever a plan's summation order, and the bars leave
# that much room.
SCORE_DIGITS = 9
_SLACK = "(1 - 1e-9)"
_CONTRIB = (
    "p.tf * ($3::float8 + 1)"
    " / (p.tf + $3::float8 * (1 - $4::float8 + $4::float8 * p.doc_terms / corpus.avgdl))"
)


def build_any_query(params: SearchParams) -> tuple[str, list[object]]:
    """Any-term BM25 with MaxScore pruning (see the module's docstring). Arguments: $1 corpus,
    $2 terms, $3 k1, $4 b, $5 top_k, $6 seed chunks, $7 the fewest postings worth pruning, then
    the filter's."""
    flt = chunk_filter(params, first_arg=8, alias="f")

    def kept(alias: str) -> str:
        if not flt.clauses:
            return ""
        return (
            f" AND EXISTS (SELECT 1 FROM chunks f WHERE f.corpus_id = $1 AND f.chunk_id = {alias}.chunk_id"
            f" AND f.generation = {alias}.generation{flt.sql()})"
        )

    def exact(alias: str, terms: str) -> str:
        """What `terms` add to the score of the chunk `alias`, by one index probe per term."""
        return f"""(SELECT sum(st.idf * {_CONTRIB})
                    FROM postings p JOIN st ON st.term = p.term CROSS JOIN corpus
                    WHERE p.corpus_id = $1 AND p.term = ANY({terms}) AND p.chunk_id = {alias}.chunk_id
                      AND p.generation = {alias}.generation)"""

    rest = "(SELECT rest FROM split)::text[]"
    sql = f"""
        WITH corpus AS MATERIALIZED (
            SELECT chunk_count::float8 AS n, greatest(avg_chunk_terms, 1.0) AS avgdl, generation
            FROM corpora WHERE corpus_id = $1
        ), st AS MATERIALIZED (
            SELECT t.term, t.ord, coalesce(ts.df, 0) AS df,
                   ln(1 + (corpus.n - coalesce(ts.df, 0) + 0.5) / (coalesce(ts.df, 0) + 0.5)) AS idf
            FROM unnest($2::text[]) WITH ORDINALITY AS t(term, ord) CROSS JOIN corpus
            LEFT JOIN term_stats ts ON ts.corpus_id = $1 AND ts.term = t.term
        ), seeds AS MATERIALIZED (  -- chunks of the rarest terms first
            SELECT DISTINCT s.chunk_id, s.generation FROM (
                SELECT p.chunk_id, p.generation
                FROM (SELECT term FROM st WHERE df > 0 AND (SELECT sum(df) FROM st) >= $7 ORDER BY df, ord) r
                CROSS JOIN LATERAL (
                    SELECT p.chunk_id, p.generation FROM postings p, corpus
                    WHERE p.corpus_id = $1 AND p.term = r.term AND p.generation <= corpus.generation
                    LIMIT $6) p
                LIMIT $6) s
        ), seed_bar AS MATERIALIZED (
            SELECT coalesce((SELECT {exact("s", "$2::text[]")} AS score FROM seeds s WHERE true{kept("s")}
                             ORDER BY score DESC OFFSET $5 - 1 LIMIT 1), 0) * {_SLACK} AS t
        ), bound AS MATERIALIZED (  -- the sum of the bounds of this term and every commoner one
            SELECT st.term, sum(st.idf * ($3::float8 + 1)) OVER (ORDER BY st.idf, st.ord) AS cum FROM st
        ), split AS MATERIALIZED (
            SELECT coalesce(array_agg(b.term) FILTER (WHERE b.cum >= seed_bar.t), '{{}}') AS essential,
                   coalesce(array_agg(b.term ORDER BY b.cum) FILTER (WHERE b.cum < seed_bar.t), '{{}}')
                       AS rest,
                   coalesce(max(b.cum) FILTER (WHERE b.cum < seed_bar.t), 0) AS rest_bound
            FROM bound b, seed_bar
        ), cand AS MATERIALIZED (
            SELECT p.chunk_id, p.generation, sum(st.idf * {_CONTRIB}) AS partial,
                   coalesce(bit_or(1::bigint << (st.ord - 1)::int) FILTER (WHERE st.ord <= {HELD_BITS}), 0)
                       AS held
            FROM postings p JOIN st ON st.term = p.term CROSS JOIN corpus
            WHERE p.corpus_id = $1 AND p.term = ANY((SELECT essential FROM split)::text[])
              AND p.generation <= corpus.generation
            GROUP BY p.chunk_id, p.generation  -- one generation per chunk is committed at a time
        ), bar AS MATERIALIZED (
            SELECT greatest(seed_bar.t, coalesce((
                SELECT h.partial + coalesce({exact("h", rest)}, 0) AS score
                FROM (SELECT * FROM cand ORDER BY partial DESC LIMIT {HEAD_FACTOR} * $5) h
                WHERE true{kept("h")}
                ORDER BY score DESC OFFSET $5 - 1 LIMIT 1), 0) * {_SLACK}) AS t
            FROM seed_bar
        ), scored AS (
            SELECT c.chunk_id, c.generation, c.held, c.partial + coalesce({exact("c", rest)}, 0) AS score
            FROM cand c, split, bar
            WHERE c.partial + split.rest_bound >= bar.t{kept("c")}
        ), top AS (
            SELECT chunk_id, generation, held, score, round(score::numeric, {SCORE_DIGITS}) AS ranked
            FROM scored
            ORDER BY ranked DESC, chunk_id
            LIMIT $5
        )
        SELECT {_COLS}, top.score, top.held,
               -- the other terms a top chunk holds, looked up only when there are any
               CASE WHEN cardinality(unread.terms) > 0 THEN {_matched("unread.terms")} END AS unread_held,
               (SELECT rest FROM split) AS skipped
        FROM top CROSS JOIN (
            SELECT (SELECT rest FROM split)::text[] || ($2::text[])[{HELD_BITS} + 1:] AS terms
        ) unread
        JOIN chunks c ON c.corpus_id = $1 AND c.chunk_id = top.chunk_id AND c.generation = top.generation
        ORDER BY top.ranked DESC, top.chunk_id"""
    return sql, flt.args


def build_tsquery_query(params: SearchParams) -> tuple[str, list[object]]:
    """Arguments: $1 corpus, $2 terms, $3 required flags (unused but typed), $4 k1, $5 b, $6 top_k,
    $7 tsquery text, then the filter's."""
    flt = chunk_filter(params, first_arg=8)
    sql = f"""
        WITH {_STATS}, cand AS (
            SELECT c.chunk_id, c.generation FROM chunks c, corpus
            WHERE c.corpus_id = $1 AND c.generation <= corpus.generation AND c.tsv @@ $7::tsquery{flt.sql()}
        ), top AS (
            SELECT p.chunk_id, p.generation, {_BM25} AS score
            FROM cand
            JOIN postings p ON p.corpus_id = $1 AND p.chunk_id = cand.chunk_id
                AND p.generation = cand.generation AND p.term = ANY($2::text[])
            JOIN idf ON idf.term = p.term CROSS JOIN corpus
            GROUP BY p.chunk_id, p.generation
            ORDER BY score DESC, p.chunk_id
            LIMIT $6
        )
        SELECT {_COLS}, top.score, {_MATCHED} AS matched
        FROM top
        JOIN chunks c ON c.corpus_id = $1 AND c.chunk_id = top.chunk_id AND c.generation = top.generation
        ORDER BY top.score DESC, top.chunk_id"""
    return sql, flt.args


def held_terms(terms: list[str], held: int, unread_held: list[str] | None) -> list[str]:
    """The query terms a chunk holds, in code point order (the embedded database's C.UTF-8
    collation sorts them alike): bit i of `held` for terms[i] (the first HELD_BITS), and
    `unread_held`, the others it holds."""
    bits = (term for i, term in enumerate(terms[:HELD_BITS]) if held >> i & 1)
    return sorted({*bits, *(unread_held or ())})


@dataclass(frozen=True, slots=True)
class Bm25Result:
    chunks: list[ScoredChunk]
    dropped: tuple[str, ...] = ()  # required terms relaxed away, rarest first
    any_term: bool = False  # no chunk held enough terms: any-term matches were returned


def bm25_detail(k1: float, b: float, mode: str, matched: list[str], note: str) -> str:
    return f"bm25 k1={k1:g} b={b:g} mode={mode} matched={','.join(matched)}{note}"


async def bm25_plain(
    pool: asyncpg.Pool,
    params: SearchParams,
    terms: QueryTerms,
    k1: float,
    b: float,
    relax_max_terms: int,
    any_term_fallback: bool,
) -> Bm25Result:
    required = list(terms.required[:MAX_REQUIRED_TERMS])
    optional = list(terms.required[MAX_REQUIRED_TERMS:]) + list(terms.bonus)
    if not required and not optional:
        return Bm25Result([])
    sql, filter_args = build_plain_query(params)
    rows = await pool.fetch(
        sql,
        params.corpus_id,
        required + optional,
        [True] * len(required) + [False] * len(optional),
        k1,
        b,
        params.top_k,
        relax_max_terms,
        any_term_fallback,
        *filter_args,
    )
    if not rows:
        return Bm25Result([])
    level = min(int(r["level"]) for r in rows)
    by_rarity: list[str] = list(rows[0]["by_rarity"] or [])
    any_term = level > relax_max_terms
    dropped = tuple(by_rarity[:level]) if not any_term else ()
    if any_term:
        note = f"; any-term fallback: no chunk holds all but the {relax_max_terms} rarest terms"
    elif dropped:
        note = "; relaxed: dropped " + ", ".join(repr(t) for t in dropped) + " (no chunk held every term)"
    else:
        note = ""

    def detail(row: asyncpg.Record) -> str:
        partial = not any_term and int(row["level"]) != level
        row_note = "; partial: some terms missing" if partial else note
        return bm25_detail(k1, b, "plain", list(row["matched"]), row_note)

    return Bm25Result(
        [ScoredChunk(chunk_row(r), float(r["score"]), detail(r)) for r in rows],
        dropped,
        any_term,
    )


async def bm25_any(
    pool: asyncpg.Pool, params: SearchParams, terms: QueryTerms, k1: float, b: float
) -> Bm25Result:
    """Any-term BM25: no term is required, so the ranking is BM25's own (Lucene's OR query)."""
    every = terms.all
    if not every:
        return Bm25Result([])
    sql, filter_args = build_any_query(params)
    rows = await pool.fetch(
        sql, params.corpus_id, every, k1, b, params.top_k, SEED_CHUNKS, PRUNE_FROM_POSTINGS, *filter_args
    )

    def detail(row: asyncpg.Record) -> str:
        skipped = list(row["skipped"])
        note = "; pruned: " + ",".join(skipped) + " read for candidates only" if skipped else ""
        return bm25_detail(k1, b, "any", held_terms(every, row["held"], row["unread_held"]), note)

    return Bm25Result([ScoredChunk(chunk_row(r), float(r["score"]), detail(r)) for r in rows])


async def bm25_tsquery(
    pool: asyncpg.Pool, params: SearchParams, query: TsQuery, mode: str, k1: float, b: float
) -> Bm25Result:
    sql, filter_args = build_tsquery_query(params)
    terms = list(query.terms)
    rows = await pool.fetch(
        sql,
        params.corpus_id,
        terms,
        [False] * len(terms),
        k1,
        b,
        params.top_k,
        query.tsquery,
        *filter_args,
    )
    note = f"; tsquery={query.tsquery}"
    return Bm25Result(
        [
            ScoredChunk(chunk_row(r), float(r["score"]), bm25_detail(k1, b, mode, list(r["matched"]), note))
            for r in rows
        ]
    )
