"""The sparse (BM25) leg on real PostgreSQL: code-aware terms, paths, query modes, relaxation,
filters and bad input."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import grpc
import numpy as np
import pytest

from services.sparse.bm25 import SEED_CHUNKS, SESSION_SETTINGS, build_any_query, build_plain_query
from services.sparse.service import SparseServicer
from tests.integration.test_vector_leg import synth_vectors, write_corpus
from tests.stack import SAMPLE_CORPUS, Stack
from tribrid.models import Chunk
from tribrid.search_common import SearchParams
from tribrid.v1 import common_pb2, indexer_pb2, sparse_options_pb2, sparse_pb2_grpc

WORDS = "synth-words"
DOCS = [
    ("cfg/loader.py", "python", "def parseConfigFile(path):\n    return open(path)"),
    ("cfg/snake.py", "python", "def parse_config_file(path):\n    pass"),
    ("cfg/kebab.md", "markdown", "Run parse-config-file to check the settings."),
    ("cfg/words.txt", "text", "Here we parse the config file by hand."),
    ("cfg/other.py", "python", "config = load(file)\nparse(config)"),
    ("net/http.py", "python", "class HTTPServer:\n    pass"),
    ("net/client.go", "go", "func sendRequest() {}"),
    ("shop/cart.py", "python", "class Cart:\n    def total_price(self): pass"),
]


@pytest.fixture(scope="session")
async def words(stack: Stack) -> list[Chunk]:
    return await write_corpus(stack, WORDS, DOCS, synth_vectors(len(DOCS), stack.cfg.embedding.dim, seed=3))


async def search(
    stack: Stack, query: str, corpus_id: str = WORDS, **fields: object
) -> list[common_pb2.ChunkMatch]:
    async with stack.channel("sparse") as channel:
        request = common_pb2.SearchRequest(corpus_id=corpus_id, query=query, **fields)  # type: ignore[arg-type]
        reply = await sparse_pb2_grpc.SparseSearchStub(channel).Search(request, timeout=30)
    return list(reply.matches)


def mode(name: str) -> common_pb2.SearchOptions:
    value = sparse_options_pb2.SparseQueryMode.Value(f"SPARSE_QUERY_MODE_{name.upper()}")
    return common_pb2.SearchOptions(sparse=sparse_options_pb2.SparseOptions(query_mode=value))


def sparse(**options: float) -> common_pb2.SearchOptions:
    return common_pb2.SearchOptions(sparse=sparse_options_pb2.SparseOptions(**options))  # type: ignore[arg-type]


def plain(**options: float | bool) -> common_pb2.SearchOptions:
    """Plain mode (every term required, relaxed), with other options."""
    fields = sparse_options_pb2.SparseOptions(query_mode=sparse_options_pb2.SPARSE_QUERY_MODE_PLAIN)
    for name, value in options.items():
        setattr(fields, name, value)
    return common_pb2.SearchOptions(sparse=fields)


def paths(matches: list[common_pb2.ChunkMatch]) -> list[str]:
    return [m.file_path for m in matches]


def full(matches: list[common_pb2.ChunkMatch]) -> list[common_pb2.ChunkMatch]:
    """The (relaxed) matches of a plain query, without the partial ones that fill top_k after them."""
    return [m for m in matches if "partial" not in m.explain[0].detail]


@pytest.mark.parametrize("query_mode", ["any", "plain"])
async def test_identifier_styles_match_words_and_exact_identifier_ranks_first(
    stack: Stack, words: list[Chunk], query_mode: str
) -> None:
    options = mode(query_mode)
    found = paths(full(await search(stack, "parse config file", options=options)))
    assert set(found) == {"cfg/loader.py", "cfg/snake.py", "cfg/kebab.md", "cfg/words.txt", "cfg/other.py"}
    for form in ("parseConfigFile", "parse_config_file", "parse-config-file"):
        found = paths(full(await search(stack, form, options=options)))
        # the three spellings of the identifier share its joined term: they come first
        assert set(found[:3]) == {"cfg/loader.py", "cfg/snake.py", "cfg/kebab.md"}, form
        assert set(found[3:]) == {"cfg/words.txt", "cfg/other.py"}, form
    top = (await search(stack, "parseConfigFile", options=options))[0]
    assert top.explain[0].detail.startswith(f"bm25 k1=1.2 b=0.6 mode={query_mode}")
    assert "parseconfigfil" in top.explain[0].detail
    assert paths(await search(stack, "HTTPServer", options=options))[0] == "net/http.py"
    assert paths(full(await search(stack, "http server", options=options))) == ["net/http.py"]


async def test_any_mode_is_the_default_and_ranks_by_bm25_alone(stack: Stack, words: list[Chunk]) -> None:
    # 'hand' is in one chunk, 'config' in five: plain mode drops the rare term when no chunk holds
    # both and ranks the config chunks first; BM25 alone puts the one chunk with the rare 'hand' on top
    # (it holds 'config' too), then every other chunk holding a term, whatever it lacks
    assert paths(full(await search(stack, "config hand zzyzx", options=plain())))[0] == "cfg/words.txt"
    found = await search(stack, "hand zzyzx settings")
    assert set(paths(found)) == {"cfg/words.txt", "cfg/kebab.md"}
    assert all("mode=any" in m.explain[0].detail and "partial" not in m.explain[0].detail for m in found)
    plain_found = await search(stack, "hand zzyzx settings", options=plain(relax_max_terms=1))
    assert "any-term fallback" in plain_found[0].explain[0].detail
    scores = [m.score for m in found]
    assert scores == sorted(scores, reverse=True)


async def test_paths_and_extensions(stack: Stack, words: list[Chunk]) -> None:
    in_cfg = {"cfg/loader.py", "cfg/snake.py", "cfg/other.py"}
    assert paths(full(await search(stack, "cart.py", options=plain()))) == ["shop/cart.py"]
    assert paths(full(await search(stack, "shop/cart", options=plain()))) == ["shop/cart.py"]
    assert set(paths(full(await search(stack, "cfg .py", options=plain())))) == in_cfg
    # any term: the file holding both comes first, then the other python files
    assert paths(await search(stack, "cart.py"))[0] == "shop/cart.py"
    assert paths(await search(stack, "shop/cart")) == ["shop/cart.py"]
    assert set(paths(await search(stack, "cfg .py"))[:3]) == in_cfg


async def test_phrase_mode_needs_adjacent_terms_in_order(stack: Stack, words: list[Chunk]) -> None:
    found = paths(await search(stack, "parse config file", options=mode("phrase")))
    assert set(found) == {"cfg/loader.py", "cfg/snake.py", "cfg/kebab.md"}
    assert paths(await search(stack, "parse the config", options=mode("phrase"))) == ["cfg/words.txt"]
    # the identifier's joined term does not break adjacency with the next word
    assert paths(await search(stack, "file path", options=mode("phrase"))) == [
        "cfg/loader.py",
        "cfg/snake.py",
    ]
    assert await search(stack, "file config parse", options=mode("phrase")) == []


async def test_boolean_mode(stack: Stack, words: list[Chunk]) -> None:
    found = paths(await search(stack, "parse -snake -kebab", options=mode("boolean")))
    assert set(found) == {"cfg/loader.py", "cfg/words.txt", "cfg/other.py"}
    found = paths(await search(stack, '"parse the config" OR HTTPServer', options=mode("boolean")))
    assert set(found) == {"cfg/words.txt", "net/http.py"}
    found = paths(await search(stack, 'parse -"config file"', options=mode("boolean")))
    assert set(found) == {"cfg/other.py"}
    assert await search(stack, "-parse", options=mode("boolean")) == []


async def test_plain_query_relaxes_rarest_terms(stack: Stack, words: list[Chunk]) -> None:
    exact = full(await search(stack, "parse config file", options=plain()))
    relaxed = full(await search(stack, "parse config file zzyzx", options=plain()))
    assert paths(relaxed) == paths(exact)
    assert "relaxed: dropped 'zzyzx'" in relaxed[0].explain[0].detail
    assert [m.score for m in relaxed] == pytest.approx([m.score for m in exact])
    # the rarest term goes first: 'hand' (1 chunk) is dropped before 'parse' (5 chunks)
    two = await search(stack, "parse hand zzyzx", options=plain())
    assert "dropped 'zzyzx'" in two[0].explain[0].detail
    assert paths(full(two)) == ["cfg/words.txt"]
    three = await search(stack, "parse settings qwxz zzyzx", options=plain())
    assert paths(full(three)) == ["cfg/kebab.md"]
    assert "dropped 'qwxz', 'zzyzx'" in three[0].explain[0].detail  # equally rare: query order
    # past relax_max_terms (2): any-term matches, said so
    fallback = await search(stack, "settings aaqq bbqq ccqq", options=plain())
    assert paths(fallback) == ["cfg/kebab.md"] and "any-term fallback" in fallback[0].explain[0].detail
    assert await search(stack, "settings aaqq bbqq ccqq", options=plain(any_term_fallback=False)) == []
    # relaxing one more term finds the full match the fallback stood in for
    relaxed = await search(stack, "settings aaqq bbqq ccqq", options=plain(relax_max_terms=3))
    assert paths(relaxed) == ["cfg/kebab.md"] and "dropped" in relaxed[0].explain[0].detail


async def test_partial_matches_fill_top_k_after_the_matches(stack: Stack, words: list[Chunk]) -> None:
    # no chunk holds both terms: the rarer 'server' is dropped, the five config chunks match, and
    # the one chunk with only 'server' fills in after them, marked partial
    found = await search(stack, "config server", options=plain())
    assert set(paths(full(found))) == {
        "cfg/loader.py",
        "cfg/snake.py",
        "cfg/kebab.md",
        "cfg/words.txt",
        "cfg/other.py",
    }
    assert paths(found[5:]) == ["net/http.py"] and "partial" in found[5].explain[0].detail
    assert found[5].score > min(m.score for m in found[:5])  # ranked after them all the same
    # top_k still bounds the whole answer
    assert len(await search(stack, "config server", top_k=3, options=plain())) == 3
    strict = stack.cfg.sparse.model_copy(update={"query_mode": "plain", "any_term_fallback": False})
    servicer = SparseServicer(strict, stack.cfg.limits, await stack.resources.pool())
    result = await servicer.search(common_pb2.SearchRequest(corpus_id=WORDS, query="config server"))
    assert {c.chunk.file_path for c in result.chunks} == set(paths(full(found)))


async def test_filters(stack: Stack, words: list[Chunk]) -> None:
    found = await search(stack, "parse config file", filters=common_pb2.SearchFilters(path_glob="cfg/*.py"))
    assert set(paths(full(found))) == {"cfg/loader.py", "cfg/snake.py", "cfg/other.py"}
    found = await search(stack, "send request", filters=common_pb2.SearchFilters(languages=["Go"]))
    assert paths(full(found)) == ["net/client.go"]
    found = await search(
        stack, "parse config", filters=common_pb2.SearchFilters(languages=["markdown", "text"])
    )
    assert set(paths(full(found))) == {"cfg/kebab.md", "cfg/words.txt"}
    # relaxation happens within the filter's chunks
    found = await search(
        stack, "parse zzyzx", options=plain(), filters=common_pb2.SearchFilters(path_glob="**/*.md")
    )
    assert paths(full(found)) == ["cfg/kebab.md"] and "relaxed" in found[0].explain[0].detail
    for m in ("phrase", "boolean"):
        found = await search(
            stack, "parse config", options=mode(m), filters=common_pb2.SearchFilters(path_glob="*.txt")
        )
        assert paths(found) == [] if m == "phrase" else paths(found) == ["cfg/words.txt"]


async def test_k1_b_overrides_change_scores(stack: Stack, words: list[Chunk]) -> None:
    base = await search(stack, "parse config")
    flat = await search(stack, "parse config", options=sparse(bm25_k1=0.0, bm25_b=0.0))
    assert [m.score for m in base] != [m.score for m in flat]
    # k1 = 0: the score is the sum of the idfs of the matched terms, whatever tf and length
    assert len({round(m.score, 9) for m in flat}) == 1


@pytest.mark.parametrize("query", ["the of and", "?!", "how does it", "... ()"])
@pytest.mark.parametrize("query_mode", ["any", "plain", "phrase", "boolean"])
async def test_stop_words_or_punctuation_only_is_ok_and_empty(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress, query: str, query_mode: str
) -> None:
    assert await search(stack, query, corpus_id=SAMPLE_CORPUS, options=mode(query_mode)) == []


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"query": "x" * 2001}, "maximum is 2000"),
        (
            {"query": "cart", "options": common_pb2.SearchOptions(sparse={"query_mode": 7})},  # type: ignore[arg-type]
            "options.sparse.query_mode: unknown value 7",
        ),
    ],
)
async def test_bad_requests(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress, fields: dict[str, object], message: str
) -> None:
    fields = dict(fields)
    query = str(fields.pop("query"))
    corpus_id = str(fields.pop("corpus_id", SAMPLE_CORPUS))
    with pytest.raises(grpc.aio.AioRpcError) as excinfo:
        await search(stack, query, corpus_id=corpus_id, **fields)
    assert excinfo.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert message in (excinfo.value.details() or "")


@pytest.mark.parametrize("query", ["cart", "the"])
async def test_unknown_corpus_is_not_found(stack: Stack, query: str) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as excinfo:
        await search(stack, query, corpus_id="no-such-corpus")
    assert excinfo.value.code() == grpc.StatusCode.NOT_FOUND
    assert "corpus 'no-such-corpus' not found" in (excinfo.value.details() or "")


async def test_sample_corpus_identifier_and_words(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress
) -> None:
    top = await search(stack, "validate_card_number", corpus_id=SAMPLE_CORPUS)
    assert top[0].symbol == "shop.payment.validate_card_number"
    assert "shop.payment.validate_card_number" in [
        m.symbol for m in await search(stack, "card number", corpus_id=SAMPLE_CORPUS)
    ]
    # the file leads; shop/__init__.py says "carts" (the same stem) and comes in with it
    for options in (plain(), mode("any")):
        found = await search(stack, "cart.py", corpus_id=SAMPLE_CORPUS, options=options)
        assert found[0].file_path == "shop/cart.py"
        assert {"shop/cart.py", "shop/__init__.py"} <= set(paths(found)[:8])
        assert np.isfinite([m.score for m in found]).all()


async def test_header_labels_are_not_terms(stack: Stack, words: list[Chunk]) -> None:
    # Every chunk's context header says "# file: <path>"; only chunks that mention a file match.
    found = await search(stack, "file", top_k=10)
    assert sorted(m.file_path for m in found) == [
        "cfg/kebab.md",
        "cfg/loader.py",
        "cfg/other.py",
        "cfg/snake.py",
        "cfg/words.txt",
    ]


async def test_the_sparse_pool_starts_connections_with_its_planner_settings(stack: Stack) -> None:
    pool = await stack.resources.pool(SESSION_SETTINGS)  # the sparse service's pool
    async with pool.acquire() as conn:
        for name, value in SESSION_SETTINGS.items():
            assert await conn.fetchval(f"SHOW {name}") == value
    async with (await stack.resources.pool()).acquire() as conn:  # the shared pool keeps the defaults
        assert await conn.fetchval("SHOW enable_sort") == "on"


def _keys_read(plan: dict[str, Any], table: str) -> Iterator[str]:
    """The index condition of each read of `table` ('' for a read by no index: a sequential
    scan); a bitmap heap scan's is its bitmap index scan's."""
    if plan.get("Relation Name") == table:
        reads = plan.get("Plans", []) if plan["Node Type"] == "Bitmap Heap Scan" else [plan]
        yield from (read.get("Index Cond", "") for read in reads)
    for child in plan.get("Plans", []):
        yield from _keys_read(child, table)


@pytest.mark.parametrize("statement", ["plain", "any"])
@pytest.mark.parametrize("filtered", [False, True])
async def test_generic_plans_read_postings_by_term(stack: Stack, statement: str, filtered: bool) -> None:
    """The sparse pool plans each statement once, for any terms: every read of the postings must
    then go by term (or, for the pruned statement's look-ups, by chunk), never scan the corpus's
    postings (which a per-term df subplan used to get, at ~100 ms per query)."""
    params = SearchParams("c", "q", 10, "x" if filtered else None, ("python",) if filtered else ())
    if statement == "plain":
        sql, filter_args = build_plain_query(params)
        args = ["c", ["parse", "config"], [True, True], 1.2, 0.75, 10, 2, True, *filter_args]
    else:
        sql, filter_args = build_any_query(params)
        args = ["c", ["parse", "config"], 1.2, 0.75, 10, SEED_CHUNKS, 0, *filter_args]
    pool = await stack.resources.pool(SESSION_SETTINGS)  # bound, but not planned for
    plan = json.loads(await pool.fetchval(f"EXPLAIN (GENERIC_PLAN, FORMAT JSON) {sql}", *args))[0]["Plan"]
    # by term (the postings lists), or by chunk (one chunk's few postings): never the corpus's
    postings = list(_keys_read(plan, "postings"))
    assert len(postings) >= 2  # the scoring and the matched terms
    assert all("term =" in key or "chunk_id =" in key for key in postings), postings
