"""How seed entities are chosen from a query's terms: shared by the stores and the snapshot."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tribrid.graphstore import cypher
from tribrid.graphstore.base import clean_strings
from tribrid.models import Entity

# Fulltext candidates fetched per term before classifying them (exact / prefix / fuzzy).
FULLTEXT_CANDIDATES = 60  # exact matches come from indexed lookups; these only add prefix and fuzzy ones
# Fuzzy (one edit) fulltext matching only for terms at least this long: shorter ones match noise.
FUZZY_MIN_LEN = 5


def lowered_terms(terms: Sequence[str]) -> list[str]:
    """The terms as exact-lookup keys: stripped, lower-cased, unique, non-empty."""
    return clean_strings([t.strip().lower() for t in terms])


def fulltext_words(lowered: Sequence[str]) -> list[str]:
    """The terms the fulltext index is asked about: dotted terms are qualified names, looked up
    exactly only (their last part is a term too)."""
    return [t for t in lowered if "." not in t]


def seed_score(entity: Entity, terms: Sequence[str]) -> float:
    """The best match class of an entity over the (lower-cased) terms; see GraphStore.find_seeds."""
    name, qname = entity.name.lower(), entity.qualified_name.lower()
    if name in terms or qname in terms:
        return cypher.EXACT_SCORE
    if any(name.startswith(term) for term in terms):
        return cypher.PREFIX_SCORE
    return cypher.FUZZY_SCORE


def rank_seeds(matches: Iterable[Entity], lowered: Sequence[str], limit: int) -> list[tuple[Entity, float]]:
    """Each matched entity once with its score, best first (then by id), at most `limit`."""
    best: dict[str, tuple[Entity, float]] = {}
    for entity in matches:
        if entity.entity_id not in best:
            best[entity.entity_id] = (entity, seed_score(entity, lowered))
    ranked = sorted(best.values(), key=lambda pair: (-pair[1], pair[0].entity_id))
    return ranked[:limit]
