"""Graph search: query identifiers -> seed entities -> bounded traversal -> scored chunks.

Scoring of an entity reached from a seed over a shortest path of `hops` relations:

    seed_score x hop_decay[hops] x path_weight(relation types) x (1 + path_bonus x ln(paths))
    x (1 + community_boost if it shares a community with a seed)

where seed_score is 1.0 / 0.7 / 0.4 for an exact / prefix / fuzzy name match (times how much
the seed's entity type is worth as an answer) and `paths` counts the distinct shortest paths
from any seed. A chunk scores as its best entity. Order: score desc, hops, chunk id.

Direction: "who calls X" / "callers of X" / "what uses X" follow incoming calls and references
edges (callers), "what does X call" / "X depends on" / "callees of X" outgoing ones (callees);
other questions follow every configured relation type both ways. In a directional question the
seed itself is not the answer, so it scores below its one-hop neighbours (x DIRECTED_SEED_FACTOR).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import pairwise

from services.graph.chunk_rows import ChunkSource
from services.graph.external import GraphExternalNames
from tribrid.config import DOCUMENT_NODE_TYPES, GraphSearchConfig
from tribrid.graphstore.base import Direction, GraphView, TraversalHit
from tribrid.graphstore.cypher import EXACT_SCORE, PREFIX_SCORE
from tribrid.models import Entity
from tribrid.question import Reading
from tribrid.question.words import (
    OPENING_VERBS,
    QUESTION_WORDS,
    asked_name,
    is_written_as_code,
    names_among,
)
from tribrid.search_common import ScoredChunk, SearchParams
from tribrid.stores.postgres import ChunkRow
from tribrid.text import STOPWORDS
from tribrid.v1 import common_pb2

# Identifier-like words, dotted names included ("json.loads", "Foo.bar", "parse_args").
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
MIN_TERM_LEN = 3
# How much a matched entity is worth as an answer in itself: an import statement naming `foo`
# matches as exactly as `def foo` does, but the definition is what the user wants to see.
SEED_TYPE_WEIGHT = {"function": 1.0, "class": 1.0, "module": 0.9, "variable": 0.8, "import": 0.5}
# How strongly a relationship ties two pieces of code together; a path is worth the product.
RELATIONSHIP_WEIGHT = {"calls": 1.0, "inherits": 0.9, "references": 0.7, "imports": 0.6, "contains": 0.5}
# Relation types whose edges may be inferred by name (calls by method name, inherits by class name).
INFERABLE_TYPES = ("calls", "inherits")
# An edge inferred by name weighs this much times its confidence (1 / candidates): below a
# proven call even when the name has a single candidate, since the receiver may be a library's.
INFERRED_EDGE_WEIGHT = 0.8
# In "who calls X" the answer is the callers, not X: X's own definition ranks below them.
DIRECTED_SEED_FACTOR = 0.5
# Relation types a directional question follows (unless the request names its own).
DIRECTED_RELATIONSHIP_TYPES = ("calls", "references")


# intent -> (edge direction from the seed, relation types followed, seed entity types)
INTENT_PLANS: dict[str, tuple[Direction, tuple[str, ...], tuple[str, ...]]] = {
    "callers": ("in", DIRECTED_RELATIONSHIP_TYPES, ()),
    "callees": ("out", DIRECTED_RELATIONSHIP_TYPES, ()),
    "members": ("out", ("contains",), ("class",)),
    "subclasses": ("in", ("inherits",), ("class",)),
    "bases": ("out", ("inherits",), ("class",)),
    "importers": ("in", ("imports",), ("module",)),
}


def path_weight(relationship_types: Sequence[str], asked: Sequence[str] = ()) -> float:
    """The product of the steps' relationship weights; a relation the question asked for ("methods
    of X" asks for `contains`) weighs 1.0: it is the answer, not a looser tie."""
    weight = 1.0
    for rel in relationship_types:
        weight *= 1.0 if rel in asked else RELATIONSHIP_WEIGHT.get(rel, 0.5)
    return weight


def seed_terms(query: str) -> list[str]:
    """Candidate entity names from a query: identifiers and their last dotted part.

    Stop words and graph-question words ("calls", "callers", "uses") are dropped.
    """
    terms: dict[str, None] = {}
    words = list(_IDENTIFIER.finditer(query))
    if len(words) > 1 and words[0].group().lower() in OPENING_VERBS:
        words = words[1:]
    for match in words:
        word = match.group()
        for candidate in (word, word.rsplit(".", 1)[-1]):
            lowered = candidate.lower()
            if len(candidate) >= MIN_TERM_LEN and lowered not in STOPWORDS and lowered not in QUESTION_WORDS:
                terms.setdefault(candidate, None)
    return list(terms)


def seed_match(score: float) -> str:
    if score >= EXACT_SCORE:
        return "exact"
    return "prefix" if score >= PREFIX_SCORE else "fuzzy"


# A match's explanation: its detail line and provenance. Built only for the chunks returned (a
# search scores a few hundred hits to return top_k).
_Explain = Callable[[], tuple[str, common_pb2.GraphProvenance]]


@dataclass(slots=True)
class _Best:
    score: float
    hops: int
    entity_id: str
    explain: _Explain

    def key(self) -> tuple[float, int, str]:
        return (-self.score, self.hops, self.entity_id)


def _offer(best: dict[str, _Best], chunk_id: str, candidate: _Best) -> None:
    """Keep `candidate` as the chunk's match if it ranks before the one kept: a chunk scores by
    its best entity."""
    current = best.get(chunk_id)
    if current is None or candidate.key() < current.key():
        best[chunk_id] = candidate


@dataclass(frozen=True, slots=True)
class GraphResult:
    chunks: list[ScoredChunk]
    provenance: dict[str, common_pb2.GraphProvenance]


@dataclass(frozen=True, slots=True)
class _Plan:
    direction: Direction
    relationship_types: list[str]
    directional: bool  # the answer is what the seeds lead to, not the seeds themselves
    seed_types: list[str]
    asked: tuple[str, ...] = ()  # the relation the question is about: the first of its plan


def _traversal_plan(settings: GraphSearchConfig, read_intent: str | None, explicit_types: bool) -> _Plan:
    """How to walk from the seeds: the request's direction, else the question's intent (the
    reading's). `explicit_types`: the request named its relationship types (a directional question
    keeps them)."""
    allowed = list(settings.relationship_types)
    intent: str | None = settings.direction if settings.direction != "auto" else read_intent
    if intent is None or intent == "both":
        return _Plan("both", allowed, False, list(settings.entity_types))
    direction, wanted, seed_types = INTENT_PLANS[intent]
    rel_types = allowed
    if not explicit_types:
        rel_types = [r for r in allowed if r in wanted] or allowed
    # restrict seeds to what the question is about, unless that rules out every allowed type
    types = [t for t in settings.entity_types if not seed_types or t in seed_types] or list(
        settings.entity_types
    )
    return _Plan(direction, rel_types, True, types, wanted[:1])


def hit_score(
    hit: TraversalHit,
    seed_score: float,
    settings: GraphSearchConfig,
    same_community: bool,
    asked: Sequence[str] = (),
    inferred: Sequence[float] = (),
) -> float:
    """`inferred`: the confidences of the inferred edges on the hit's route."""
    score = seed_score * settings.hop_decay[hit.hops] * path_weight(hit.relationship_types, asked)
    for confidence in inferred:
        score *= INFERRED_EDGE_WEIGHT * confidence
    score *= 1.0 + settings.path_bonus * math.log(max(hit.supporting_paths, 1))
    if same_community:
        score *= 1.0 + settings.applied_community_boost
    return score


def _provenance(hit: TraversalHit, known: dict[str, Entity], match: str) -> common_pb2.GraphProvenance:
    """How a traversal hit was reached, by qualified names (`known` holds every entity on its path)."""
    return common_pb2.GraphProvenance(
        seed_entity=known[hit.seed_id].qualified_name,
        path=[known[eid].qualified_name if eid in known else eid for eid in hit.path],
        relationship_types=list(hit.relationship_types),
        hops=hit.hops,
        supporting_paths=hit.supporting_paths,
        seed_match=match,
    )


def _inferable_steps(hit: TraversalHit) -> Iterator[tuple[str, str]]:
    """The (one end, other end) pairs of the `calls` and `inherits` steps on a hit's route, as
    walked: the steps that may follow an edge inferred by name."""
    for (before, after), rel_type in zip(pairwise(hit.path), hit.relationship_types, strict=True):
        if rel_type in INFERABLE_TYPES:
            yield before, after


async def _inferred_on_routes(
    store: GraphView, key: str, hits: Sequence[TraversalHit]
) -> list[tuple[float, ...]]:
    """For each hit, the confidences of the inferred edges on its route, in route order (a step may
    follow the edge backwards)."""
    routes = [list(_inferable_steps(hit)) for hit in hits]
    pairs = {pair for route in routes for step in route for pair in (step, step[::-1])}
    inferred = await store.inferred_edges(key, sorted(pairs)) if pairs else {}
    if not inferred:
        return [()] * len(hits)
    return [_confidences(route, inferred) for route in routes]


def _confidences(route: list[tuple[str, str]], inferred: dict[tuple[str, str], float]) -> tuple[float, ...]:
    found = []
    for before, after in route:
        confidence = inferred.get((before, after), inferred.get((after, before)))
        if confidence is not None:
            found.append(confidence)
    return tuple(found)


async def _names(store: GraphView, key: str, hits: Sequence[TraversalHit], known: dict[str, Entity]) -> None:
    """Fill `known` with every entity on the hits' paths (most are hits or seeds already)."""
    for hit in hits:
        known.setdefault(hit.entity.entity_id, hit.entity)
    missing = sorted({eid for hit in hits for eid in hit.path} - set(known))
    for entity in await store.get_entities(key, missing):
        known[entity.entity_id] = entity


def _explain_hit(
    hit: TraversalHit,
    known: dict[str, Entity],
    match: str,
    *,
    search: bool,
    inferred: Sequence[float] = (),
) -> tuple[str, common_pb2.GraphProvenance]:
    """A traversal hit's detail and provenance: from a search's seed, or an expanded chunk. A
    route through edges inferred by name says so, with their confidences."""
    seed, via = known[hit.seed_id].qualified_name, ",".join(hit.relationship_types)
    if search:
        detail = f"seed={seed} hops={hit.hops} via={via} paths={hit.supporting_paths}"
    else:
        detail = f"from={seed} hops={hit.hops} via={via}"
    if inferred:
        detail += " inferred=" + ",".join(f"{c:.2f}" for c in inferred)
    return detail, _provenance(hit, known, match)


def _explain_seed(entity: Entity, match: str) -> tuple[str, common_pb2.GraphProvenance]:
    return f"seed={entity.qualified_name} hops=0 match={match}", common_pb2.GraphProvenance(
        seed_entity=entity.qualified_name,
        path=[entity.qualified_name],
        hops=0,
        supporting_paths=1,
        seed_match=match,
    )


def _explain_referrer(entity: Entity, ref: str) -> tuple[str, common_pb2.GraphProvenance]:
    return f"refers to {ref} (not defined in the corpus) hops=1", common_pb2.GraphProvenance(
        seed_entity=ref,
        path=[ref, entity.qualified_name],
        relationship_types=["calls"],
        hops=1,
        supporting_paths=1,
        seed_match="unresolved",
    )


async def _top_chunks(
    source: ChunkSource,
    corpus_id: str,
    best: dict[str, _Best],
    top_k: int,
    path_regex: str | None = None,
    languages: Sequence[str] = (),
) -> list[ChunkRow]:
    """The top_k best-scored chunks that exist and pass the filters, best first (then chunk id).

    Rows are read in rank order, a batch at a time, until top_k pass: not every candidate's
    content for the few returned.
    """
    ranked = sorted(best, key=lambda cid: (*best[cid].key(), cid))
    return await rows_in_rank_order(source, corpus_id, ranked, top_k, path_regex, languages)


async def rows_in_rank_order(
    source: ChunkSource,
    corpus_id: str,
    ranked: Sequence[str],
    top_k: int,
    path_regex: str | None = None,
    languages: Sequence[str] = (),
) -> list[ChunkRow]:
    """The first top_k of these chunk ids (best first) that exist and pass the filters, read a
    batch at a time."""
    path_re = re.compile(path_regex) if path_regex else None
    # a filter may drop many: read more per batch then
    batch = top_k if path_re is None and not languages else max(4 * top_k, 100)
    found: list[ChunkRow] = []
    for start in range(0, len(ranked), batch):
        ids = ranked[start : start + batch]
        rows = await source.fetch(corpus_id, ids)
        found.extend(
            row
            for row in (rows.get(cid) for cid in ids)
            if row is not None
            and (path_re is None or path_re.match(row.file_path))
            and (not languages or row.language in languages)
        )
        if len(found) >= top_k:
            break
    return found[:top_k]


def _result(rows: Sequence[ChunkRow], best: dict[str, _Best]) -> GraphResult:
    chunks: list[ScoredChunk] = []
    provenance: dict[str, common_pb2.GraphProvenance] = {}
    for row in rows:
        detail, provenance[row.chunk_id] = best[row.chunk_id].explain()
        chunks.append(ScoredChunk(row, best[row.chunk_id].score, detail))
    return GraphResult(chunks, provenance)


def _expansion_limit(settings: GraphSearchConfig, params: SearchParams) -> int:
    """Entities to reach: a few per wanted chunk (hits arrive nearest first, and a chunk scores by
    its best entity), all of max_visited when a path or language filter may drop many."""
    if params.path_regex is not None or params.languages:
        return settings.max_visited
    return min(settings.max_visited, max(4 * params.top_k, 100))


def _named_seeds(seeds: list[tuple[Entity, float]]) -> list[tuple[Entity, float]]:
    """A structural question names its subject: when some seed matches a name exactly, the near
    misses (prefix, one edit) go. Kept, they would rank their own definitions among the answers,
    and a seed is never a traversal hit, so a subclass that merely resembles the name asked about
    ("AsyncScheduler" for "subclasses of Scheduler") would lose its place as an answer."""
    exact = [(entity, score) for entity, score in seeds if score >= EXACT_SCORE]
    return exact or seeds


async def graph_search(
    store: GraphView,
    source: ChunkSource,
    key: str,
    params: SearchParams,
    settings: GraphSearchConfig,
    external: GraphExternalNames,
    reading: Reading,
    explicit_types: bool = False,
) -> GraphResult:
    """Search the graph stored under `key` (a generation of params.corpus_id); `external` is the
    leg's index of the references to code outside the corpus; `reading` how the question was read
    (`tribrid.question.read`)."""
    question = reading.question
    plan = _traversal_plan(settings, reading.intent, explicit_types)
    direction, rel_types, directional = plan.direction, plan.relationship_types, plan.directional
    terms = seed_terms(params.query)
    if directional:
        # the names of the question itself, not of the story a long message tells before it
        question = question or params.query
        terms = seed_terms(question)
        # a name in lower case, or one that is also a question word ("Attributes invoked where")
        asked = asked_name(question)
        terms = names_among(terms, question) or ([asked] if asked else terms)
    if not terms:
        return GraphResult([], {})
    # One-edit fuzzy matching is for a mistyped name; in prose it only adds near-miss noise and is
    # the slowest fulltext query there is.
    fuzzy = len(terms) == 1 or any(is_written_as_code(t) for t in terms)
    seeds = await store.find_seeds(key, terms, plan.seed_types, settings.max_seeds, fuzzy=fuzzy)
    if not seeds:
        return await _external_callers(store, source, key, params, settings, plan, terms, external)
    if directional:
        seeds = _named_seeds(seeds)
    best: dict[str, _Best] = {}

    def offer(entity: Entity, candidate: _Best) -> None:
        if entity.chunk_id:
            _offer(best, entity.chunk_id, candidate)

    seed_score = {entity.entity_id: score for entity, score in seeds}
    known = {entity.entity_id: entity for entity, _ in seeds}
    seed_factor = DIRECTED_SEED_FACTOR if directional else 1.0
    offered: dict[str, float] = {}  # seed id -> the score its own definition got
    for entity, score in seeds:
        weight = SEED_TYPE_WEIGHT.get(entity.type, 1.0)
        offered[entity.entity_id] = score * weight * settings.hop_decay[0] * seed_factor
        offer(
            entity,
            _Best(
                offered[entity.entity_id],
                0,
                entity.entity_id,
                partial(_explain_seed, entity, seed_match(score)),
            ),
        )
    # Seeds in priority order (best match first): ties between routes go to the better seed.
    hits = (
        await store.traverse(
            key,
            [entity.entity_id for entity, _ in seeds],
            settings.max_hops,
            rel_types,
            direction=direction,
            max_fanout=settings.max_fanout,
            limit=_expansion_limit(settings, params),
        )
        if rel_types
        else []
    )
    await _names(store, key, hits, known)
    communities: dict[str, int] = {}
    if settings.applied_community_boost > 0 and hits:
        communities = await store.community_of(key, [*seed_score, *(h.entity.entity_id for h in hits)])
    seed_communities = {communities[s] for s in seed_score if s in communities}
    for hit, on_route in zip(hits, await _inferred_on_routes(store, key, hits), strict=True):
        same = communities.get(hit.entity.entity_id, -1) in seed_communities
        score = hit_score(hit, seed_score.get(hit.seed_id, 0.0), settings, same, plan.asked, on_route)
        if not directional:
            # A plain name asks for that definition: a neighbour with many supporting paths (the
            # callers of a much-constructed class) ties its seed at most, and ties go to fewer hops.
            score = min(score, offered.get(hit.seed_id, score))
        match = seed_match(seed_score.get(hit.seed_id, 0.0))
        explain = partial(_explain_hit, hit, known, match, search=True, inferred=on_route)
        offer(hit.entity, _Best(score, hit.hops, hit.entity.entity_id, explain))

    return await _ranked_result(source, params, best)


async def _ranked_result(source: ChunkSource, params: SearchParams, best: dict[str, _Best]) -> GraphResult:
    """The best-scored chunks that pass the request's filters, top_k of them."""
    rows = await _top_chunks(
        source, params.corpus_id, best, params.top_k, params.path_regex, params.languages
    )
    return _result(rows, best)


async def _external_callers(
    store: GraphView,
    source: ChunkSource,
    key: str,
    params: SearchParams,
    settings: GraphSearchConfig,
    plan: _Plan,
    terms: list[str],
    external: GraphExternalNames,
) -> GraphResult:
    """No entity is named like the query: the code it names may live outside the corpus
    ("shutil.get_terminal_size", "requests.get"). Its callers (or subclasses) in the corpus kept
    it as an unresolved reference; they answer at one hop from it. Names only, not prose words."""
    names = [t for t in terms if is_written_as_code(t)]
    if not names or plan.direction == "out":  # callees / bases of an outside name: unknown
        return GraphResult([], {})
    types = [t for t in settings.entity_types if t in ("function", "class", "module", "variable")]
    # All score alike: read only what can make top_k (all of it when a filter may drop many).
    found = await external.referrers(store, names, types, _expansion_limit(settings, params))
    best: dict[str, _Best] = {}
    score = settings.hop_decay[1] * RELATIONSHIP_WEIGHT["calls"]
    for referrer in found:
        entity, ref = referrer.entity, referrer.name
        if not entity.chunk_id or entity.chunk_id in best:
            continue
        best[entity.chunk_id] = _Best(score, 1, entity.entity_id, partial(_explain_referrer, entity, ref))
    return await _ranked_result(source, params, best)


async def expand_context(
    store: GraphView,
    source: ChunkSource,
    corpus_id: str,
    key: str,
    chunk_ids: Sequence[str],
    max_hops: int,
    relationship_types: Sequence[str],
    top_k: int,
    settings: GraphSearchConfig,
) -> GraphResult:
    """Chunks -> their entities -> neighbours within max_hops (both ways) -> other chunks.

    A neighbour scores hop_decay[hops] x path_weight x path bonus; the input chunks are left out.
    """
    inputs = set(chunk_ids)
    # A document chunk's node walks the document graph (services.graph.documents), not this one.
    found = await store.entities_by_chunks(key, list(chunk_ids))
    starts = [e for e in found if e.type not in DOCUMENT_NODE_TYPES]
    if not starts or not relationship_types:
        return GraphResult([], {})
    hits = await store.traverse(
        key,
        [e.entity_id for e in starts],
        max_hops,
        relationship_types,
        direction="both",
        max_fanout=settings.max_fanout,
        limit=settings.max_visited,
    )
    known = {e.entity_id: e for e in starts}
    await _names(store, key, hits, known)
    best: dict[str, _Best] = {}
    for hit, on_route in zip(hits, await _inferred_on_routes(store, key, hits), strict=True):
        cid = hit.entity.chunk_id
        if not cid or cid in inputs:
            continue
        explain = partial(_explain_hit, hit, known, "exact", search=False, inferred=on_route)
        score = hit_score(hit, 1.0, settings, False, inferred=on_route)
        _offer(best, cid, _Best(score, hit.hops, hit.entity.entity_id, explain))
    return _result(await _top_chunks(source, corpus_id, best, top_k), best)
