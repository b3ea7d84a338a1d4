"""evaluation.metrics against hand-computed values, and the docstring stripper's invariants."""

from __future__ import annotations

import ast
import math

import pytest

from evaluation.build_sets import first_sentence, strip_docstrings
from evaluation.metrics import (
    Span,
    is_match,
    judge,
    lines_returned,
    mean_scores,
    mrr_at,
    ndcg_at,
    recall_at,
    score_query,
)

DEF = Span("pkg/core.py", 100, 140)


@pytest.mark.parametrize(
    ("hit", "expected"),
    [
        (Span("pkg/core.py", 100, 140), True),  # exact
        (Span("pkg/core.py", 98, 140), True),  # two decorator lines included
        (Span("pkg/core.py", 102, 142), True),  # both ends within 2
        (Span("pkg/core.py", 100, 130), True),  # head chunk of a split definition
        (Span("pkg/core.py", 97, 140), False),  # starts 3 lines early
        (Span("pkg/core.py", 100, 143), False),  # ends 3 lines late
        (Span("pkg/core.py", 1, 200), False),  # a larger chunk that merely contains it
        (Span("pkg/core.py", 120, 140), False),  # a later window of the definition
        (Span("pkg/other.py", 100, 140), False),  # another file
    ],
)
def test_is_match(hit: Span, expected: bool) -> None:
    assert is_match(hit, DEF) is expected


def test_each_relevant_item_counts_once() -> None:
    rel = [Span("a.py", 10, 20)]
    hits = [Span("a.py", 10, 20), Span("a.py", 11, 20), Span("a.py", 10, 15)]
    assert judge(hits, rel) == [True, False, False]
    scores = score_query(hits, rel)
    assert scores.recall5 == 1.0
    assert scores.ndcg10 == 1.0


def test_hand_computed_ranking() -> None:
    rel = [Span("a.py", 1, 10), Span("b.py", 5, 9), Span("c.py", 30, 60)]
    hits = [
        Span("x.py", 1, 4),  # 1 miss
        Span("b.py", 5, 9),  # 2 hit
        Span("a.py", 1, 100),  # 3 contains a.py:1-10 but is not it: miss
        Span("y.py", 1, 1),  # 4
        Span("z.py", 1, 1),  # 5
        Span("a.py", 2, 11),  # 6 hit
        *[Span("w.py", i, i) for i in range(1, 15)],  # 7..20 misses
    ]
    gains = judge(hits, rel)
    assert [i + 1 for i, g in enumerate(gains) if g] == [2, 6]
    assert mrr_at(gains, 10) == 0.5
    assert recall_at(gains, 3, 5) == pytest.approx(1 / 3)
    assert recall_at(gains, 3, 10) == pytest.approx(2 / 3)
    assert recall_at(gains, 3, 20) == pytest.approx(2 / 3)
    # DCG = 1/log2(3) + 1/log2(7); IDCG = 1 + 1/log2(3) + 1/2
    dcg = 1 / math.log2(3) + 1 / math.log2(7)
    idcg = 1 + 1 / math.log2(3) + 0.5
    assert ndcg_at(gains, 3, 10) == pytest.approx(dcg / idcg)
    assert ndcg_at(gains, 3, 10) == pytest.approx(0.9871 / 2.1309, abs=1e-4)  # 0.4632
    # lines of the top 10: 4 + 5 + 100 + 1 + 1 + 10 + 4 * 1
    assert lines_returned(hits, 10) == 125


def test_first_hit_beyond_ten_gives_zero_mrr() -> None:
    gains = [False] * 10 + [True]
    assert mrr_at(gains, 10) == 0.0
    assert recall_at(gains, 1, 20) == 1.0
    assert ndcg_at(gains, 1, 10) == 0.0


def test_mean_scores() -> None:
    rel = [Span("a.py", 1, 10)]
    found = score_query([Span("a.py", 1, 10)], rel)
    second = score_query([Span("q.py", 1, 20), Span("a.py", 1, 10)], rel)
    missed = score_query([], rel)
    means = mean_scores([found, second, missed])
    assert means["mrr10"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert means["recall5"] == pytest.approx(2 / 3)
    assert means["lines10"] == pytest.approx((10 + 30 + 0) / 3)


def test_strip_docstrings_keeps_every_definition_on_its_lines() -> None:
    source = (
        '"""Module doc."""\n'
        "import os\n"
        "\n"
        "class A:\n"
        '    """Class doc\n'
        '    on two lines."""\n'
        "\n"
        "    def only_doc(self):\n"
        '        """Nothing else."""\n'
        "\n"
        "    def f(self, x):\n"
        '        """Return x."""\n'
        "        return x\n"
        "\n"
        'def g(): "inline doc"\n'
    )
    stripped = strip_docstrings(source)
    assert "doc" not in stripped.replace("only_doc", "")
    assert stripped.count("\n") == source.count("\n")
    defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    spans = [(n.name, n.lineno, n.end_lineno) for n in ast.walk(ast.parse(stripped)) if isinstance(n, defs)]
    assert ("only_doc", 8, 9) in spans
    assert ("f", 11, 13) in spans
    assert ("g", 15, 15) in spans


def test_first_sentence() -> None:
    doc = "Open files in the user's editor. Waits for it.\n\nMore text."
    assert first_sentence(doc) == "Open files in the user's editor"
    assert first_sentence("Return the value of e.g. x\nacross lines") == "Return the value of e.g"
