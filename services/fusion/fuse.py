"""Fusion math: weighted RRF and weighted normalized-score fusion, with per-leg explain data.

Pure functions over ranked lists, so they can be checked against hand-computed examples.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

Normalization = Literal["min_max", "z_score", "none"]


# Named tuples, not frozen dataclasses: a fused answer builds one of each per leg hit, and a
# frozen dataclass costs three times as much to build (its __init__ sets each field through
# object.__setattr__).
class Ranked(NamedTuple):
    """One leg's hit: the item id and the leg's raw score (rank = position in the list)."""

    item_id: str
    score: float


class LegContribution(NamedTuple):
    rank: int  # 1-based; 0 = absent from that leg
    raw_score: float
    normalized: float  # the leg's term in the fused score, before weighting
    contribution: float = 0.0  # weight x normalized: this leg's share of the fused score


@dataclass(slots=True)
class Fused:
    item_id: str
    score: float
    best_rank: int
    contributions: dict[str, LegContribution] = field(default_factory=dict)
    context: float = 0.0  # what its document's other items added (`document_context`)


def normalize_weights(weights: Mapping[str, float]) -> dict[str, float]:
    """Scale non-negative weights to sum 1 (all-zero weights are an error)."""
    if any(w < 0 for w in weights.values()):
        raise ValueError("leg weights must be >= 0")
    total = sum(weights.values())
    if total <= 0:
        raise ValueError("at least one leg weight must be > 0")
    return {leg: w / total for leg, w in weights.items()}


def _tie(score: float) -> float:
    """A score to 12 decimals, so float summation order cannot split equal scores (round() to
    ndigits costs ten times as much, and a fused answer sorts its candidates more than once). A
    score too large to scale sorts as it is."""
    scaled = score * 1e12
    return round(scaled) if math.isfinite(scaled) else scaled


def _order(fused: dict[str, Fused]) -> list[Fused]:
    # Deterministic ties: higher score, then the better best rank, then the item id.
    return sorted(fused.values(), key=_order_key)


def _order_key(item: Fused) -> tuple[float, int, str]:
    return -_tie(item.score), item.best_rank, item.item_id


# A leg that did not list an item (immutable: one value serves every such place)
ABSENT = LegContribution(rank=0, raw_score=0.0, normalized=0.0)


def _absent(legs: Sequence[str], fused: dict[str, Fused]) -> None:
    for item in fused.values():
        if len(item.contributions) < len(legs):
            for leg in legs:
                item.contributions.setdefault(leg, ABSENT)


def rrf(results: Mapping[str, Sequence[Ranked]], weights: Mapping[str, float], k: float) -> list[Fused]:
    """Weighted reciprocal rank fusion: score(d) = sum over legs of w_leg / (k + rank_leg(d))."""
    if k <= 0:
        raise ValueError("rrf k must be > 0")
    norm = normalize_weights({leg: weights[leg] for leg in results})
    fused: dict[str, Fused] = {}
    for leg, ranked in results.items():
        weight = norm[leg]
        for rank, hit in enumerate(ranked, start=1):
            _add(fused, leg, hit, rank, 1.0 / (k + rank), weight)
    _absent(list(results), fused)
    return _order(fused)


def _add(fused: dict[str, Fused], leg: str, hit: Ranked, rank: int, value: float, weight: float) -> None:
    """One leg's hit into the fused items: its term `value`, weighted. A leg listing an item twice
    counts it once, at its best rank."""
    item = fused.get(hit.item_id)
    if item is None:
        item = fused[hit.item_id] = Fused(hit.item_id, 0.0, rank)
    elif leg in item.contributions:
        return
    elif rank < item.best_rank:
        item.best_rank = rank
    item.score += weight * value
    item.contributions[leg] = LegContribution(rank, hit.score, value, weight * value)


def normalize_scores(scores: Sequence[float], method: Normalization) -> list[float]:
    """Per-leg score normalization. min_max maps to [0,1]; z_score follows Qdrant's DBSF:
    z = (s - mean) / (3 * std), clipped to [-1, 1], then shifted to [0, 1] as (z + 1) / 2
    (i.e. mean ± 3 standard deviations map to 0 and 1); all-equal scores map to 1.0."""
    if not scores or method == "none":
        return list(scores)
    if method == "min_max":
        lo, hi = min(scores), max(scores)
        if hi == lo:
            return [1.0] * len(scores)
        return [(s - lo) / (hi - lo) for s in scores]
    mean = sum(scores) / len(scores)
    std = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))
    if std == 0:
        return [1.0] * len(scores)
    lo, hi = mean - 3 * std, mean + 3 * std
    return [min(1.0, max(0.0, (s - lo) / (hi - lo))) for s in scores]


def weighted(
    results: Mapping[str, Sequence[Ranked]], weights: Mapping[str, float], normalization: Normalization
) -> list[Fused]:
    """Weighted score fusion: score(d) = sum over legs of w_leg * normalized_score_leg(d)."""
    norm = normalize_weights({leg: weights[leg] for leg in results})
    fused: dict[str, Fused] = {}
    for leg, ranked in results.items():
        weight = norm[leg]
        normalized = normalize_scores([h.score for h in ranked], normalization)
        for rank, (hit, value) in enumerate(zip(ranked, normalized, strict=True), start=1):
            _add(fused, leg, hit, rank, value, weight)
    _absent(list(results), fused)
    return _order(fused)


def keep_leg_order(fused: Sequence[Fused], leg: str) -> list[Fused]:
    """The fused list with `leg`'s items in that leg's order: the other legs break its ties
    (equal scores, in fused order) and place the items it lacks where their fused scores stand
    among its items. A leg item's score is lowered to that of the leg item before it when it was
    higher, so the list stays sorted by score (the contributions keep what each leg gave)."""
    position = {item.item_id: i for i, item in enumerate(fused)}

    def in_leg(item: Fused) -> bool:
        found = item.contributions.get(leg)
        return found is not None and found.rank > 0

    led = sorted(
        (item for item in fused if in_leg(item)),
        key=lambda item: (-_tie(item.contributions[leg].raw_score), position[item.item_id]),
    )
    ceiling = math.inf
    for item in led:
        ceiling = min(ceiling, item.score)
        item.score = ceiling
    others = [item for item in fused if not in_leg(item)]
    merged: list[Fused] = []
    i = j = 0
    while i < len(led) or j < len(others):
        if j == len(others) or (i < len(led) and led[i].score >= others[j].score):
            merged.append(led[i])
            i += 1
        else:
            merged.append(others[j])
            j += 1
    return merged


def confidence(scores: Sequence[float], depth: int) -> float:
    """How far a list's best score stands above the list the leg was asked for: the z-score of its
    top among `depth` places, where the places it left empty score what nothing matched (0, or
    its lowest score if that is below 0). A leg that finds one document of the `depth` it could
    have listed is sure of it: one hit of 30 has z = sqrt(29). 0 when nothing stands out."""
    if not scores:
        return 0.0
    empty = max(0, depth - len(scores))
    floor = min(0.0, min(scores))
    n = len(scores) + empty
    mean = (math.fsum(scores) + empty * floor) / n
    variance = (math.fsum((s - mean) ** 2 for s in scores) + empty * (floor - mean) ** 2) / n
    std = math.sqrt(variance)
    return max(0.0, (max(scores) - mean) / std) if std > 0 else 0.0


def document_context(
    fused: Sequence[Fused], document_of: Callable[[str], str | None], share: float
) -> list[Fused]:
    """Each item gains `share` x the best fused score among the other items of its document, and
    the list is sorted again: passage-level evidence (Callan, SIGIR 1994). A passage of a
    document whose other passages answer the question is likelier to answer it than an equal
    one elsewhere: a novel's scene, a manual's page. `document_of`: an item's document, None for
    an item that neither gives nor takes (code, whose files hold unrelated definitions). One hit
    in a document gains nothing, and nothing loses."""
    if share <= 0:
        return list(fused)
    documents = [(item, document_of(item.item_id)) for item in fused]
    best: dict[str, tuple[float, float]] = {}  # document -> its two best scores
    for item, document in documents:
        if document is not None:
            first, second = best.get(document, (-math.inf, -math.inf))
            if item.score > first:
                best[document] = (item.score, first)
            elif item.score > second:
                best[document] = (first, item.score)
    if all(second == -math.inf for _, second in best.values()):
        return list(fused)
    for item, document in documents:
        if document is not None:
            first, second = best[document]
            if second > -math.inf:
                other = second if item.score >= first else first
                item.context = share * max(other, 0.0)  # a negative score (normalization none) adds nothing
                item.score += item.context
    return _order({item.item_id: item for item in fused})


def cap_per_file(fused: Sequence[Fused], file_of: Callable[[str], str], max_per_file: int) -> list[Fused]:
    """Keep at most `max_per_file` items from any one file (0 = no cap), preserving the order."""
    if max_per_file <= 0:
        return list(fused)
    seen: dict[str, int] = {}
    kept = []
    for item in fused:
        path = file_of(item.item_id)
        if seen.get(path, 0) < max_per_file:
            seen[path] = seen.get(path, 0) + 1
            kept.append(item)
    return kept
