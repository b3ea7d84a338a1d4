"""A small corpus's exact scan from the vector leg's memory: the SQL exact scan's answers, for every
metric, with ties, missing signatures and a zero vector; a new generation, a deletion and a corpus
created again are seen at once; the memory budget is kept."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from services.indexer.pg_writer import delete_corpus
from services.vector.in_memory import Snapshot, read_snapshot, search_snapshot
from services.vector.search import session_settings, vector_search
from services.vector.service import VectorServicer
from tests.integration.test_vector_leg import params, synth_vectors, write_corpus
from tests.stack import Stack
from tribrid.config import VectorConfig
from tribrid.embedding import Vectors
from tribrid.models import Chunk
from tribrid.stores.corpus_versions import CorpusVersions
from tribrid.stores.small_corpora import SmallCorpora
from tribrid.v1 import common_pb2

SMALL = "small-in-memory"
N = 400


def docs(n: int, tag: str = "doc") -> list[tuple[str, str, str]]:
    return [(f"pkg{i % 7}/m{i % 3}.py", "python", f"{tag} {i}") for i in range(n)]


def hard_vectors(dim: int) -> tuple[Vectors, list[Vectors | None]]:
    """Clustered vectors with exact duplicates (ties broken by chunk id), a zero vector (no cosine)
    and signatures on every third chunk, some of them duplicates too."""
    vectors = synth_vectors(N, dim, seed=11)
    vectors[100:110] = vectors[5]  # ten ties with chunk 5
    vectors[200] = 0.0
    signatures: list[Vectors | None] = [vectors[(i * 7) % N] if i % 3 == 0 else None for i in range(N)]
    return vectors, signatures


@pytest.fixture(scope="module")
async def small(stack: Stack) -> tuple[list[Chunk], Vectors]:
    vectors, signatures = hard_vectors(stack.cfg.embedding.dim)
    return await write_corpus(stack, SMALL, docs(N), vectors, signatures), vectors


async def corpora(stack: Stack, budget_bytes: int = 64 << 20, max_rows: int = 2000) -> SmallCorpora[Snapshot]:
    pool = await stack.resources.pool()
    return SmallCorpora(pool, CorpusVersions(pool, stack.cfg.postgres), max_rows, budget_bytes, read_snapshot)


@pytest.mark.parametrize("metric", ["cosine", "l2", "inner_product"])
async def test_the_sql_exact_scans_answers(
    stack: Stack, small: tuple[list[Chunk], Vectors], metric: str
) -> None:
    _, vectors = small
    cfg: VectorConfig = stack.cfg.vector.model_copy(update={"metric": metric, "similarity_threshold": -1.0})
    settings = session_settings(cfg)
    pool = await stack.resources.pool(settings, search=True)
    kept = await corpora(stack)
    snapshot = await kept.ready(SMALL)
    assert snapshot is not None and len(snapshot.rows) == N
    rng = np.random.default_rng(3)
    queries = [vectors[i] for i in (5, 105, 0, 3, 399)] + list(synth_vectors(40, vectors.shape[1], seed=4))
    queries.append(np.asarray(rng.normal(size=vectors.shape[1]), dtype=np.float32))  # not a unit vector
    for top_k in (10, 30, 60):
        for query in queries:
            sql = await vector_search(pool, cfg, params(SMALL, top_k), query, pool_settings=settings)
            memory = search_snapshot(snapshot, cfg, params(SMALL, top_k), query, None)
            assert [c.chunk for c in memory.chunks] == [c.chunk for c in sql.chunks]
            assert [c.score for c in memory.chunks] == pytest.approx([c.score for c in sql.chunks], abs=1e-6)
            assert memory.coverage == pytest.approx(sql.coverage)
            assert (memory.plan, memory.allowed, memory.statements) == ("memory", N, 0)
    ties = search_snapshot(snapshot, cfg, params(SMALL, 30), vectors[5], None)
    tied = sorted(c.chunk.chunk_id for c in ties.chunks if c.chunk.start_line in {6, *range(101, 111)})
    assert len(tied) == 11  # the eleven equal vectors are all there
    assert kept.loads == 1  # read once for all those searches


async def test_a_new_generation_a_deletion_and_a_new_life_are_seen(stack: Stack) -> None:
    corpus = "small-in-memory-life"
    dim = stack.cfg.embedding.dim
    first = synth_vectors(50, dim, seed=1)
    await write_corpus(stack, corpus, docs(50, "first"), first)
    kept = await corpora(stack)
    snapshot = await kept.ready(corpus)
    assert snapshot is not None and {r.chunk_id for r in snapshot.rows}
    before = snapshot.version

    # write_corpus deletes the corpus and creates it again: generation 1 again, a new life
    second = synth_vectors(60, dim, seed=2)
    chunks = await write_corpus(stack, corpus, docs(60, "second"), second)
    for _ in range(100):  # the NOTIFY comes at COMMIT, asynchronously
        snapshot = await kept.ready(corpus)
        if snapshot is not None and snapshot.version != before:
            break
        await asyncio.sleep(0.02)
    assert snapshot is not None and snapshot.version is not None and before is not None
    assert snapshot.version[0] == before[0] and snapshot.version != before
    result = search_snapshot(snapshot, stack.cfg.vector, params(corpus, 5), second[7], None)
    assert result.chunks[0].chunk == next(r for r in snapshot.rows if r.chunk_id == chunks[7].chunk_id)
    assert len(snapshot.rows) == 60

    await delete_corpus(await stack.resources.pool(), corpus)
    for _ in range(100):
        if await kept.ready(corpus) is None:
            break
        await asyncio.sleep(0.02)
    assert await kept.ready(corpus) is None


async def test_the_budget_is_kept(stack: Stack, small: tuple[list[Chunk], Vectors]) -> None:
    other = "small-in-memory-other"
    await write_corpus(stack, other, docs(300), synth_vectors(300, stack.cfg.embedding.dim, seed=9))
    one = await corpora(stack)
    snapshot = await one.ready(SMALL)
    assert snapshot is not None
    # room for one corpus: the one searched last is kept, the other is read again
    budget = snapshot.nbytes + 1
    just_one = await corpora(stack, budget)
    assert await just_one.ready(SMALL) is not None and await just_one.ready(other) is not None
    assert just_one.kept_bytes <= budget and just_one.loads == 2
    assert await just_one.ready(SMALL) is not None and just_one.loads == 3
    # a corpus larger than the budget, or than an exact scan takes, is left to PostgreSQL
    assert await (await corpora(stack, 1000, 2000)).ready(SMALL) is None
    assert await (await corpora(stack, 1 << 30, N - 1)).ready(SMALL) is None
    assert await (await corpora(stack, 0, 2000)).ready(SMALL) is None
    assert await one.ready("no-such-corpus") is None


async def test_the_service_answers_alike_with_and_without_it(
    stack: Stack, small: tuple[list[Chunk], Vectors]
) -> None:
    cfg = stack.cfg.vector
    settings = session_settings(cfg)
    pool = await stack.resources.pool(settings, search=True)
    embedder = stack.resources.embedder()
    plain = VectorServicer(cfg, stack.cfg.limits, pool, embedder, 0, settings)
    in_memory = await corpora(stack)
    kept = VectorServicer(cfg, stack.cfg.limits, pool, embedder, 0, settings, small_corpora=in_memory)
    first = await kept.search(common_pb2.SearchRequest(corpus_id=SMALL, query="doc 1", top_k=20))
    assert first.plan == "exact"  # the first search is PostgreSQL's, while the corpus is read
    await in_memory.ready(SMALL)
    for query in ("doc 17", "first steps in pkg3", "m2"):
        request = common_pb2.SearchRequest(corpus_id=SMALL, query=query, top_k=20)
        sql, memory = await plain.search(request), await kept.search(request)
        assert (sql.plan, memory.plan) == ("exact", "memory")
        assert [c.chunk for c in memory.chunks] == [c.chunk for c in sql.chunks]
        assert "plan=exact in memory" in memory.chunks[0].detail
        # a filtered request is the SQL's, as before
        filtered = common_pb2.SearchRequest(
            corpus_id=SMALL, query=query, filters=common_pb2.SearchFilters(path_glob="pkg1/**")
        )
        assert (await kept.search(filtered)).plan == "exact"
    await plain.batcher.close()
    await kept.batcher.close()
