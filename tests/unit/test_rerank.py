"""The rerank stage's pure parts: reading a /rerank answer, reordering, and what config refuses."""

from __future__ import annotations

import math

import pytest

from services.fusion.rerank import RerankError, document_text, relevance_scores, reorder
from tribrid.config import ConfigError, load_config
from tribrid.v1 import common_pb2, legs_pb2


def test_relevance_scores_by_index_in_either_common_shape() -> None:
    cohere = {"results": [{"index": 1, "relevance_score": 0.9}, {"index": 0, "relevance_score": 0.2}]}
    assert relevance_scores(cohere, 2) == [0.2, 0.9]
    tei = [{"index": 0, "score": 3}, {"index": 1, "score": -1.5}]  # TEI: a bare list, `score`
    assert relevance_scores(tei, 2) == [3.0, -1.5]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"results": [{"index": 0, "relevance_score": 0.5}]}, "scored 1 of the 2 documents"),
        ({"results": [{"index": 0, "relevance_score": 1}, {"index": 0, "relevance_score": 1}]}, "once"),
        ({"results": [{"index": 2, "relevance_score": 1}, {"index": 0, "relevance_score": 1}]}, "index 2"),
        (
            {"results": [{"index": 0, "relevance_score": math.nan}, {"index": 1, "relevance_score": 1}]},
            "finite",
        ),
        ({"results": [{"index": 0}, {"index": 1, "relevance_score": 1}]}, "finite"),
        ({"data": []}, "no results list"),
        ({"results": ["a", "b"]}, "not an object"),
    ],
)
def test_an_answer_that_does_not_score_each_document_once_is_refused(body: object, message: str) -> None:
    with pytest.raises(RerankError, match=message):
        relevance_scores(body, 2)


def test_reorder_by_relevance_ties_in_fused_order() -> None:
    matches = [common_pb2.ChunkMatch(chunk_id=c, score=1.0) for c in "abcd"]
    reranked = reorder(matches, [0.1, 0.7, 0.1, 0.9])
    assert [m.chunk_id for m in reranked] == ["d", "b", "a", "c"]
    assert [m.score for m in reranked] == [0.9, 0.7, 0.1, 0.1]
    entries = [(e.leg, e.rank, e.fused_rank, e.raw_score) for m in reranked for e in m.explain]
    assert entries == [
        (legs_pb2.LEG_RERANK, 1, 4, 0.9),
        (legs_pb2.LEG_RERANK, 2, 2, 0.7),
        (legs_pb2.LEG_RERANK, 3, 1, 0.1),
        (legs_pb2.LEG_RERANK, 4, 3, 0.1),
    ]


def test_document_text_names_the_place_and_is_cut() -> None:
    code = common_pb2.ChunkMatch(
        file_path="shop/cart.py", symbol="Cart.total", content="def total(self): ..."
    )
    assert document_text(code, 2000) == "shop/cart.py Cart.total\ndef total(self): ..."
    doc = common_pb2.ChunkMatch(file_path="a.md", section="Guide > Install", content="pip install x" * 50)
    assert document_text(doc, 30) == ("Guide > Install\n" + "pip install x" * 50)[:30]


def test_rerank_config() -> None:
    assert not load_config().rerank.configured and not load_config().fusion.enable_rerank  # off by default
    cfg = load_config(fusion={"enable_rerank": True}, rerank={"base_url": "http://127.0.0.1:1/v1"})
    assert cfg.fusion.enable_rerank and cfg.rerank.configured
    with pytest.raises(ConfigError, match=r"needs|set rerank\.base_url"):
        load_config(fusion={"enable_rerank": True})
    with pytest.raises(ConfigError, match="rerank_candidates"):
        load_config(fusion={"rerank_candidates": 0})
