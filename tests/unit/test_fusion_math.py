"""Fusion math against hand-computed examples."""

from __future__ import annotations

import pytest

from services.fusion.fuse import (
    Fused,
    LegContribution,
    Ranked,
    document_context,
    keep_leg_order,
    normalize_scores,
    normalize_weights,
    rrf,
    weighted,
)


def ranked(*ids: str) -> list[Ranked]:
    return [Ranked(i, 1.0 / (n + 1)) for n, i in enumerate(ids)]


def test_rrf_equal_weights_hand_computed() -> None:
    fused = rrf({"a": ranked("x", "y"), "b": ranked("y", "z")}, {"a": 1, "b": 1}, k=60)
    scores = {f.item_id: f.score for f in fused}
    assert scores["y"] == pytest.approx(0.5 / 62 + 0.5 / 61)
    assert scores["x"] == pytest.approx(0.5 / 61)
    assert scores["z"] == pytest.approx(0.5 / 62)
    assert [f.item_id for f in fused] == ["y", "x", "z"]


def test_rrf_k_changes_the_order() -> None:
    # x: rank 1 in one leg; y: rank 3 in both legs. Small k favours the single top hit.
    legs = {"a": ranked("x", "p", "y"), "b": ranked("q", "r", "y")}
    small = [f.item_id for f in rrf(legs, {"a": 1, "b": 1}, k=1)]
    large = [f.item_id for f in rrf(legs, {"a": 1, "b": 1}, k=60)]
    assert small.index("x") < small.index("y")
    assert large.index("y") < large.index("x")


def test_rrf_weights_are_normalized_and_applied() -> None:
    fused = rrf({"a": ranked("x"), "b": ranked("y")}, {"a": 3, "b": 1}, k=60)
    assert [f.item_id for f in fused] == ["x", "y"]
    assert fused[0].score == pytest.approx(0.75 / 61)
    assert fused[1].score == pytest.approx(0.25 / 61)
    assert fused[0].contributions["b"].rank == 0  # absent from leg b, and said so


def test_rrf_ties_break_by_best_rank_then_id() -> None:
    # Same score for "m" and "n" (each rank 1 in one equal-weight leg): order by id.
    fused = rrf({"a": ranked("n"), "b": ranked("m")}, {"a": 1, "b": 1}, k=60)
    assert [f.item_id for f in fused] == ["m", "n"]
    again = rrf({"b": ranked("m"), "a": ranked("n")}, {"a": 1, "b": 1}, k=60)
    assert [f.item_id for f in again] == ["m", "n"]


def test_rrf_rejects_bad_k_and_weights() -> None:
    with pytest.raises(ValueError):
        rrf({"a": ranked("x")}, {"a": 1}, k=0)
    with pytest.raises(ValueError):
        normalize_weights({"a": 0, "b": 0})
    assert normalize_weights({"a": 0.4, "b": 0.3, "c": 0.3}) == pytest.approx({"a": 0.4, "b": 0.3, "c": 0.3})
    assert normalize_weights({"a": 2, "b": 2}) == {"a": 0.5, "b": 0.5}


def test_normalization_edge_cases() -> None:
    assert normalize_scores([5.0], "min_max") == [1.0]
    assert normalize_scores([2.0, 2.0, 2.0], "min_max") == [1.0, 1.0, 1.0]
    assert normalize_scores([2.0, 2.0], "z_score") == [1.0, 1.0]
    assert normalize_scores([1.0, 3.0], "min_max") == [0.0, 1.0]
    # z_score: mean 2, std 1 -> [mean-3std, mean+3std] = [-1, 5] maps to [0, 1]
    assert normalize_scores([1.0, 3.0], "z_score") == pytest.approx([2 / 6, 4 / 6])
    assert normalize_scores([3.0, 1.0], "none") == [3.0, 1.0]
    assert normalize_scores([], "min_max") == []


def test_weighted_fusion_hand_computed() -> None:
    legs = {"a": [Ranked("x", 10.0), Ranked("y", 5.0)], "b": [Ranked("y", 0.9), Ranked("z", 0.1)]}
    fused = weighted(legs, {"a": 0.5, "b": 0.5}, "min_max")
    scores = {f.item_id: f.score for f in fused}
    assert scores == pytest.approx({"x": 0.5, "y": 0.5, "z": 0.0})
    # x and y tie at 0.5; both best rank 1; id decides
    assert [f.item_id for f in fused] == ["x", "y", "z"]


def test_dbsf_keeps_the_order_of_a_far_better_leg() -> None:
    """The structural profile trusts the graph (0.85): its order survives the other legs' opposite
    orders, and its clear winner stays first even when only the others agree on another chunk,
    which RRF k=60, counting positions only, promotes."""
    weights = {"vector": 0.05, "sparse": 0.1, "graph": 0.85}
    graph = [Ranked(f"c{i}", score) for i, score in enumerate([1.0, 0.8, 0.64, 0.48, 0.3, 0.2])]
    reverse = [Ranked(f"c{5 - i}", 10.0 - i) for i in range(6)]  # the opposite order
    lists = {"graph": graph, "vector": reverse, "sparse": reverse}
    assert [f.item_id for f in weighted(lists, weights, "z_score")] == [r.item_id for r in graph]

    clear = [Ranked(f"c{i}", score) for i, score in enumerate([1.0, 0.6, 0.55, 0.5, 0.45, 0.4])]
    others = [Ranked("c2", 9.0)] + [Ranked(f"x{i}", 8.0 - i) for i in range(5)]  # c0 not there
    lists = {"graph": clear, "vector": others, "sparse": others}
    assert weighted(lists, weights, "z_score")[0].item_id == "c0"
    assert rrf(lists, weights, 60)[0].item_id == "c2"


def _item(item_id: str, fused_score: float, lead_rank: int = 0, lead_score: float = 0.0) -> Fused:
    return Fused(item_id, fused_score, 1, {"graph": LegContribution(lead_rank, lead_score, 0.0)})


def test_keep_leg_order_keeps_the_lead_legs_order_and_places_the_rest_by_score() -> None:
    """The graph ranks a > {b, c} (a tie) > d; the other legs lifted b above a. Kept: a first, the
    tie b, c in fused order, and x / y (not in the graph's list) where their scores stand."""
    fused = [
        _item("b", 0.8, 2, 0.5),
        _item("a", 0.7, 1, 0.9),
        _item("x", 0.6),
        _item("c", 0.55, 3, 0.5),
        _item("d", 0.3, 4, 0.1),
        _item("y", 0.2),
    ]
    kept = keep_leg_order(fused, "graph")
    assert [f.item_id for f in kept] == ["a", "b", "x", "c", "d", "y"]
    assert [f.score for f in kept] == [0.7, 0.7, 0.6, 0.55, 0.3, 0.2]  # sorted: b lowered to a's


def test_a_far_better_leg_keeps_its_order_after_fusion() -> None:
    """The graph's callers A > B > C; the name-matching legs rank the definition asked about (D,
    the graph's own below its callers) first. Weighted fusion lifts D over B; the kept order
    does not, and G, H (the graph's weak tail) stay after D."""
    graph = [
        Ranked(i, s) for i, s in (("A", 0.88), ("B", 0.7), ("C", 0.64), ("D", 0.5), ("G", 0.13), ("H", 0.13))
    ]
    sparse = [Ranked("D", 30.0), Ranked("E", 5.0), Ranked("F", 4.0), Ranked("A", 3.0)]
    vector = [Ranked("D", 0.9), Ranked("E", 0.3), Ranked("A", 0.2), Ranked("F", 0.1)]
    lists = {"graph": graph, "sparse": sparse, "vector": vector}
    weights = {"graph": 0.85, "sparse": 0.1, "vector": 0.05}
    fused = weighted(lists, weights, "z_score")
    assert [f.item_id for f in fused][:3] == ["A", "D", "B"]
    kept = [f.item_id for f in keep_leg_order(fused, "graph")]
    assert kept == ["A", "B", "C", "D", "G", "H", "E", "F"]


def _items(*scored: tuple[str, float]) -> list[Fused]:
    return [Fused(item_id, score, rank) for rank, (item_id, score) in enumerate(scored, start=1)]


def test_document_context_adds_a_share_of_the_best_other_passage_of_the_document() -> None:
    """a1 and a2 are passages of one document, b1 the only one of its own, c a code chunk (None):
    each of a's gains 0.5 x the other's score, so a2 (0.5 + 0.5 x 0.6) passes b1 (0.7)."""
    document = {"a1": "a", "a2": "a", "b1": "b", "c": None}
    fused = _items(("b1", 0.7), ("a1", 0.6), ("c", 0.55), ("a2", 0.5))
    ordered = document_context(fused, document.__getitem__, 0.5)
    assert [(f.item_id, round(f.score, 6), round(f.context, 6)) for f in ordered] == [
        ("a1", 0.85, 0.25),
        ("a2", 0.8, 0.3),
        ("b1", 0.7, 0.0),
        ("c", 0.55, 0.0),
    ]


def test_document_context_leaves_single_passages_and_share_zero_alone() -> None:
    fused = _items(("x", 0.9), ("y", 0.4))
    assert [(f.item_id, f.score) for f in document_context(fused, lambda item: item, 0.5)] == [
        ("x", 0.9),
        ("y", 0.4),
    ]
    same = _items(("x", 0.9), ("y", 0.4))
    assert [(f.item_id, f.score) for f in document_context(same, lambda item: "d", 0.0)] == [
        ("x", 0.9),
        ("y", 0.4),
    ]


def test_ties_within_float_noise_sort_together_and_huge_scores_still_sort() -> None:
    """Sums that differ only by float rounding tie (best rank, then id, decides); scores too large to
    scale to 12 decimals (normalization none) still sort, first."""
    legs = {
        "a": [Ranked("y", 0.1 + 0.2), Ranked("x", 0.3), Ranked("big", 1e200), Ranked("inf", float("inf"))]
    }
    fused = weighted(legs, {"a": 1.0}, "none")
    assert [f.item_id for f in fused] == ["inf", "big", "y", "x"]
