"""Fusion explain data and the gateway's post-fusion stages, against hand-computed examples (through
the gateway on the real stack: tests/integration/test_fusion_gateway.py)."""

from __future__ import annotations

import pytest

from services.fusion.fuse import Fused, Ranked, cap_per_file, confidence, normalize_scores, rrf, weighted
from services.fusion.gateway import FusionPlan, confident_weights, entity_plan, in_document_context, plan
from tribrid.config import EmbeddingConfig, FusionConfig
from tribrid.corpus_profile import CorpusProfile
from tribrid.coverage import model_coverage
from tribrid.v1 import (
    common_pb2,
)

# --- pure math ------------------------------------------------------------------------------------


def test_single_result_rrf_and_weighted() -> None:
    (only,) = rrf({"a": [Ranked("x", 7.0)]}, {"a": 0.4}, k=60)
    assert only.score == pytest.approx(1 / 61)  # the lone leg's weight renormalizes to 1
    c = only.contributions["a"]
    assert (c.rank, c.raw_score, c.contribution) == (1, 7.0, only.score)
    assert c.normalized == pytest.approx(1 / 61)
    for method in ("min_max", "z_score"):
        (alone,) = weighted({"a": [Ranked("x", 7.0)]}, {"a": 0.4}, method)  # type: ignore[arg-type]
        assert alone.score == pytest.approx(1.0)
    (raw,) = weighted({"a": [Ranked("x", 7.0)]}, {"a": 0.4}, "none")
    assert raw.score == pytest.approx(7.0)


def test_all_equal_scores() -> None:
    legs = {"a": [Ranked("x", 0.5), Ranked("y", 0.5)], "b": [Ranked("y", 2.0), Ranked("x", 2.0)]}
    for method in ("min_max", "z_score"):
        fused = weighted(legs, {"a": 1, "b": 1}, method)  # type: ignore[arg-type]
        # equal scores normalize to 1.0 in both legs: a tie, broken by best rank then id
        assert [f.score for f in fused] == pytest.approx([1.0, 1.0])
        assert [f.item_id for f in fused] == ["x", "y"]
    # RRF: x is rank 1 + rank 2, y is rank 2 + rank 1 -> equal sums, best rank 1 each, id order
    assert [f.item_id for f in rrf(legs, {"a": 1, "b": 1}, k=60)] == ["x", "y"]


def test_weight_renormalization_and_contributions() -> None:
    legs = {"a": [Ranked("x", 1.0), Ranked("y", 0.5)], "b": [Ranked("y", 9.0)], "c": [Ranked("z", 3.0)]}
    fused = rrf(legs, {"a": 2.0, "b": 1.0, "c": 1.0}, k=10)
    by_id = {f.item_id: f for f in fused}
    # weights 2:1:1 -> 0.5, 0.25, 0.25
    assert by_id["x"].score == pytest.approx(0.5 / 11)
    assert by_id["y"].score == pytest.approx(0.5 / 12 + 0.25 / 11)
    assert by_id["z"].score == pytest.approx(0.25 / 11)
    for item in fused:
        assert sum(c.contribution for c in item.contributions.values()) == pytest.approx(item.score)
        assert set(item.contributions) == {"a", "b", "c"}
    assert by_id["x"].contributions["b"].rank == 0  # absent
    assert by_id["y"].contributions["b"].normalized == pytest.approx(1 / 11)
    assert by_id["y"].contributions["b"].contribution == pytest.approx(0.25 / 11)
    # dropping leg c (disabled or failed) renormalizes a and b to 2/3, 1/3
    two = {f.item_id: f.score for f in rrf({"a": legs["a"], "b": legs["b"]}, {"a": 2.0, "b": 1.0}, k=10)}
    assert two["x"] == pytest.approx((2 / 3) / 11)


def test_weighted_z_score_is_dbsf() -> None:
    # scores 1, 2, 3, 10: mean 4, population std sqrt(12.5); DBSF: clip((s-mean)/(3 std), -1, 1) -> [0, 1]
    scores = [10.0, 3.0, 2.0, 1.0]
    std = 12.5**0.5
    expected = [min(1.0, max(-1.0, (s - 4) / (3 * std))) / 2 + 0.5 for s in scores]
    assert normalize_scores(scores, "z_score") == pytest.approx(expected)
    legs = {"a": [Ranked(str(i), s) for i, s in enumerate(scores)], "b": [Ranked("3", 5.0)]}
    fused = {f.item_id: f for f in weighted(legs, {"a": 3, "b": 1}, "z_score")}
    assert fused["3"].score == pytest.approx(0.75 * expected[3] + 0.25 * 1.0)
    assert fused["3"].contributions["a"].contribution == pytest.approx(0.75 * expected[3])


def test_confidence_is_how_far_the_top_score_stands_above_its_list() -> None:
    # 10, 3, 2, 1 of the 4 asked for: mean 4, population std sqrt(12.5)
    assert confidence([10.0, 3.0, 2.0, 1.0], 4) == pytest.approx(6 / 12.5**0.5)
    assert confidence([5.0, 5.0, 5.0], 3) == 0.0  # nothing stands out
    assert confidence([], 30) == 0.0


def test_a_short_list_stands_out_of_the_places_it_left_empty() -> None:
    # One hit of 30: the 29 empty places matched nothing (0), so the hit's z is sqrt(29).
    assert confidence([7.5], 30) == pytest.approx(29**0.5)
    assert confidence([9.0, 1.0], 30) == pytest.approx(confidence([9.0, 1.0] + [0.0] * 28, 30))
    assert confidence([9.0, 1.0], 30) > 5
    # Below-zero scores (cosine): the empty places score no better than the lowest.
    assert confidence([0.2, -0.4], 2) == pytest.approx(1.0)
    assert confidence([0.2, -0.4], 4) == pytest.approx(confidence([0.2, -0.4, -0.4, -0.4], 4))


def test_a_one_hit_sparse_list_with_the_right_document_leads_the_fusion() -> None:
    """The sparse leg's only hit is the right document; the vector leg ranks it low in a flat list.
    Scaled by confidence, the one hit counts (it had weight 0 when a list under 3 had no confidence)."""
    flat = [0.62 - 0.005 * i for i in range(30)]
    vector = [Ranked("right" if i == 20 else f"doc-{i}", s) for i, s in enumerate(flat)]
    sparse = [Ranked("right", 4.2)]
    natural = _natural_plan()
    weights, reason = confident_weights(natural, {"vector": flat, "sparse": [4.2]}, 30)
    assert weights["sparse"] > weights["vector"] > 0 and "sparse 5.39" in reason
    legs = {"vector": vector, "sparse": sparse}
    fused = weighted(legs, {leg: weights[leg] for leg in legs}, natural.cfg.normalization)
    assert fused[0].item_id == "right"


def _natural_plan(**fusion: object) -> FusionPlan:
    request = common_pb2.SearchRequest(corpus_id="c", query="read the configuration from a file")
    return plan(FusionConfig.model_validate(fusion), request)


def test_a_confident_leg_weighs_more_on_prose_questions_and_nothing_else_changes() -> None:
    flat = [5.0 - 0.1 * i for i in range(30)]  # evenly spread: the top's z is about 1.7
    standout = [9.0] + [2.0 - 0.01 * i for i in range(29)]  # one clear winner: z about 5.37
    scores = {"vector": flat, "sparse": standout, "graph": flat}
    natural = _natural_plan()
    assert natural.reading.kind == "natural" and natural.confidence_scaled
    weights, reason = confident_weights(natural, scores, 30)
    assert natural.weights["vector"] > natural.weights["sparse"]
    assert weights["sparse"] > weights["vector"] and sum(weights.values()) == pytest.approx(1.0)
    assert "confidence" in reason and "sparse 5.37" in reason
    # Plain RRF, explicit weights and a power of 0 are used as given.
    for kept in (
        _natural_plan(method="rrf"),
        _natural_plan(adaptive_weights=False),
        _natural_plan(confidence_power=0),
    ):
        assert confident_weights(kept, scores, 30) == (kept.weights, kept.weights_reason)
    # No leg stands out: the profile's weights.
    same = {leg: flat for leg in scores}
    assert confident_weights(natural, same, 30)[0] == pytest.approx(natural.weights)


def test_the_corpus_names_make_a_question_about_a_plain_word_structural() -> None:
    """ "replace" is a definition of this corpus: the question is about its callers, and the graph
    leg gets the structural profile's weight."""
    request = common_pb2.SearchRequest(corpus_id="c", query="From where is the method replace being called?")
    cfg = FusionConfig()
    unknown = plan(cfg, request, CorpusProfile(1, 10, 0))
    assert (unknown.reading.kind, unknown.reading.structural_intent) == ("natural", None)
    known = plan(cfg, request, CorpusProfile(1, 10, 0, frozenset({"replace", "url"})))
    assert (known.reading.kind, known.reading.structural_intent) == ("structural", "callers")
    assert known.weights["graph"] > unknown.weights["graph"]


def test_a_structural_question_keeps_the_graph_legs_order_unless_weights_or_rrf_are_asked() -> None:
    request = common_pb2.SearchRequest(corpus_id="c", query="who calls parse_args")
    assert plan(FusionConfig(), request).lead_leg == "graph"
    assert plan(FusionConfig(lead_legs={}), request).lead_leg == ""
    assert plan(FusionConfig(method="rrf"), request).lead_leg == ""
    assert plan(FusionConfig(adaptive_weights=False), request).lead_leg == ""
    prose = common_pb2.SearchRequest(corpus_id="c", query="read the configuration from a file")
    assert plan(FusionConfig(), prose).lead_leg == ""
    with pytest.raises(ValueError, match="unknown legs"):
        FusionConfig.model_validate({"lead_legs": {"structural": "grpah"}})


def test_tie_order_is_deterministic() -> None:
    # three legs, equal weights: every item has the same multiset of ranks -> the same score
    legs = {
        "a": [Ranked("p", 1), Ranked("q", 1), Ranked("r", 1)],
        "b": [Ranked("q", 1), Ranked("r", 1), Ranked("p", 1)],
        "c": [Ranked("r", 1), Ranked("p", 1), Ranked("q", 1)],
    }
    orders = {tuple(f.item_id for f in rrf(dict(reversed(list(legs.items()))), dict.fromkeys(legs, 1), 60))}
    orders.add(tuple(f.item_id for f in rrf(legs, dict.fromkeys(legs, 1), 60)))
    assert orders == {("p", "q", "r")}


def test_dedup_within_and_across_legs() -> None:
    # a leg listing an item twice counts it once at its best rank; across legs it is one fused item
    fused = rrf(
        {"a": [Ranked("x", 3), Ranked("x", 2), Ranked("y", 1)], "b": [Ranked("x", 1)]}, {"a": 1, "b": 1}, 60
    )
    assert [f.item_id for f in fused] == ["x", "y"]
    assert fused[0].contributions["a"].rank == 1
    assert fused[0].score == pytest.approx(0.5 / 61 + 0.5 / 61)
    assert fused[1].score == pytest.approx(0.5 / 63)


def test_max_chunks_per_file() -> None:
    items = [Fused(i, 1.0 - n / 10, n + 1) for n, i in enumerate(["a1", "a2", "b1", "a3", "b2", "c1"])]
    file_of = {"a1": "a.py", "a2": "a.py", "a3": "a.py", "b1": "b.py", "b2": "b.py", "c1": "c.py"}.__getitem__
    assert [f.item_id for f in cap_per_file(items, file_of, 1)] == ["a1", "b1", "c1"]
    assert [f.item_id for f in cap_per_file(items, file_of, 2)] == ["a1", "a2", "b1", "b2", "c1"]
    assert [f.item_id for f in cap_per_file(items, file_of, 0)] == [f.item_id for f in items]


def _graph_match(seed: str, imported: bool, match: str = "exact") -> common_pb2.ChunkMatch:
    provenance = common_pb2.GraphProvenance(seed_entity=seed, seed_match=match, seed_imported=imported)
    return common_pb2.ChunkMatch(chunk_id=f"c-{seed}", explain=[common_pb2.LegExplain(graph=provenance)])


def test_a_question_naming_imported_entities_of_a_document_corpus_gets_the_entity_weights() -> None:
    request = common_pb2.SearchRequest(corpus_id="c", query="which faction does Zhuge Liang serve")
    documents = CorpusProfile(1, 10, 10)  # all prose: the graph's kind weight is scaled to 0
    natural = plan(FusionConfig(), request, documents)
    assert natural.code_scaled and natural.weights["graph"] == 0.0
    named = entity_plan(natural, [_graph_match("Zhuge Liang", imported=True)])
    assert named.weights == pytest.approx({"vector": 1 / 3, "sparse": 1 / 3, "graph": 1 / 3})
    assert "Zhuge Liang" in named.weights_reason and named.confidence_scaled
    # a recogniser's entity, a prefix match, no graph answer, or a code corpus: the plan as it was
    assert entity_plan(natural, [_graph_match("Perl", imported=False)]) is natural
    assert entity_plan(natural, [_graph_match("Zhuge", imported=True, match="prefix")]) is natural
    assert entity_plan(natural, None) is natural
    code = plan(FusionConfig(), request, CorpusProfile(1, 10, 0))
    assert entity_plan(code, [_graph_match("Zhuge Liang", imported=True)]) is code


def test_a_leg_that_reads_part_of_the_question_is_trusted_as_much_less() -> None:
    flat = [5.0 - 0.1 * i for i in range(30)]
    natural = _natural_plan()
    scores = {"vector": flat, "sparse": flat}
    whole, _ = confident_weights(natural, scores, 30, {"vector": 1.0})
    assert whole == confident_weights(natural, scores, 30)[0]  # 1.0 and unreported are the same
    half, reason = confident_weights(natural, scores, 30, {"vector": 0.5, "sparse": 0.0})
    # the vector leg's confidence halves, its weight (confidence squared) falls to a quarter
    ratio = (half["vector"] / half["sparse"]) / (whole["vector"] / whole["sparse"])
    assert ratio == pytest.approx(0.25) and "reads 50% of what it compares" in reason


def test_the_model_reads_english_whole_and_chinese_in_part() -> None:
    coverage = model_coverage(EmbeddingConfig())
    assert coverage is not None
    assert coverage.of("Which company was d'Artagnan admitted to as a cadet?") == 1.0
    # 林 家 的 女 and the full-width question mark are known: 5 of 10 pieces
    assert coverage.of("林黛玉是哪家的女儿\N{FULLWIDTH QUESTION MARK}") == pytest.approx(0.5)
    assert model_coverage(EmbeddingConfig(provider="openai")) is None
    # a chunk's share, as the indexer stores it: to two decimals, of what the model reads
    long_english = "Athos drew his sword. " * 40 + "\N{GRINNING FACE}"  # the emoji is past what it reads
    assert coverage.of_texts(["林黛玉是哪家的女儿\N{FULLWIDTH QUESTION MARK}", long_english, ""]) == [
        0.5,
        1.0,
        1.0,
    ]
    assert coverage.of_texts(["Athos smiled \N{GRINNING FACE}"]) == [0.75]


def test_a_kind_that_weighs_only_the_graph_keeps_it_on_a_corpus_of_documents() -> None:
    graph_only = FusionConfig(query_kind_weights={"natural": {"vector": 0.0, "sparse": 0.0, "graph": 1.0}})
    request = common_pb2.SearchRequest(corpus_id="c", query="read the configuration from a file")
    documents = CorpusProfile(1, 10, 10)
    kept = plan(graph_only, request, documents)
    assert kept.reading.kind == "natural"
    assert kept.weights == {"vector": 0.0, "sparse": 0.0, "graph": 1.0} and not kept.code_scaled
    # with another leg weighed, the graph's share is scaled away as before
    shared = FusionConfig(query_kind_weights={"natural": {"vector": 0.5, "sparse": 0.0, "graph": 0.5}})
    assert plan(shared, request, documents).weights == {"vector": 1.0, "sparse": 0.0, "graph": 0.0}


def test_document_context_fades_from_a_corpus_of_documents_to_none_at_half_code() -> None:
    """Two passages of one page: the second gains share x ramp x the first's score, the ramp being
    1 for documents alone, 1/2 at three quarters prose, and 0 at half (or unknown: taken as code)."""
    matches = {
        cid: common_pb2.ChunkMatch(chunk_id=cid, file_path="page.md", language="markdown") for cid in "ab"
    }
    cfg = FusionConfig(document_context=0.4)
    gained = {}
    for prose_chunks in (100, 75, 50):
        fused = [Fused("a", 1.0, 1), Fused("b", 0.5, 2)]
        ordered = in_document_context(cfg, fused, matches, CorpusProfile(1, 100, prose_chunks))
        gained[prose_chunks] = {f.item_id: round(f.context, 6) for f in ordered}
    assert gained == {100: {"a": 0.2, "b": 0.4}, 75: {"a": 0.1, "b": 0.2}, 50: {"a": 0.0, "b": 0.0}}
    unknown = in_document_context(cfg, [Fused("a", 1.0, 1), Fused("b", 0.5, 2)], matches, None)
    assert [f.context for f in unknown] == [0.0, 0.0]
