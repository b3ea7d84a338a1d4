"""How seed entities are chosen from a query's terms: shared by the stores and the snapshot."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from tribrid.config import CODE_ENTITY_TYPES, DOCUMENT_NODE_TYPES
from tribrid.graphstore import cypher
from tribrid.graphstore.base import clean_strings
from tribrid.models import Entity

# Fulltext candidates fetched per term before classifying them (exact / prefix / fuzzy).
FULLTEXT_CANDIDATES = 60  # exact matches come from indexed lookups; these only add prefix and fuzzy ones
# Fuzzy (one edit) fulltext matching only for terms at least this long: shorter ones match noise.
FUZZY_MIN_LEN = 5
# No indexed word holds a control character, and RediSearch refuses one even escaped.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def lowered_terms(terms: Sequence[str]) -> list[str]:
    """The terms as exact-lookup keys: stripped, lower-cased, unique, non-empty."""
    return clean_strings([t.strip().lower() for t in terms])


def fulltext_words(lowered: Sequence[str]) -> list[str]:
    """The terms the fulltext index is asked about: dotted terms are qualified names, looked up
    exactly only (their last part is a term too); a term with a control character is looked up
    exactly only."""
    return [t for t in lowered if "." not in t and not _CONTROL.search(t)]


def aliased_types(entity_types: Sequence[str]) -> list[str]:
    """Of these (checked) types, those whose entities can have aliases: the named-entity types.
    Code entities, documents and chunks never do, so an alias lookup skips them (a code search
    costs no more than before)."""
    never = set(CODE_ENTITY_TYPES) | set(DOCUMENT_NODE_TYPES)
    return [t for t in entity_types if t not in never]


class _SeedScorer:
    """The best match class of an entity over the (lower-cased) terms (see GraphView.find_seeds),
    for many entities and the same terms: the terms are turned into a set and a tuple once."""

    def __init__(self, terms: Sequence[str]) -> None:
        self._exact = frozenset(terms)
        self._prefixes = tuple(terms)

    def score(self, entity: Entity) -> float:
        name = entity.name.lower()
        if name in self._exact or entity.qualified_name.lower() in self._exact:
            return cypher.EXACT_SCORE
        if any(alias.lower() in self._exact for alias in entity.aliases):
            return cypher.EXACT_SCORE
        if name.startswith(self._prefixes):
            return cypher.PREFIX_SCORE
        return cypher.FUZZY_SCORE


def rank_seeds(matches: Iterable[Entity], lowered: Sequence[str], limit: int) -> list[tuple[Entity, float]]:
    """Each matched entity once with its score, best first (then by id), at most `limit`."""
    scorer = _SeedScorer(lowered)
    best: dict[str, tuple[Entity, float]] = {}
    for entity in matches:
        if entity.entity_id not in best:
            best[entity.entity_id] = (entity, scorer.score(entity))
    ranked = sorted(best.values(), key=lambda pair: (-pair[1], pair[0].entity_id))
    return ranked[:limit]
