"""Retrieval metrics over line spans: pure functions, no I/O.

A returned chunk is relevant only when it *is* a relevant definition: same file and nearly the same
span (start and end each within `tolerance` lines), or the definition's own head chunk (starts
within `tolerance` lines of the definition's first line and ends inside it, as when a long
definition is split into windows or a class chunk stops at its first method). A larger chunk that
merely contains the definition does not count. Each relevant item is credited at most once, to the
best-ranked chunk that matches it.

Document answers (a span of prose under a question heading) are judged two ways:
- strict (`is_strict_match`): at least half of the returned chunk's lines are answer lines, and
  the chunk either covers at least half of the answer or is its head (starts within `tolerance`
  lines of the answer's first line) — the chunk is the answer, not a window around it;
- loose (`is_loose_match`): the chunk shares any line with the answer.
Both are reported for every set: `ndcg10`/`recall10` use the set's strict judgement (`is_match`
for code), `ndcg10_loose`/`recall10_loose` the loose one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

TOLERANCE = 2


@dataclass(frozen=True, slots=True)
class Span:
    path: str
    start_line: int
    end_line: int

    @property
    def lines(self) -> int:
        return self.end_line - self.start_line + 1


def span_from(obj: Mapping[str, object]) -> Span:
    """A Span from a JSON object with path, start_line and end_line."""
    start, end = obj["start_line"], obj["end_line"]
    if not isinstance(start, int) or not isinstance(end, int):
        raise ValueError(f"start_line/end_line must be integers: {obj!r}")
    return Span(str(obj["path"]), start, end)


def is_match(hit: Span, relevant: Span, tolerance: int = TOLERANCE) -> bool:
    """True when the returned chunk `hit` is the definition `relevant` (see the module docstring)."""
    if hit.path != relevant.path or abs(hit.start_line - relevant.start_line) > tolerance:
        return False
    if abs(hit.end_line - relevant.end_line) <= tolerance:
        return True
    # The definition's head chunk: starts at its first line and lies within it.
    return hit.end_line <= relevant.end_line


def overlap(a: Span, b: Span) -> int:
    """Lines the two spans share (0 in different files)."""
    if a.path != b.path:
        return 0
    return max(0, min(a.end_line, b.end_line) - max(a.start_line, b.start_line) + 1)


def is_strict_match(hit: Span, relevant: Span, tolerance: int = TOLERANCE) -> bool:
    """A document chunk that is the answer: mostly answer lines, and most of the answer or its head."""
    shared = overlap(hit, relevant)
    if shared == 0 or 2 * shared < hit.lines:
        return False
    return 2 * shared >= relevant.lines or abs(hit.start_line - relevant.start_line) <= tolerance


def is_loose_match(hit: Span, relevant: Span, tolerance: int = TOLERANCE) -> bool:
    """Any shared line."""
    return overlap(hit, relevant) > 0


Matcher = Callable[[Span, Span, int], bool]


def judge(
    hits: Sequence[Span], relevant: Sequence[Span], tolerance: int = TOLERANCE, match: Matcher = is_match
) -> list[bool]:
    """Per rank: does this hit newly match a relevant item not yet credited to a better rank?"""
    used = [False] * len(relevant)
    gains: list[bool] = []
    for hit in hits:
        credited = False
        for i, rel in enumerate(relevant):
            if not used[i] and match(hit, rel, tolerance):
                used[i] = True
                credited = True
                break
        gains.append(credited)
    return gains


def mrr_at(gains: Sequence[bool], k: int = 10) -> float:
    """Reciprocal rank of the first relevant hit within the top k, 0 when none."""
    for rank, gain in enumerate(gains[:k], start=1):
        if gain:
            return 1.0 / rank
    return 0.0


def recall_at(gains: Sequence[bool], n_relevant: int, k: int) -> float:
    """Fraction of the relevant items found in the top k."""
    if n_relevant <= 0:
        return 0.0
    return sum(gains[:k]) / n_relevant


def ndcg_at(gains: Sequence[bool], n_relevant: int, k: int = 10) -> float:
    """Binary-relevance nDCG@k: DCG over the ideal DCG of min(n_relevant, k) hits at the top."""
    dcg = sum(1.0 / math.log2(rank + 1) for rank, gain in enumerate(gains[:k], start=1) if gain)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(n_relevant, k) + 1))
    return dcg / ideal if ideal > 0 else 0.0


def lines_returned(hits: Sequence[Span], k: int = 10) -> int:
    """Total lines of the top k hits (what a reader or an LLM context has to take in)."""
    return sum(h.lines for h in hits[:k])


@dataclass(frozen=True, slots=True)
class QueryScores:
    mrr10: float
    recall5: float
    recall10: float
    recall20: float
    ndcg10: float
    lines10: int
    ndcg10_loose: float = 0.0
    recall10_loose: float = 0.0


METRIC_NAMES = (
    "mrr10",
    "recall5",
    "recall10",
    "recall20",
    "ndcg10",
    "ndcg10_loose",
    "recall10_loose",
    "lines10",
)
METRIC_LABELS = {
    "mrr10": "MRR@10",
    "recall5": "R@5",
    "recall10": "R@10",
    "recall20": "R@20",
    "ndcg10": "nDCG@10",
    "ndcg10_loose": "nDCG@10 loose",
    "recall10_loose": "R@10 loose",
    "lines10": "lines@10",
}


def score_query(
    hits: Sequence[Span], relevant: Sequence[Span], tolerance: int = TOLERANCE, strict: Matcher = is_match
) -> QueryScores:
    """Scores of one answer; `strict`: the set's judgement (`is_match` for code, `is_strict_match`
    for documents); the loose scores count any overlap."""
    gains = judge(hits, relevant, tolerance, strict)
    loose = judge(hits, relevant, tolerance, is_loose_match)
    n = len(relevant)
    return QueryScores(
        mrr10=mrr_at(gains, 10),
        recall5=recall_at(gains, n, 5),
        recall10=recall_at(gains, n, 10),
        recall20=recall_at(gains, n, 20),
        ndcg10=ndcg_at(gains, n, 10),
        lines10=lines_returned(hits, 10),
        ndcg10_loose=ndcg_at(loose, n, 10),
        recall10_loose=recall_at(loose, n, 10),
    )


def mean_scores(scores: Iterable[QueryScores]) -> dict[str, float]:
    """Mean of every metric over queries (lines10 becomes the mean lines returned per query)."""
    items = list(scores)
    if not items:
        return {name: 0.0 for name in METRIC_NAMES}
    return {name: sum(float(getattr(s, name)) for s in items) / len(items) for name in METRIC_NAMES}
