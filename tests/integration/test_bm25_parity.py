"""BM25 parity: our PostgreSQL scores against bm25s (method="lucene") on the same tokens.

bm25s's Lucene variant uses idf = ln(1 + (N - df + 0.5) / (df + 0.5)) like ours and the term
weight tf / (tf + k1 * (1 - b + b * |d| / avgdl)); ours keeps the classic (k1 + 1) factor, a
constant that changes no ranking, so the reference scores are multiplied by (k1 + 1).
200 synthetic code-like documents go through the indexer's real writer; the reference is fed
`tribrid.text.index_tokens` of the same indexed text (`pg_writer.sparse_text`).
"""

from __future__ import annotations

import bm25s  # type: ignore[import-untyped]
import numpy as np
import pytest

from services.indexer.pg_writer import sparse_text
from tests.integration.test_vector_leg import synth_vectors, write_corpus
from tests.stack import Stack
from tribrid.models import Chunk
from tribrid.text import index_tokens, parse_query, stem
from tribrid.v1 import common_pb2, sparse_options_pb2, sparse_pb2_grpc

PARITY = "synth-bm25"
WORDS = """parse config file load save user account order item cart price tax discount payment card
number token session cache request response client server http socket stream buffer reader writer
index search query score rank vector graph node edge path tree list map set queue stack heap sort
merge split join filter match error retry timeout lock thread task worker pool event handler
""".split()


def _identifier(rng: np.random.Generator) -> str:
    parts = [WORDS[int(i)] for i in rng.zipf(1.3, size=int(rng.integers(1, 4))) % len(WORDS)]
    style = int(rng.integers(0, 4))
    if style == 0:
        return "_".join(parts)
    if style == 1:
        return parts[0] + "".join(p.capitalize() for p in parts[1:])
    if style == 2:
        return "-".join(parts)
    return " ".join(parts)


def make_docs(n: int = 200, seed: int = 11) -> list[tuple[str, str, str]]:
    rng = np.random.default_rng(seed)
    docs = []
    for i in range(n):
        lines = [
            " ".join(_identifier(rng) for _ in range(int(rng.integers(1, 6))))
            for _ in range(rng.integers(1, 12))
        ]
        docs.append((f"mod{i % 17}/f{i}.py", "python", "\n".join(lines)))
    return docs


@pytest.fixture(scope="session")
async def parity(stack: Stack) -> list[Chunk]:
    docs = make_docs()
    return await write_corpus(stack, PARITY, docs, synth_vectors(len(docs), stack.cfg.embedding.dim, seed=5))


def queries() -> list[str]:
    rng = np.random.default_rng(23)
    out = ["parse config file", "parseConfigFile", "cart_price", "http-server", "timeout", "user account"]
    for _ in range(24):
        out.append(_identifier(rng))
    return out


async def ours(stack: Stack, query: str, **options: object) -> list[common_pb2.ChunkMatch]:
    if isinstance(options.get("query_mode"), str):
        options["query_mode"] = f"SPARSE_QUERY_MODE_{str(options['query_mode']).upper()}"
    async with stack.channel("sparse") as channel:
        request = common_pb2.SearchRequest(
            corpus_id=PARITY,
            query=query,
            top_k=10,
            options=common_pb2.SearchOptions(sparse=sparse_options_pb2.SparseOptions(**options)),  # type: ignore[arg-type]
        )
        reply = await sparse_pb2_grpc.SparseSearchStub(channel).Search(request, timeout=30)
    return list(reply.matches)


def assert_same_top10(
    got: list[common_pb2.ChunkMatch], ids: list[str], ref: np.ndarray, query: str, k: int = 10
) -> None:
    order = sorted(range(len(ids)), key=lambda i: (-ref[i], ids[i]))
    order = [i for i in order if ref[i] > 0]
    want = order[:k]
    assert len(got) >= len(want), query
    got = got[: len(want)]  # past the full matches, plain mode fills with partial ones
    ref_of = dict(zip(ids, ref, strict=True))
    for match, i in zip(got, want, strict=True):
        assert match.score == pytest.approx(ref[i], rel=1e-9, abs=1e-6), query
        assert ref_of[match.chunk_id] == pytest.approx(match.score, rel=1e-9, abs=1e-6), query
    # the same ten chunks (exact ties at the cut aside)
    if len(order) <= k or ref[order[k - 1]] - ref[order[k]] > 1e-9:
        assert {m.chunk_id for m in got} == {ids[i] for i in want}, query


@pytest.mark.parametrize(("k1", "b"), [(1.2, 0.4), (2.0, 0.9), (0.5, 0.0)])
async def test_bm25_matches_reference(stack: Stack, parity: list[Chunk], k1: float, b: float) -> None:
    tokens = [[t for t, _ in index_tokens(sparse_text(c))] for c in parity]  # the indexer's postings
    ids = [c.chunk_id for c in parity]
    reference = bm25s.BM25(method="lucene", k1=k1, b=b, dtype="float64")
    reference.index(tokens, show_progress=False)
    vocab = set(reference.vocab_dict)
    checked = 0
    for query in queries():
        terms = parse_query(query)
        scores = reference.get_scores([t for t in terms.all if t in vocab]) * (k1 + 1)
        # plain mode: a chunk must hold every required term (identifier joins only add score)
        has_all = np.array([set(terms.required) <= set(doc) for doc in tokens])
        if not has_all.any():
            continue
        # the default (any-term) mode is the reference's own ranking
        assert_same_top10(await ours(stack, query, bm25_k1=k1, bm25_b=b), ids, scores, query)
        got = await ours(stack, query, bm25_k1=k1, bm25_b=b, query_mode="plain")
        assert_same_top10(got, ids, np.where(has_all, scores, 0.0), query)
        assert all("relaxed" not in m.explain[0].detail for m in got)
        # the fill after the full matches is any-term BM25: the reference's next best partial ones
        full = int(has_all.sum())
        if full < 10:
            assert_same_top10(got[full:], ids, np.where(has_all, 0.0, scores), query, k=10 - full)
            assert all("partial" in m.explain[0].detail for m in got[full:])
        checked += 1
    assert checked >= 20
    # boolean "a OR b OR c" is plain any-term BM25 over the whole corpus
    for words in (["parse", "cart", "timeout"], ["user", "stream"], ["sort"]):
        scores = reference.get_scores([stem(w) for w in words]) * (k1 + 1)
        got = await ours(stack, " OR ".join(words), bm25_k1=k1, bm25_b=b, query_mode="boolean")
        assert_same_top10(got, ids, scores, str(words))
