"""Graph search: query identifiers -> seed entities -> bounded traversal -> scored chunks."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import asyncpg

from tribrid.graphstore import GraphStore
from tribrid.models import Entity
from tribrid.search_common import ScoredChunk, SearchParams
from tribrid.stores.postgres import fetch_chunks
from tribrid.text import STOPWORDS

# Identifier-like words, dotted names included ("json.loads", "Foo.bar", "parse_args").
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
MIN_TERM_LEN = 3
# How much a matched entity is worth as an answer in itself: an import statement naming `foo`
# matches as exactly as `def foo` does, but the definition is what the user wants to see.
SEED_TYPE_WEIGHT = {"function": 1.0, "class": 1.0, "module": 0.9, "variable": 0.8, "import": 0.5}
# How strongly a relationship ties two pieces of code together; a path is worth the product.
RELATIONSHIP_WEIGHT = {"calls": 1.0, "inherits": 0.9, "references": 0.7, "imports": 0.6, "contains": 0.5}


def path_weight(relationship_types: Sequence[str]) -> float:
    weight = 1.0
    for rel in relationship_types:
        weight *= RELATIONSHIP_WEIGHT.get(rel, 0.5)
    return weight


def seed_terms(query: str) -> list[str]:
    """Candidate entity names from a query: identifiers and their last dotted part, stop words out."""
    terms: dict[str, None] = {}
    for match in _IDENTIFIER.finditer(query):
        word = match.group()
        for candidate in (word, word.rsplit(".", 1)[-1]):
            if len(candidate) >= MIN_TERM_LEN and candidate.lower() not in STOPWORDS:
                terms.setdefault(candidate, None)
    return list(terms)


@dataclass(frozen=True, slots=True)
class GraphSettings:
    max_hops: int
    entity_types: Sequence[str]
    relationship_types: Sequence[str]
    hop_decay: Sequence[float]
    max_seeds: int
    max_expansion: int


@dataclass(slots=True)
class _ChunkScore:
    score: float
    hops: int
    detail: str


def _better(candidate: _ChunkScore, current: _ChunkScore | None) -> bool:
    return current is None or (candidate.score, -candidate.hops) > (current.score, -current.hops)


async def graph_search(
    store: GraphStore, pool: asyncpg.Pool, params: SearchParams, settings: GraphSettings
) -> list[ScoredChunk]:
    terms = seed_terms(params.query)
    if not terms:
        return []
    seeds = await store.find_seeds(params.corpus_id, terms, settings.entity_types, settings.max_seeds)
    if not seeds:
        return []
    best: dict[str, _ChunkScore] = {}

    def offer(entity: Entity, score: float, hops: int, detail: str) -> None:
        if not entity.chunk_id:
            return
        candidate = _ChunkScore(score, hops, detail)
        if _better(candidate, best.get(entity.chunk_id)):
            best[entity.chunk_id] = candidate

    seed_score = {entity.entity_id: score for entity, score in seeds}
    seed_name = {entity.entity_id: entity.qualified_name for entity, _ in seeds}
    for entity, score in seeds:
        weight = SEED_TYPE_WEIGHT.get(entity.type, 1.0)
        offer(entity, score * weight * settings.hop_decay[0], 0, f"seed={entity.qualified_name} hops=0")
    hits = await store.expand(
        params.corpus_id,
        list(seed_score),
        settings.max_hops,
        settings.relationship_types,
        settings.max_expansion,
    )
    for hit in hits:
        score = (
            seed_score.get(hit.seed_id, 0.0)
            * settings.hop_decay[hit.hops]
            * path_weight(hit.relationship_types)
        )
        via = ",".join(hit.relationship_types)
        offer(
            hit.entity,
            score,
            hit.hops,
            f"seed={seed_name.get(hit.seed_id, hit.seed_id)} hops={hit.hops} via={via}",
        )

    rows = await fetch_chunks(pool, params.corpus_id, list(best))
    path_re = re.compile(params.path_regex) if params.path_regex else None
    ranked = sorted(
        (
            cid
            for cid, row in rows.items()
            if (path_re is None or path_re.match(row.file_path))
            and (not params.languages or row.language in params.languages)
        ),
        key=lambda cid: (-best[cid].score, best[cid].hops, cid),
    )
    return [ScoredChunk(rows[cid], best[cid].score, best[cid].detail) for cid in ranked[: params.top_k]]
