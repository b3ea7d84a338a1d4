"""bench/bench_expansion.py's scoring and diff against hand-computed answers, and one set run
through it with a stand-in gateway that answers each variant with a fixed list."""

from __future__ import annotations

import math

import pytest

from bench.bench_expansion import (
    BASELINE,
    Answer,
    Scored,
    change,
    credits,
    evaluate_set,
    score_answer,
    summarize,
    variants,
)
from evaluation.metrics import Span, is_strict_match, score_query
from evaluation.run import EvalQuery
from tribrid.options import option_values
from tribrid.v1 import common_pb2, fusion_pb2, legs_pb2

# Two answers of a FAQ: lines 10-29 and 40-59 of faq.txt.
RELEVANT = [Span("faq.txt", 10, 29), Span("faq.txt", 40, 59)]
ANSWER_1 = Span("faq.txt", 10, 20)  # the first answer's head: strict
ANSWER_2 = Span("faq.txt", 40, 59)
AROUND_1 = Span("faq.txt", 1, 12)  # mostly other lines: loose only
OTHER = [Span("other.txt", i * 10, i * 10 + 5) for i in range(30)]


def test_credits_and_scores_match_the_eval_metrics() -> None:
    hits = [OTHER[0], AROUND_1, OTHER[1], ANSWER_1, *OTHER[2:14], ANSWER_2]  # ANSWER_2 at rank 17
    assert credits(hits, RELEVANT, 20, is_strict_match) == {0: 3, 1: 16}
    assert credits(hits, RELEVANT, 10, is_strict_match) == {0: 3}
    scored = score_answer(Answer(hits, [False] * len(hits)), RELEVANT)
    reference = score_query(hits, RELEVANT, strict=is_strict_match)
    # strict: one of two in the top 10, at rank 4; both in the top 20
    ideal = 1 + 1 / math.log2(3)
    assert scored.ndcg10 == pytest.approx(reference.ndcg10) == pytest.approx((1 / math.log2(5)) / ideal)
    assert scored.recall20 == reference.recall20 == 1.0
    # loose: AROUND_1 (rank 2) takes the first answer, ANSWER_1 no longer counts, ANSWER_2 past 10
    assert (
        scored.ndcg10_loose
        == pytest.approx(reference.ndcg10_loose)
        == pytest.approx((1 / math.log2(3)) / ideal)
    )
    assert scored.recall20_loose == 1.0
    assert (scored.found10, scored.found20, scored.expanded20) == ({0: 3}, {0: 3, 1: 16}, 0)


def test_change_says_what_expansion_gained_and_lost() -> None:
    query = EvalQuery("faq-1", "how do I", RELEVANT, [])
    base_hits = [ANSWER_1, *OTHER[:19]]  # the first answer at rank 1, the second nowhere
    base = score_answer(Answer(base_hits, [False] * 20), RELEVANT)
    # with expansion: the fused ten without ANSWER_1, then ANSWER_2 expanded at rank 12
    hits = [*OTHER[:10], OTHER[20], ANSWER_2, *OTHER[21:29]]
    expanded = [False] * 10 + [True] * 10
    answer = Answer(hits, expanded)
    found = change(query, base, score_answer(answer, RELEVANT), answer)
    assert found is not None
    assert (found.gained10, found.lost10, found.gained20, found.lost20) == ([], [0], [1], [0])
    assert found.gained_by_expanded == [1]
    # the same found spans: no change, whatever else moved
    moved = Answer([OTHER[5], ANSWER_1, *OTHER[:5]], [True] + [False] * 6)
    assert change(query, base, score_answer(moved, RELEVANT), moved) is None
    # a gain from a fused match the interleaved answer moved up is not an expanded one's
    up = Answer([ANSWER_2, ANSWER_1], [False, True])
    gained = change(query, base, score_answer(up, RELEVANT), up)
    assert gained is not None and (gained.gained10, gained.gained_by_expanded) == ([1], [])


def test_summarize_counts_questions() -> None:
    scored = [
        Scored(1.0, 1.0, 1.0, 1.0, {0: 0}, {0: 0}, 2),
        Scored(0.0, 0.5, 0.5, 1.0, {}, {1: 12}, 4),
    ]
    query = EvalQuery("q", "q", RELEVANT, [])
    base = Scored(0.0, 0.0, 0.0, 0.0, {}, {}, 0)
    changes = [
        c
        for s in scored
        if (c := change(query, base, s, Answer([ANSWER_1] * 13, [False] * 12 + [True]))) is not None
    ]
    summary = summarize(scored, changes, errors={"UNAVAILABLE": 1})
    assert summary == {
        "queries": 2,
        "errors": {"UNAVAILABLE": 1},
        "ndcg10": 0.5,
        "ndcg10_loose": 0.75,
        "recall20": 0.75,
        "recall20_loose": 1.0,
        "expanded_in_top20": 3.0,
        "gained10": 1,
        "lost10": 0,
        "gained20": 2,
        "lost20": 0,
        "gained_by_expanded": 1,
    }


async def test_a_set_through_a_stand_in_gateway() -> None:
    assert [(v.name, v.top_k) for v in variants(["interleave"])] == [
        (BASELINE, 20),
        ("expansion-interleave", 20),
    ]
    runs = variants(["append", "interleave"], fused_k=10)
    assert [(v.name, v.top_k) for v in runs] == [
        (BASELINE, 20),
        ("fused-top10", 10),
        ("expansion-append", 10),
        ("expansion-interleave", 20),
    ]
    queries = [EvalQuery("faq-1", "first", RELEVANT, []), EvalQuery("faq-2", "second", RELEVANT[:1], [])]
    asked: list[tuple[str, int, dict[str, object]]] = []

    def match(span: Span, expanded: bool = False) -> common_pb2.ChunkMatch:
        return common_pb2.ChunkMatch(
            file_path=span.path, start_line=span.start_line, end_line=span.end_line, expanded=expanded
        )

    async def search(request: common_pb2.SearchRequest) -> fusion_pb2.FusionSearchResponse:
        options = option_values(request.options.fusion)
        asked.append((request.query, request.top_k, options))
        if request.query == "second":  # expansion changes nothing here: it timed out
            timed_out = fusion_pb2.LegReport(leg=legs_pb2.LEG_EXPANSION, status=fusion_pb2.LEG_STATUS_TIMEOUT)
            stage = [timed_out] if options["enable_expansion"] else []
            return fusion_pb2.FusionSearchResponse(matches=[match(ANSWER_1)], legs=stage)
        fused = [match(s) for s in [ANSWER_1, *OTHER[:19]][: request.top_k]]
        if not options["enable_expansion"]:
            return fusion_pb2.FusionSearchResponse(matches=fused)
        extra = [match(ANSWER_2, expanded=True)]
        appended = options["expansion_placement"] == "append"
        placed = [*fused, *extra] if appended else [fused[0], *extra, *fused[1:]]
        return fusion_pb2.FusionSearchResponse(matches=placed)

    result = await evaluate_set(search, "eval-faq", queries, runs, concurrency=2)
    assert sorted((q, k, o["enable_expansion"], o.get("expansion_placement", "")) for q, k, o in asked) == [
        ("first", 10, False, ""),
        ("first", 10, True, "append"),
        ("first", 20, False, ""),
        ("first", 20, True, "interleave"),
        ("second", 10, False, ""),
        ("second", 10, True, "append"),
        ("second", 20, False, ""),
        ("second", 20, True, "interleave"),
    ]
    summary = result["summary"]
    assert summary[BASELINE]["recall20"] == pytest.approx(0.75)  # 1/2 and 1/1
    assert summary["expansion-append"]["recall20"] == 1.0
    assert (summary["expansion-append"]["gained10"], summary["expansion-append"]["gained20"]) == (0, 1)
    assert (summary["expansion-interleave"]["gained10"], summary["expansion-interleave"]["gained20"]) == (
        1,
        1,
    )
    assert summary["expansion-interleave"]["ndcg10"] == pytest.approx(1.0)  # both ideal
    assert summary["expansion-append"]["ndcg10"] == pytest.approx(summary[BASELINE]["ndcg10"])
    (appended,) = result["changes"]["expansion-append"]
    assert appended["id"] == "faq-1" and appended["gained20"] == [1] and appended["gained_by_expanded"] == [1]
    assert result["changes"][BASELINE] == result["changes"]["fused-top10"] == []
    assert summary["fused-top10"]["recall20"] == pytest.approx(0.75)
    assert summary[BASELINE]["errors"] == summary["fused-top10"]["errors"] == {}
    assert summary["expansion-append"]["errors"] == {"expansion LEG_STATUS_TIMEOUT": 1}
