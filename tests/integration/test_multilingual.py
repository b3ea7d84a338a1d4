"""Any language through the real stack: German (with and without accents), Chinese and English
passages indexed together; each leg answers, and the gateway routes a corpus of documents."""

from __future__ import annotations

import shutil

import pytest

from services.sparse.service import SparseServicer
from tests import FIXTURES
from tests.stack import Stack, index_corpus
from tribrid.options import spelling
from tribrid.text import needs_segmenter
from tribrid.v1 import (
    common_pb2,
    fusion_pb2,
    fusion_pb2_grpc,
    indexer_pb2,
    sparse_pb2_grpc,
    vector_pb2_grpc,
)
from tribrid.v1.reading_pb2 import QueryKind

CORPUS = "multilingual"
FIXTURE = FIXTURES / "multilingual"


@pytest.fixture(scope="module")
async def multilingual(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> indexer_pb2.IndexProgress:
    root = tmp_path_factory.mktemp("multilingual") / "docs"
    shutil.copytree(FIXTURE, root)
    return await index_corpus(stack, CORPUS, root)


async def sparse(stack: Stack, query: str) -> list[str]:
    async with stack.channel("sparse") as channel:
        reply = await sparse_pb2_grpc.SparseSearchStub(channel).Search(
            common_pb2.SearchRequest(corpus_id=CORPUS, query=query, top_k=10), timeout=30
        )
    return [m.file_path for m in reply.matches]


async def fused(stack: Stack, query: str) -> fusion_pb2.FusionSearchResponse:
    async with stack.channel("fusion") as channel:
        reply: fusion_pb2.FusionSearchResponse = await fusion_pb2_grpc.FusionStub(channel).Search(
            common_pb2.SearchRequest(corpus_id=CORPUS, query=query, top_k=10), timeout=30
        )
    return reply


async def test_fixture_is_indexed(multilingual: indexer_pb2.IndexProgress) -> None:
    assert multilingual.done and multilingual.files_seen == 8 and multilingual.chunks_total == 8


@pytest.mark.parametrize(
    ("query", "path"),
    [
        ("读取文件", "duqu.txt"),  # "read a file"
        ("北京天气", "tianqi.txt"),  # "Beijing weather", unsegmented as Chinese is written
        ("明天 降温", "tianqi.txt"),  # "tomorrow, colder"
        ("Zürich Altstadt", "zuerich.txt"),
        ("zurich altstadt", "zuerich.txt"),  # no accents: the folded form matches
        ("ZÜRICH LIMMAT", "zuerich.txt"),  # case-folded
        ("Straßenbahn", "zuerich.txt"),
        ("strassenbahn", "zuerich.txt"),
        ("Roggenbrot Kruste", "brot.txt"),
        ("kuhlen Ort", "brot.txt"),  # the text says "kühlen"
        ("night train", "trains.txt"),
        ("東京タワー", "tokyo.txt"),  # Japanese: character bigrams
        ("展望台 富士山", "tokyo.txt"),
        # a corpus of documents keeps "function" (a code corpus drops it as a stop word)
        ("function", "liver.txt"),
    ],
)
async def test_sparse_leg_finds_the_passage(
    stack: Stack, multilingual: indexer_pb2.IndexProgress, query: str, path: str
) -> None:
    paths = await sparse(stack, query)
    assert paths and paths[0] == path, paths


async def test_the_sparse_leg_loads_the_chinese_segmenter_at_start_when_a_corpus_has_chinese(
    stack: Stack, multilingual: indexer_pb2.IndexProgress
) -> None:
    servicer = SparseServicer(stack.cfg.sparse, stack.cfg.limits, await stack.resources.pool())
    assert await servicer.warm_up() is True
    assert not needs_segmenter("读取文件")  # loaded: a first Chinese question does not wait for it


async def test_sparse_leg_prefers_the_exact_spelling(
    stack: Stack, multilingual: indexer_pb2.IndexProgress
) -> None:
    async with stack.channel("sparse") as channel:
        stub = sparse_pb2_grpc.SparseSearchStub(channel)
        exact, folded = [
            (
                await stub.Search(common_pb2.SearchRequest(corpus_id=CORPUS, query=q, top_k=1), timeout=30)
            ).matches[0]
            for q in ("Zürich", "zurich")
        ]
    assert exact.file_path == folded.file_path == "zuerich.txt"
    assert exact.score > folded.score  # the accented term is a bonus on top of the folded one


async def test_vector_leg_answers_a_cjk_only_query(
    stack: Stack, multilingual: indexer_pb2.IndexProgress
) -> None:
    async with stack.channel("vector") as channel:
        reply = await vector_pb2_grpc.VectorSearchStub(channel).Search(
            common_pb2.SearchRequest(corpus_id=CORPUS, query="读取文件", top_k=10), timeout=30
        )
    assert len(reply.matches) == 8  # every passage, ranked: no longer refused for lack of ASCII terms


async def test_the_vector_leg_says_how_much_of_its_answers_the_model_read(
    stack: Stack, multilingual: indexer_pb2.IndexProgress
) -> None:
    """Each chunk keeps the share of its text the English model reads; the vector leg reports the
    lesser of the question's and its answers' mean, so an English question whose nearest chunks
    are Chinese is read in part too."""
    pool = await stack.resources.pool()
    rows = await pool.fetch(
        "SELECT file_path, chunk_id, model_coverage FROM chunks WHERE corpus_id = $1", CORPUS
    )
    read = {r["file_path"]: r["model_coverage"] for r in rows}
    assert read["trains.txt"] == read["liver.txt"] == 1.0
    assert 0 < read["tianqi.txt"] < 0.9 and 0 < read["duqu.txt"] < 0.9
    by_chunk = {r["chunk_id"]: r["model_coverage"] for r in rows}

    async def coverage(query: str, top_k: int) -> tuple[float, float]:
        async with stack.channel("vector") as channel:
            reply = await vector_pb2_grpc.VectorSearchStub(channel).Search(
                common_pb2.SearchRequest(corpus_id=CORPUS, query=query, top_k=top_k), timeout=30
            )
        answered = [by_chunk[m.chunk_id] for m in reply.matches]
        return reply.coverage, sum(answered) / len(answered)

    reported, answers = await coverage("the weather in Beijing tomorrow", 8)  # every chunk answers
    assert reported == pytest.approx(answers, abs=1e-6) and reported < 1.0
    reported, answers = await coverage("读取文件", 8)  # a question read in part: the lesser
    assert 0 < reported < answers


async def test_gateway_gives_no_graph_weight_to_a_corpus_of_documents(
    stack: Stack, multilingual: indexer_pb2.IndexProgress
) -> None:
    reply = await fused(stack, "读取文件")
    assert reply.weights["graph"] == 0.0
    assert reply.weights["vector"] + reply.weights["sparse"] == pytest.approx(1.0)
    assert "100% prose" in reply.weights_reason
    assert reply.matches[0].file_path == "duqu.txt"


async def test_a_prose_question_is_not_a_code_question_on_documents(
    stack: Stack, multilingual: indexer_pb2.IndexProgress
) -> None:
    reply = await fused(stack, "who is a member of the garden club")
    assert (
        spelling(QueryKind.DESCRIPTOR, reply.query_kind) == "natural"
    )  # on a code corpus: "structural" (class members)
    assert reply.weights["graph"] == 0.0
