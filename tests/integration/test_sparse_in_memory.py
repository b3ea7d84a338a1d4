"""Any-term BM25 from the sparse leg's memory against the SQL statement on real code and on a
handful of chunks: the same chunks in the same order, the same scores and matched terms, for
other k1 and b too; the servicer answers alike with and without it."""

from __future__ import annotations

import re

import pytest

from services.sparse.bm25 import SESSION_SETTINGS, Bm25Result, bm25_any
from services.sparse.in_memory import (
    _POSTINGS,
    READ_SETTINGS,
    Snapshot,
    bm25_any_in_memory,
    read_snapshot,
)
from services.sparse.service import SparseServicer
from tests.integration.conftest import CODE
from tests.stack import Stack
from tribrid.search_common import SearchParams
from tribrid.stores.corpus_versions import CorpusVersions
from tribrid.stores.small_corpora import Limits, SmallCorpora, TooLarge
from tribrid.text import STOPWORDS, parse_query
from tribrid.v1 import common_pb2, sparse_options_pb2


def same_answer(sql: Bm25Result, memory: Bm25Result, what: str) -> None:
    assert [c.chunk for c in memory.chunks] == [c.chunk for c in sql.chunks], what
    assert [c.score for c in memory.chunks] == pytest.approx([c.score for c in sql.chunks], abs=1e-9), what
    # nothing is pruned in memory: the explain is the statement's but for its note on pruning
    assert [c.detail for c in memory.chunks] == [re.sub(r"; pruned: .*", "", c.detail) for c in sql.chunks]


async def snapshot_of(stack: Stack, corpus: str) -> Snapshot:
    # the leg's own pool, with its session settings (no sorts, generic plans)
    read = await read_snapshot(
        await stack.resources.pool(SESSION_SETTINGS, search=True), corpus, Limits(100_000, 1 << 30)
    )
    assert isinstance(read, Snapshot)
    return read


async def test_a_corpus_over_the_budget_is_not_read(
    stack: Stack,
    code_corpus: list[str],
) -> None:
    """Its size is known from its term statistics before its postings are read: the least size a
    snapshot of them can have, which is its size when every tf fits 16 bits (as in click)."""
    pool = await stack.resources.pool(SESSION_SETTINGS, search=True)
    size = (await snapshot_of(stack, CODE)).nbytes
    assert isinstance(await read_snapshot(pool, CODE, Limits(100_000, size)), Snapshot)
    over = await read_snapshot(pool, CODE, Limits(100_000, size - 1))
    assert isinstance(over, TooLarge) and over.version == (await snapshot_of(stack, CODE)).version


async def test_the_postings_read_joins_by_hash_under_the_legs_settings(
    stack: Stack,
    code_corpus: list[str],
) -> None:
    """Under the leg's `enable_sort = off` the read's aggregation joined postings to chunks by a
    nested loop, every posting against every chunk (the 10k bench corpus ran past the 30 s
    timeout); the read turns sorting on for its own transaction."""
    pool = await stack.resources.pool(SESSION_SETTINGS, search=True)
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute(READ_SETTINGS)
        plan = "\n".join(r[0] for r in await conn.fetch("EXPLAIN " + _POSTINGS, CODE))
    assert "Hash Join" in plan and "Nested Loop" not in plan, plan


@pytest.mark.parametrize(("k1", "b"), [(1.2, 0.6), (0.0, 0.6), (3.0, 1.0), (1.2, 0.0)])
async def test_the_statements_answers_on_real_code(
    stack: Stack,
    code_corpus: list[str],
    k1: float,
    b: float,
) -> None:
    pool = await stack.resources.pool(SESSION_SETTINGS)
    snapshot = await snapshot_of(stack, CODE)
    answered = 0
    for query in code_corpus:
        terms = parse_query(query, STOPWORDS, True)
        for top_k in (1, 10, 30):
            sql = await bm25_any(pool, SearchParams(CODE, query, top_k, None, ()), terms, k1, b)
            same_answer(sql, bm25_any_in_memory(snapshot, terms.all, k1, b, top_k), f"{query!r} {top_k}")
            # pruned (MaxScore) whatever the postings: the same answer
            pruned = bm25_any_in_memory(snapshot, terms.all, k1, b, top_k, prune_from=0)
            same_answer(sql, pruned, f"{query!r} {top_k} pruned")
            answered += bool(sql.chunks)
    assert answered > 200


@pytest.mark.parametrize(
    "query",
    ["parse config file", "hand zzyzx settings", "HTTPServer", "zzyzx", "cfg .py", "parse parse parse", ""],
)
@pytest.mark.parametrize("top_k", [1, 3, 50])
async def test_the_statements_answers_on_a_handful_of_chunks(
    stack: Stack,
    few_chunks: str,
    query: str,
    top_k: int,
) -> None:
    pool = await stack.resources.pool(SESSION_SETTINGS)
    terms = parse_query(query, STOPWORDS, True)
    sql = await bm25_any(pool, SearchParams(few_chunks, query, top_k, None, ()), terms, 1.2, 0.6)
    memory = bm25_any_in_memory(await snapshot_of(stack, few_chunks), terms.all, 1.2, 0.6, top_k)
    same_answer(sql, memory, query)
    if query in ("zzyzx", ""):
        assert memory.chunks == []


async def test_the_servicer_answers_alike_with_and_without_it(
    stack: Stack,
    code_corpus: list[str],
) -> None:
    pool = await stack.resources.pool(SESSION_SETTINGS, search=True)
    cfg = stack.cfg.sparse
    plain = SparseServicer(cfg, stack.cfg.limits, pool)
    small = SmallCorpora(pool, CorpusVersions(pool, stack.cfg.postgres), 2000, 64 << 20, read_snapshot)
    kept = SparseServicer(cfg, stack.cfg.limits, pool, small)
    assert await small.ready(CODE) is not None and small.loads == 1
    for query in code_corpus[:40]:
        request = common_pb2.SearchRequest(corpus_id=CODE, query=query, top_k=10)
        same_answer(await plain.search(request), await kept.search(request), query)
        # a request's own k1, and a filter (PostgreSQL's, as before)
        other = common_pb2.SearchRequest(
            corpus_id=CODE,
            query=query,
            options=common_pb2.SearchOptions(sparse=sparse_options_pb2.SparseOptions(bm25_k1=2.0)),
            filters=common_pb2.SearchFilters(path_glob="click/core.py"),
        )
        filtered = await kept.search(other)
        assert filtered.chunks == (await plain.search(other)).chunks
        assert all(c.chunk.file_path == "click/core.py" for c in filtered.chunks)
        unfiltered = common_pb2.SearchRequest(
            corpus_id=CODE,
            query=query,
            options=common_pb2.SearchOptions(sparse=sparse_options_pb2.SparseOptions(bm25_k1=2.0)),
        )
        same_answer(await plain.search(unfiltered), await kept.search(unfiltered), query)
    assert small.loads == 1
