"""The sparse leg's pruned any-term statement (MaxScore) against the unpruned one on real code:
the same chunks with the same scores, exact ties in chunk-id order, with and without filters,
and with other k1 and b."""

from __future__ import annotations

import asyncpg
import pytest

from services.sparse.bm25 import (
    PRUNE_FROM_POSTINGS,
    SEED_CHUNKS,
    SESSION_SETTINGS,
    build_any_query,
    build_plain_query,
    held_terms,
)
from tests.integration.conftest import CODE
from tests.stack import Stack
from tribrid.search_common import SearchParams
from tribrid.text import STOPWORDS, parse_query

EVERY = 5000  # more than any question here matches
K1, B = 1.2, 0.6


async def both(
    pool: asyncpg.Pool,
    params: SearchParams,
    terms: list[str],
    prune_from: int = 0,
    k1: float = K1,
    b: float = B,
) -> tuple[list[asyncpg.Record], list[asyncpg.Record]]:
    """Every match by the unpruned statement, and the pruned statement's top_k (pruning from
    `prune_from` postings)."""
    unpruned_sql, filter_args = build_plain_query(params)
    no_term_required = [False] * len(terms)
    every = await pool.fetch(
        unpruned_sql, params.corpus_id, terms, no_term_required, k1, b, EVERY, 0, False, *filter_args
    )
    assert len(every) < EVERY
    pruned_sql, filter_args = build_any_query(params)
    pruned = await pool.fetch(
        pruned_sql, params.corpus_id, terms, k1, b, params.top_k, SEED_CHUNKS, prune_from, *filter_args
    )
    return every, pruned


def assert_same_ranking(
    every: list[asyncpg.Record], pruned: list[asyncpg.Record], top_k: int, what: str, terms: list[str]
) -> None:
    """The pruned top_k is the unpruned ranking's, ranked by score (to 9 decimals), then chunk id:
    the same scores at every rank and the same chunks, a tie group cut by top_k cut alike; and
    each chunk holds the same query terms (the unpruned statement looks them up, the pruned one
    keeps them from its postings, as bits for the first 64 terms)."""
    ranked = sorted(
        ((round(r["score"], 9), r["chunk_id"]) for r in every), key=lambda item: (-item[0], item[1])
    )
    assert [(round(r["score"], 9), r["chunk_id"]) for r in pruned] == ranked[:top_k], what
    held = {r["chunk_id"]: list(r["matched"]) for r in every}
    for row in pruned:
        assert held_terms(terms, row["held"], row["unread_held"]) == held[row["chunk_id"]], what


async def test_pruned_statement_ranks_like_the_unpruned_one_on_real_code(
    stack: Stack, code_corpus: list[str]
) -> None:
    pool = await stack.resources.pool(SESSION_SETTINGS)
    pruned_any = 0
    compared = 0
    for query in code_corpus:
        terms = list(parse_query(query, STOPWORDS, True).all)
        if not terms:
            continue
        for top_k, path_regex, languages in [(10, None, ()), (30, None, ()), (10, "core|types", ("python",))]:
            params = SearchParams(CODE, query, top_k, path_regex, languages)
            every, pruned = await both(pool, params, terms)
            assert_same_ranking(every, pruned, top_k, f"{query!r} top_k={top_k} path={path_regex}", terms)
            if path_regex:
                assert all(r["file_path"] in {"click/core.py", "click/types.py"} for r in pruned)
            compared += 1
            pruned_any += bool(pruned and pruned[0]["skipped"])
    assert compared >= 200
    # the commonest terms are left out of the full scan for most questions, or nothing is pruned
    assert pruned_any >= compared // 3, (pruned_any, compared)


@pytest.mark.parametrize(("k1", "b"), [(0.0, 0.6), (3.0, 1.0), (1.2, 0.0)])
async def test_pruned_statement_with_other_bm25_parameters(
    stack: Stack, code_corpus: list[str], k1: float, b: float
) -> None:
    """A request's own k1 and b move every bound: with k1 = 0 a term adds exactly its bound."""
    pool = await stack.resources.pool(SESSION_SETTINGS)
    pruned_any = 0
    for query in code_corpus[:30]:
        terms = list(parse_query(query, STOPWORDS, True).all)
        every, pruned = await both(pool, SearchParams(CODE, query, 10, None, ()), terms, 0, k1, b)
        assert_same_ranking(every, pruned, 10, f"{query!r} k1={k1} b={b}", terms)
        pruned_any += bool(pruned and pruned[0]["skipped"])
    assert pruned_any > 0


@pytest.mark.parametrize(
    "query",
    ["parse config file", "hand zzyzx settings", "HTTPServer", "zzyzx", "cfg .py", "parse parse parse"],
)
@pytest.mark.parametrize("top_k", [1, 3, 50])
@pytest.mark.parametrize("prune_from", [0, PRUNE_FROM_POSTINGS])
async def test_pruned_statement_on_a_handful_of_chunks(
    stack: Stack, few_chunks: str, query: str, top_k: int, prune_from: int
) -> None:
    """Fewer chunks than top_k, one term, unknown terms, a single best chunk: the pruned statement
    must not lose a chunk for them, pruning or not (too few postings to be worth it)."""
    pool = await stack.resources.pool(SESSION_SETTINGS)
    terms = list(parse_query(query, STOPWORDS, True).all)
    every, pruned = await both(pool, SearchParams(few_chunks, query, top_k, None, ()), terms, prune_from)
    assert_same_ranking(every, pruned, top_k, query, terms)
    if prune_from:
        assert all(not r["skipped"] for r in pruned)
    if query == "zzyzx":
        assert pruned == []


async def test_terms_past_the_first_64_are_named_as_held_too(stack: Stack, code_corpus: list[str]) -> None:
    """A question of more terms than the bits kept: a chunk's terms beyond the 64th are looked up
    (here `context` and `command`, at the end), with and without pruning."""
    pool = await stack.resources.pool(SESSION_SETTINGS)
    filler = [f"zq{a}{b}" for a in "bcdfghjk" for b in "bcdfghjklmnpqrstvwxz"][:70]  # in no chunk
    query = " ".join([*filler, "context", "command"])
    terms = list(parse_query(query, STOPWORDS, True).all)
    assert len(terms) > 64 and terms.index("command") >= 64
    for prune_from in (0, PRUNE_FROM_POSTINGS):
        every, pruned = await both(pool, SearchParams(CODE, query, 10, None, ()), terms, prune_from)
        assert_same_ranking(every, pruned, 10, f"prune_from={prune_from}", terms)
        assert any(held_terms(terms, r["held"], r["unread_held"]) == ["command", "context"] for r in pruned)
