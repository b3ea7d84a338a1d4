"""`tribrid tune` without services (evaluation/tune.py): the judged file's validation, the fold split,
the weight grid, and the search on leg lists made up so that one leg is plainly right."""

from __future__ import annotations

import tomllib
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from evaluation.metrics import Span
from evaluation.refuse import LegLists, gateway_order
from evaluation.tune import (
    Fetched,
    Judged,
    JudgedFileError,
    Space,
    TuneError,
    cross_validate,
    fold_split,
    learn,
    load_judged,
    ndcg10,
    score_all,
    simplex,
    snippet,
)
from services.fusion.gateway import LegOutcome
from tribrid.config import FusionConfig
from tribrid.question import Reading
from tribrid.v1 import common_pb2, fusion_pb2

# ---- the judged file


def _write(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "judged.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_an_eval_set_line_and_a_chunk_id_line_load(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        '{"id": "doc-1", "query": "open a file", "relevant": [{"path": "a.py", "start_line": 3,'
        ' "end_line": 9}], "tags": ["docstring"]}',
        "",
        '{"query": "who calls f", "relevant_chunk_ids": ["c1", "c2"], "corpus": "other"}',
    )
    first, second = load_judged(path, "mine")
    assert first.corpus == "mine" and first.spans == (Span("a.py", 3, 9),) and not first.chunk_ids
    assert second.corpus == "other" and second.chunk_ids == {"c1", "c2"} and second.n_relevant == 2


def test_the_real_eval_sets_load() -> None:
    sets = Path(__file__).resolve().parents[2] / "evals" / "sets"
    assert len(load_judged(sets / "identifier.jsonl", "eval-code")) == 80


@pytest.mark.parametrize(
    ("line", "names"),
    [
        ("{not json", ("line 2", "Invalid JSON")),
        ('{"relevant_chunk_ids": ["c"]}', ("line 2", "query", "Field required")),
        ('{"query": "  ", "relevant_chunk_ids": ["c"]}', ("line 2", "query is blank")),
        ('{"query": "q"}', ("line 2", "exactly one of relevant")),
        (
            '{"query": "q", "relevant_chunk_ids": ["c"], "relevant": [{"path": "a", "start_line": 1,'
            ' "end_line": 1}]}',
            ("line 2", "exactly one of relevant"),
        ),
        ('{"query": "q", "relevant": []}', ("line 2", "relevant", "at least 1")),
        (
            '{"query": "q", "relevant": [{"path": "a.py", "start_line": 9, "end_line": 3}]}',
            ("line 2", "relevant.0", "end_line 3 is before start_line 9"),
        ),
        (
            '{"query": "q", "relevant": [{"path": "a.py", "start_line": "9", "end_line": 12}]}',
            ("line 2", "relevant.0.start_line", "valid integer", "'9'"),
        ),
        (
            '{"query": "q", "relevant": [{"path": "a.py", "start_line": 0, "end_line": 2}]}',
            ("line 2", "relevant.0.start_line", "greater than or equal to 1"),
        ),
        ('{"query": "q", "relevent": [{"path": "a.py"}]}', ("line 2", "relevent", "Extra inputs")),
        ('{"query": "q", "relevant_chunk_ids": "c1"}', ("line 2", "relevant_chunk_ids", "valid array")),
    ],
)
def test_a_bad_line_names_its_line_and_field(tmp_path: Path, line: str, names: tuple[str, ...]) -> None:
    path = _write(tmp_path, '{"query": "fine", "relevant_chunk_ids": ["c"]}', line)
    with pytest.raises(JudgedFileError) as err:
        load_judged(path, "corpus")
    for name in names:
        assert name in str(err.value)
    assert str(path) in str(err.value)


def test_no_corpus_and_no_queries_are_errors(tmp_path: Path) -> None:
    path = _write(tmp_path, '{"query": "q", "relevant_chunk_ids": ["c"]}')
    with pytest.raises(JudgedFileError, match=r"line 1: corpus: no corpus on the line and no --corpus"):
        load_judged(path, None)
    with pytest.raises(JudgedFileError, match="no queries"):
        load_judged(_write(tmp_path, ""), "corpus")


# ---- folds and the grid


def test_folds_are_seeded_balanced_and_stratified_by_kind() -> None:
    kinds = ["natural"] * 23 + ["structural"] * 11 + ["mixed"] * 7 + ["identifier"] * 2
    fold = fold_split(kinds, 5, seed=3)
    assert fold == fold_split(kinds, 5, seed=3)
    assert fold != fold_split(kinds, 5, seed=4)
    sizes = Counter(fold)
    assert set(sizes) == set(range(5)) and max(sizes.values()) - min(sizes.values()) <= 1
    for kind in set(kinds):
        per_fold = Counter(f for f, k in zip(fold, kinds, strict=True) if k == kind)
        counts = [per_fold.get(f, 0) for f in range(5)]
        assert max(counts) - min(counts) <= 1, kind


@pytest.mark.parametrize("folds", [1, 6])
def test_folds_out_of_range(folds: int) -> None:
    with pytest.raises(TuneError, match="--folds"):
        fold_split(["natural"] * 5, folds, seed=0)


def test_the_grid_covers_the_simplex() -> None:
    grid = simplex(3, 0.1)
    assert len(grid) == 66 and len(set(grid)) == 66
    assert all(abs(sum(w) - 1) < 1e-9 and min(w) >= 0 for w in grid)
    assert (1.0, 0.0, 0.0) in grid and (0.0, 0.0, 1.0) in grid
    with pytest.raises(TuneError, match="--step"):
        simplex(3, 0.3)


# ---- the search, on made-up lists where the sparse leg alone is right


def _match(chunk_id: str, score: float, line: int) -> common_pb2.ChunkMatch:
    return common_pb2.ChunkMatch(
        chunk_id=chunk_id, file_path=f"{chunk_id}.py", start_line=line, end_line=line + 5, score=score
    )


def _outcome(leg: str, matches: list[common_pb2.ChunkMatch]) -> LegOutcome:
    return LegOutcome(leg, fusion_pb2.LEG_STATUS_OK, matches=matches)


def _sparse_is_right(n: int) -> Fetched:
    """`n` prose questions: the vector leg is sure of 30 wrong chunks and lists the answer 25th; the
    sparse leg lists the answer first, barely above the rest; the graph leg finds the wrong ones."""
    lists, judged = [], []
    for q in range(n):
        wrong = [f"q{q}-wrong{i}" for i in range(30)]
        answer = f"q{q}-answer"
        vector = [_match(cid, 0.95 - 0.01 * i, 1) for i, cid in enumerate(wrong[:24])]
        vector += [_match(answer, 0.7, 1), *(_match(cid, 0.69, 1) for cid in wrong[24:29])]
        sparse = [_match(answer, 10.0, 1), *(_match(cid, 9.9 - 0.1 * i, 1) for i, cid in enumerate(wrong))]
        graph = [_match(cid, 1.0 - 0.02 * i, 1) for i, cid in enumerate(wrong[:10])]
        query = f"question {q}"
        lists.append(
            LegLists(
                "synthetic",
                query,
                Reading("natural", None, query),
                None,
                {"vector": _outcome("vector", vector), "sparse": _outcome("sparse", sparse)}
                | {"graph": _outcome("graph", graph)},
                {},
                30,
            )
        )
        judged.append(Judged(query, "synthetic", (), frozenset({answer}), f"synthetic:{q}"))
    return Fetched(judged, lists, ["natural"] * n)


def test_tuning_gives_the_right_leg_the_weight_and_beats_the_profile() -> None:
    base = FusionConfig()
    fetched = _sparse_is_right(20)
    space = Space.build(base, 0.1, [10.0, 60.0])
    scores, running = score_all(space, fetched, lambda hit, rel, tol: False)
    assert running.mean() < 0.5  # the running profile trusts the vector leg for prose

    learned = learn(space, scores, fetched.kinds, range(20), min_queries=8)
    weights = dict(zip(space.legs, space.weights[learned.weights["natural"]], strict=True))
    assert weights["sparse"] == max(weights.values()) and weights["sparse"] >= 0.5
    assert learned.train_ndcg == pytest.approx(1.0)
    # the kinds with no question keep their running weights, and say so
    assert set(learned.kept) == {"structural", "identifier", "mixed"}
    tuned = space.config(learned.method, learned.weights)
    assert tuned.query_kind_weights["structural"] == base.query_kind_weights["structural"]
    top = gateway_order(tuned, fetched.lists[0])[0]
    assert top.chunk_id == "q0-answer"

    cv = cross_validate(space, scores, running, fetched.kinds, folds=5, seed=0, min_queries=8)
    assert len(cv.folds) == 5 and sum(f.queries for f in cv.folds) == 20
    assert all(f.after > f.before for f in cv.folds)
    assert np.mean(cv.after) == pytest.approx(1.0) and np.mean(cv.before) < 0.5


def test_a_kind_with_too_few_queries_keeps_its_weights() -> None:
    fetched = _sparse_is_right(6)
    space = Space.build(FusionConfig(), 0.1, [60.0])
    scores, _ = score_all(space, fetched, lambda hit, rel, tol: False)
    learned = learn(space, scores, fetched.kinds, range(6), min_queries=8)
    assert learned.kept["natural"] == 6
    assert learned.weights["natural"] == space.current_weights["natural"]
    assert learned.method == space.current_method


def test_the_running_config_is_in_the_space_and_scores_as_itself() -> None:
    base = FusionConfig()
    fetched = _sparse_is_right(4)
    space = Space.build(base, 0.25, [10.0])
    scores, running = score_all(space, fetched, lambda hit, rel, tol: False)
    current = space.current_weights["natural"]
    assert np.allclose(scores[:, space.current_method, current], running)


def test_the_snippet_loads_as_the_fusion_section() -> None:
    fetched = _sparse_is_right(10)
    space = Space.build(FusionConfig(), 0.1, [10.0, 60.0])
    scores, _ = score_all(space, fetched, lambda hit, rel, tol: False)
    learned = learn(space, scores, fetched.kinds, range(10), min_queries=8)
    text = snippet(space, learned, ["a header"])
    loaded = FusionConfig(**tomllib.loads(text)["fusion"])
    assert loaded.method == space.methods[learned.method].name
    assert set(loaded.query_kind_weights) == {"structural", "identifier", "natural", "mixed"}
    assert loaded.query_kind_weights["natural"]["sparse"] >= 0.5
    assert "# kept: the running weights (no queries of this kind, too few)" in text


def test_ndcg_by_chunk_id_counts_each_chunk_once() -> None:
    judged = Judged("q", "c", (), frozenset({"a", "b"}), "x:1")
    order = [_match("a", 1, 1), _match("a", 1, 1), _match("z", 1, 1), _match("b", 1, 1)]
    expected = (1 + 1 / np.log2(5)) / (1 + 1 / np.log2(3))
    assert ndcg10(order, judged, lambda hit, rel, tol: False) == pytest.approx(expected)
