"""The entity sets' fusion bound (evaluation/entity_bounds.py): the best order of the union of the
legs' lists, and which questions only the graph's list can answer."""

from __future__ import annotations

import math

import pytest

from evaluation.entity_bounds import WITH_GRAPH, WITHOUT_GRAPH, bound
from evaluation.metrics import Span
from evaluation.refuse import LegLists
from evaluation.run import EvalQuery
from services.fusion.gateway import LegOutcome
from tribrid.question import read
from tribrid.v1 import common_pb2, fusion_pb2


def match(chunk: str, line: int) -> common_pb2.ChunkMatch:
    return common_pb2.ChunkMatch(chunk_id=chunk, file_path="chapter-001.txt", start_line=line, end_line=line)


def lists(by_leg: dict[str, list[common_pb2.ChunkMatch]]) -> LegLists:
    answered = {leg: LegOutcome(leg, fusion_pb2.LEG_STATUS_OK, matches=m) for leg, m in by_leg.items()}
    return LegLists("c", "q", read("q"), None, answered, {}, 30)


QUERY = EvalQuery("q1", "q", [Span("chapter-001.txt", 5, 5), Span("chapter-001.txt", 9, 9)], [])


def test_the_bound_ranks_every_answer_any_list_holds_first() -> None:
    legs = lists(
        {
            "vector": [match("a", 1), match("b", 2)],
            "sparse": [match("c", 3), match("d", 5)],  # one answer, second in its list
            "graph": [match("e", 9)],  # the other answer, in the graph's list only
        }
    )
    # one of the two answers, first: DCG 1 over the ideal 1 + 1/log2(3)
    assert bound(QUERY, legs, WITHOUT_GRAPH) == pytest.approx(1 / (1 + 1 / math.log2(3)))
    assert bound(QUERY, legs, WITH_GRAPH) == 1.0


def test_a_chunk_listed_by_several_legs_counts_once() -> None:
    legs = lists({"vector": [match("d", 5)], "sparse": [match("d", 5)], "graph": [match("d", 5)]})
    assert bound(QUERY, legs, WITH_GRAPH) == bound(QUERY, legs, WITHOUT_GRAPH) < 1.0
