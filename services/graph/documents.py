"""The document graph: search from the entities a question names, and expansion from chunks.

The document indexer's graph (see tribrid.config.DOCUMENT_NODE_TYPES):
(:Document)-[:CONTAINS]->(:Chunk)-[:MENTIONS {count}]->(named entity), named entities
-[:RELATED_TO {strength}]- each other and chunks -[:SIMILAR_TO {similarity}]- each other.
RELATED_TO and SIMILAR_TO are stored once (source id < target id) and walked both ways. A chunk
node's id is its chunk id.

Both walks are one layered walk over chunk and entity nodes, where a node's *depth* counts:

- one per SIMILAR_TO edge (chunk -> chunk, value = its similarity),
- one per entity entered from a chunk (chunk -MENTIONS-> entity, value 1),
- one per RELATED_TO edge (entity -> entity, value = its strength),
- nothing for leaving an entity for a chunk that mentions it (value 1).

A path's value is the product of its steps' values (times the seed's match score in a search);
a node reached at depth d scores hop_penalty[d - 1] x value, the best over its paths. So the
design's `graph_score = max(similarity, path strength product) x hop penalty` holds for every
single-kind path, and a path mixing both kinds multiplies them.

Search starts at the seed entities as if entered from a chunk (depth 1): a chunk mentioning a
seed is at depth 1, one mentioning a RELATED_TO neighbour of a seed at depth 2. Chunks end a
search's paths (their neighbours are what expansion adds after fusion). A seed's value is its
match score times its specificity among the question's seeds (`_specificity`); a neighbour's
evidence in a chunk (`_add_evidence`) is scaled by its specificity among the seeds and neighbours.

Expansion starts at the given chunks (depth 0): a SIMILAR_TO neighbour or a chunk sharing an
entity is at depth 1; one mentioning a RELATED_TO neighbour of an entity the start mentions, or
two SIMILAR_TO steps away, at depth 2.

Every edge kind is read with `relations_of` (the graph in memory, or the store a query per step
and kind). Bounds: a node follows at most `max_fanout` edges per kind (the strongest: similarity,
strength or mention count, then node id), and a walk reaches at most `max_visited` nodes (best
paths first). A path reaching a node no better than a shallower one did is dropped: hop
penalties never rise with depth and step values are at most 1, so it can't lead anywhere better.

Order of the chunks: score desc, then the mention count of the path's last MENTIONS edge (a
chunk naming the entity more often first; 0 for a SIMILAR_TO arrival), then chunk id.
"""

from __future__ import annotations

import asyncio
import math
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from services.graph.chunk_rows import ChunkSource
from services.graph.entities import edge_properties
from services.graph.relation_words import QuestionTerms
from services.graph.search import GraphResult, rows_in_rank_order, seed_match
from tribrid.config import CODE_ENTITY_TYPES, DOCUMENT_RELATIONSHIP_TYPES, GraphSearchConfig
from tribrid.graphstore.base import GraphView
from tribrid.models import Entity, Relation
from tribrid.ner import EntityRecognizer
from tribrid.search_common import ScoredChunk, SearchParams
from tribrid.text import STOPWORDS
from tribrid.v1 import common_pb2

# NER on a question: the entity names it finds (tribrid.ner's recognizer, or none).
QueryEntities = Callable[[str], Sequence[str]]


def query_recognizer(recognizer: EntityRecognizer) -> QueryEntities:
    """NER on a question with the indexer's recognizer (its model, labels and junk rules): the
    names it finds. The pipeline loads on the first call (a code-only deployment never pays for
    it); searches call from worker threads, and take turns (a pipeline is not meant for
    concurrent use)."""
    turns = threading.Lock()

    def names(query: str) -> list[str]:
        with turns:
            (mentions,) = recognizer.recognize([query])
        return [mention.text for mention in mentions]

    return names


MENTIONS, RELATED_TO, SIMILAR_TO = "mentions", "related_to", "similar_to"
# The step from a code chunk to a definition it holds (not a stored edge: Entity.chunk_id).
DEFINES = "defines"
# What a seed's neighbour (over RELATED_TO or a typed relation) adds to a chunk that names it too,
# against 1 for a seed: a chunk naming a person and their faction is likelier to state the relation.
# Over a relation the question names ("X's husband"), the neighbour is what was asked for: 1.
NEIGHBOUR_EVIDENCE = 0.5
# Names a query may spell out in up to this many words ("Dell Technologies", "Round Rock Texas").
MAX_NAME_WORDS = 4
# A fulltext (prefix) lookup only for capitalized words at least this long: the proper nouns of a
# question, where a prefix is likely part of a name ("Dell" for "Dell Technologies").
MIN_FULLTEXT_WORD = 3
_WORD = re.compile(r"[^\W_](?:[\w'&-]*[^\W_])?")


@dataclass(frozen=True, slots=True)
class DocumentSettings:
    """What a document walk runs with (the graph section, merged with a request's options)."""

    named_types: Sequence[str]  # the named-entity types a search seeds on
    max_depth: int
    hop_penalty: Sequence[float]  # by depth - 1
    related_min_strength: float
    similar_to_threshold: float
    max_seeds: int
    max_fanout: int
    max_visited: int
    # The edge kinds walked (a request naming its relationship types narrows them): without
    # MENTIONS no chunk is reached from an entity, nor an entity from a chunk.
    relationship_types: frozenset[str] = frozenset(DOCUMENT_RELATIONSHIP_TYPES)
    # Entity-to-entity types whose neighbours of a seed count as evidence in a search's chunks:
    # RELATED_TO and an imported graph's typed relations (member_of, ...).
    entity_relations: tuple[str, ...] = (RELATED_TO,)

    @classmethod
    def of(
        cls,
        cfg: GraphSearchConfig,
        named_types: Iterable[str],
        max_depth: int | None = None,
        relationship_types: Iterable[str] = DOCUMENT_RELATIONSHIP_TYPES,
        typed_relations: Iterable[str] = (),
    ) -> DocumentSettings:
        return cls(
            named_types=sorted(set(named_types)),
            max_depth=cfg.document_max_hops if max_depth is None else max_depth,
            hop_penalty=tuple(cfg.document_hop_penalty),
            related_min_strength=cfg.related_min_strength,
            similar_to_threshold=cfg.similar_to_threshold,
            max_seeds=cfg.max_seeds,
            max_fanout=cfg.max_fanout,
            max_visited=cfg.max_visited,
            relationship_types=frozenset(relationship_types) & frozenset(DOCUMENT_RELATIONSHIP_TYPES),
            entity_relations=(RELATED_TO, *sorted(set(typed_relations))),
        )


# --- seeds ----------------------------------------------------------------------------------------


def query_terms(query: str) -> tuple[list[str], list[str]]:
    """(names to look up exactly, words to look up by prefix) of a question.

    Exact (name, alias): every run of 1..MAX_NAME_WORDS words that neither starts nor ends with a
    stop word ("the University of Texas" -> "University of Texas", "Texas", ...); a case-blind
    dictionary lookup each, so a name written in lower case still matches. Each is also looked
    up with "the " before it: a name shows its most frequent surface form, which can keep its
    article ("the Bay of Whales"). Prefix (fulltext):
    capitalized words only, the proper nouns of a question; a lower-case word's prefix would
    match names in passing ("port" -> "Portland").
    """
    words = _WORD.findall(query)
    exact: dict[str, None] = {}
    for size in range(1, MAX_NAME_WORDS + 1):
        for start in range(len(words) - size + 1):
            run = words[start : start + size]
            if run[0].lower() in STOPWORDS or run[-1].lower() in STOPWORDS:
                continue
            if size == 1 and len(run[0]) < 2:
                continue
            exact.setdefault(" ".join(run), None)
    for term in list(exact):
        exact.setdefault(f"the {term}", None)
    prefix = [
        w
        for w in dict.fromkeys(words)
        if w[0].isupper() and len(w) >= MIN_FULLTEXT_WORD and w.lower() not in STOPWORDS
    ]
    return list(exact), prefix


async def find_document_seeds(
    reader: GraphView,
    key: str,
    query: str,
    settings: DocumentSettings,
    recognized: Sequence[str] = (),
    linked: Sequence[str] = (),
) -> list[tuple[Entity, float]]:
    """The named entities a question names, best first (then id), at most max_seeds: those whose
    name or alias the question holds (`linked` ids, any script), its word runs and the names NER
    `recognized` in it matched exactly (name or alias: 1.0), and its capitalized words by fulltext
    prefix (0.7 when the name starts with the word, 0.4 when another of its words does: "Dell" ->
    "Michael Dell"). A seed's score multiplies its paths' values."""
    if not settings.named_types:
        return []
    exact_terms, prefix_words = query_terms(query)
    types, limit = settings.named_types, settings.max_seeds
    named = await reader.get_entities(key, list(linked), with_unresolved=False) if linked else []
    found = [(entity, 1.0) for entity in named if entity.type in types]
    found += await reader.find_seeds(key, [*exact_terms, *recognized], types, limit, fulltext=False)
    prefix_words = unnamed_words(prefix_words, found)
    if prefix_words:
        found += await reader.find_seeds(key, prefix_words, types, limit, fuzzy=False)
    best: dict[str, tuple[Entity, float]] = {}
    for entity, score in found:
        if entity.entity_id not in best or score > best[entity.entity_id][1]:
            best[entity.entity_id] = (entity, score)
    kept = longest_names(best.values(), query)
    return sorted(kept, key=lambda pair: (-pair[1], pair[0].entity_id))[:limit]


def _words(text: str) -> tuple[str, ...]:
    """Lower-cased words, a curly apostrophe read as a straight one: a name stored with U+2019
    ("d\u2019Artagnan") holds the question's "d'Artagnan" (as the linker reads it)."""
    return tuple(word.lower() for word in _WORD.findall(text.replace("\u2019", "'")))


def unnamed_words(words: Sequence[str], seeds: Iterable[tuple[Entity, float]]) -> list[str]:
    """The question's words that no seed's name or alias holds. Only these are looked up by prefix:
    "Athos" is Athos, not every longer name holding it ("Monsieur Athos"), as a linker tries a
    looser match only when no exact one was found."""
    named = {word for entity, _ in seeds for form in (entity.name, *entity.aliases) for word in _words(form)}
    return [word for word in words if not set(_words(word)) <= named]


def longest_names(seeds: Iterable[tuple[Entity, float]], query: str) -> list[tuple[Entity, float]]:
    """The seeds without those whose name is only part of a longer seed's name that the question
    holds ("La" inside "La Chesnaye"), as a linker keeps the longest match."""
    named = [(_words(entity.name), (entity, score)) for entity, score in seeds]
    asked = f" {' '.join(_words(query))} "
    held = [words for words, _ in named if words and f" {' '.join(words)} " in asked]

    def inside(short: tuple[str, ...], long: tuple[str, ...]) -> bool:
        return len(short) < len(long) and any(
            long[i : i + len(short)] == short for i in range(len(long) - len(short) + 1)
        )

    return [seed for words, seed in named if not any(inside(words, longer) for longer in held)]


# --- the walk -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Path:
    """How a node was reached: from start number `origin` (its rank), over `relations` (as stored,
    one per step) through `nodes` (start first)."""

    origin: int
    nodes: tuple[str, ...]
    relations: tuple[Relation, ...]
    value: float
    depth: int

    def rank(self) -> tuple[float, int, int, tuple[str, ...]]:
        """Better paths first: value, shallower, earlier start, then node ids."""
        return (-self.value, self.depth, self.origin, self.nodes)

    def then(self, relation: Relation, node: str, value: float, depth: int) -> Path:
        return Path(self.origin, (*self.nodes, node), (*self.relations, relation), self.value * value, depth)

    @property
    def mention_count(self) -> int:
        """The count of the last step if it is a MENTIONS edge (a chunk's mentions of the entity)."""
        return self.relations[-1].count if self.relations and self.relations[-1].type == MENTIONS else 0


@dataclass(frozen=True, slots=True)
class Reached:
    """A chunk the walk reached, by its best path."""

    chunk_id: str
    path: Path
    score: float

    def rank(self) -> tuple[float, int, str]:
        return (-self.score, -self.path.mention_count, self.chunk_id)


def _edge_value(relation: Relation) -> float:
    if relation.type == RELATED_TO:
        return relation.strength
    if relation.type == SIMILAR_TO:
        return relation.similarity
    return 1.0


def _strongest(
    relations: Iterable[Relation], node_ids: set[str], max_fanout: int, minimum: float
) -> dict[str, list[tuple[Relation, str]]]:
    """node -> (relation, the node at its other end) for the relations touching these nodes with
    a value of at least `minimum`, strongest first (then count, then the other node's id), at most
    max_fanout per node. A node may be either end (RELATED_TO and SIMILAR_TO are walked both
    ways), and a relation read from both ends counts once."""
    by_node: dict[str, dict[tuple[str, str, str], tuple[Relation, str]]] = {}
    for relation in relations:
        value = _edge_value(relation)
        if value < minimum:
            continue
        for near, far in ((relation.source_id, relation.target_id), (relation.target_id, relation.source_id)):
            if near in node_ids:
                key = (relation.source_id, relation.type, relation.target_id)
                by_node.setdefault(near, {})[key] = (relation, far)
    return {
        node: sorted(edges.values(), key=lambda pair: (-_edge_value(pair[0]), -pair[0].count, pair[1]))[
            :max_fanout
        ]
        for node, edges in by_node.items()
    }


class _Walk:
    """A layered walk (see the module docstring), one depth at a time."""

    def __init__(self, reader: GraphView, key: str, settings: DocumentSettings, max_depth: int) -> None:
        self._reader, self._key, self._settings = reader, key, settings
        self.max_depth = max_depth
        # node -> its best value at any depth so far: a deeper path must beat it to go on
        self._best_value: dict[str, float] = {}
        self.chunks: dict[str, Reached] = {}

    def _admit(self, layer: dict[str, Path], node: str, path: Path) -> None:
        """Keep `path` for `node` in this layer if it beats the node's shallower paths, the layer's
        path to it, and the walk still has room for a new node."""
        known = self._best_value.get(node)
        if known is not None and path.value <= known and node not in layer:
            return
        if known is None and len(self._best_value) >= self._settings.max_visited:
            return
        current = layer.get(node)
        if current is None or path.rank() < current.rank():
            layer[node] = path
            self._best_value[node] = max(known or 0.0, path.value)

    def _record_chunk(self, chunk_id: str, path: Path) -> None:
        score = self._settings.hop_penalty[path.depth - 1] * path.value
        reached = Reached(chunk_id, path, score)
        current = self.chunks.get(chunk_id)
        if current is None or (reached.rank(), path.rank()) < (current.rank(), current.path.rank()):
            self.chunks[chunk_id] = reached

    async def _relations(
        self, node_ids: Sequence[str], rel_type: str, directions: Sequence[Literal["out", "in"]]
    ) -> list[Relation]:
        if not node_ids or rel_type not in self._settings.relationship_types:
            return []
        found = await asyncio.gather(
            *(self._reader.relations_of(self._key, node_ids, [rel_type], d) for d in directions)
        )
        return [relation for relations in found for relation in relations]

    async def run(
        self,
        entities: dict[str, Path],
        chunks: dict[str, Path],
        depth: int,
        *,
        chunk_steps: bool,
        defined: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        """Walk on from the entities and chunks reached at `depth` (chunks go on only with
        `chunk_steps`: expansion), recording every chunk reached at depth >= 1. `defined`: the
        code definitions each start chunk holds, entered from it like the entities it mentions
        (the docs that name them are one step on)."""
        settings = self._settings
        for node, path in {**entities, **chunks}.items():
            self._best_value[node] = max(self._best_value.get(node, 0.0), path.value)
        while True:
            if depth >= 1 and entities:
                ids = sorted(entities)
                mentions = _strongest(
                    await self._relations(ids, MENTIONS, ["in"]), set(ids), settings.max_fanout, 0.0
                )
                for entity_id in sorted(entities, key=lambda e: entities[e].rank()):
                    for relation, chunk_id in mentions.get(entity_id, ()):
                        self._admit(
                            chunks, chunk_id, entities[entity_id].then(relation, chunk_id, 1.0, depth)
                        )
            for chunk_id, path in chunks.items():
                if depth >= 1:
                    self._record_chunk(chunk_id, path)
            if depth >= self.max_depth:
                return
            next_entities: dict[str, Path] = {}
            next_chunks: dict[str, Path] = {}
            entity_ids = sorted(entities)
            chunk_ids = sorted(chunks) if chunk_steps else []
            related, similar, mentioned = await asyncio.gather(
                self._relations(entity_ids if depth >= 1 else [], RELATED_TO, ["out", "in"]),
                self._relations(chunk_ids, SIMILAR_TO, ["out", "in"]),
                self._relations(chunk_ids, MENTIONS, ["out"]),
            )
            fanout = settings.max_fanout
            by_entity = _strongest(related, set(entity_ids), fanout, settings.related_min_strength)
            for entity_id in sorted(entities, key=lambda e: entities[e].rank()):
                for relation, other in by_entity.get(entity_id, ()):
                    step = entities[entity_id].then(relation, other, relation.strength, depth + 1)
                    self._admit(next_entities, other, step)
            by_chunk = _strongest(similar, set(chunk_ids), fanout, settings.similar_to_threshold)
            entities_of = _strongest(mentioned, set(chunk_ids), fanout, 0.0)
            for chunk_id in sorted(chunk_ids, key=lambda c: chunks[c].rank()):
                for relation, other in by_chunk.get(chunk_id, ()):
                    step = chunks[chunk_id].then(relation, other, relation.similarity, depth + 1)
                    self._admit(next_chunks, other, step)
                for relation, entity_id in entities_of.get(chunk_id, ()):
                    self._admit(
                        next_entities, entity_id, chunks[chunk_id].then(relation, entity_id, 1.0, depth + 1)
                    )
                for entity_id in (defined or {}).get(chunk_id, ()) if depth == 0 else ():
                    holds = Relation(chunk_id, entity_id, DEFINES)
                    self._admit(
                        next_entities, entity_id, chunks[chunk_id].then(holds, entity_id, 1.0, depth + 1)
                    )
            if not next_entities and not next_chunks:
                return
            entities, chunks, depth = next_entities, next_chunks, depth + 1


# --- search and expansion ---------------------------------------------------------------------------


async def _names(reader: GraphView, key: str, reached: Sequence[Reached]) -> dict[str, Entity]:
    ids = sorted({node for r in reached for node in r.path.nodes})
    return {e.entity_id: e for e in await reader.get_entities(key, ids)}


def _display(entity: Entity | None, node_id: str) -> str:
    """A node as a path shows it: a named entity by name, a chunk by "path:start-end"."""
    if entity is None:
        return node_id
    return entity.qualified_name if entity.type == "chunk" else entity.name


def provenance(
    reached: Reached, names: Mapping[str, Entity], seed: str, match: str, imported: bool = False
) -> tuple[str, common_pb2.GraphProvenance]:
    """A reached chunk's detail line and provenance (`seed`: what the path started from)."""
    path = reached.path
    via = ",".join(r.type for r in path.relations)
    detail = f"seed={seed} depth={path.depth} via={via} graph_score={reached.score:.4f}"
    return detail, common_pb2.GraphProvenance(
        seed_entity=seed,
        path=[_display(names.get(node), node) for node in path.nodes],
        relationship_types=[r.type for r in path.relations],
        hops=path.depth,
        seed_match=match,
        edges=[edge_properties(r) for r in path.relations],
        graph_score=reached.score,
        seed_imported=imported,
    )


async def _result(
    reader: GraphView,
    source: ChunkSource,
    key: str,
    corpus_id: str,
    reached: Mapping[str, Reached],
    top_k: int,
    explain: Callable[[Reached, Mapping[str, Entity]], tuple[str, common_pb2.GraphProvenance]],
    path_regex: str | None = None,
    languages: Sequence[str] = (),
) -> GraphResult:
    ranked = sorted(reached.values(), key=Reached.rank)
    rows = await rows_in_rank_order(
        source, corpus_id, [r.chunk_id for r in ranked], top_k, path_regex, languages
    )
    shown = [reached[row.chunk_id] for row in rows]
    names = await _names(reader, key, shown)
    chunks: list[ScoredChunk] = []
    provenance_by_chunk: dict[str, common_pb2.GraphProvenance] = {}
    for row, match in zip(rows, shown, strict=True):
        detail, provenance_by_chunk[row.chunk_id] = explain(match, names)
        chunks.append(ScoredChunk(row, match.score, detail))
    return GraphResult(chunks, provenance_by_chunk)


async def _add_evidence(
    reader: GraphView,
    key: str,
    settings: DocumentSettings,
    seeds: Sequence[tuple[Entity, float]],
    seed_mentions: Sequence[Relation],
    reached: dict[str, Reached],
    query: str,
) -> None:
    """`seed_mentions`: the MENTIONS edges into the seeds (read once per search); `query`: the
    question, read for the typed relations it names.

    Raise each chunk that names a seed to the sum of the evidence it names: every seed it
    mentions (its seed score) and, when the walk may go two steps, every neighbour of a seed over
    RELATED_TO (at least `related_min_strength`) or a typed relation (NEIGHBOUR_EVIDENCE, or 1
    over a typed relation the question names (relation_words), x the edge's value x the seed's
    score x the neighbour's specificity among the seeds and neighbours: `_specificity`). A chunk
    naming two of the question's entities, or one and its organisation, ranks above one naming
    one; a question naming one entity and nothing related is ranked as the walk ranked it. A
    request that narrows the walk's types narrows this too. Every chunk of a seed is read: one the
    walk did not reach (past `max_fanout`) joins when it names two of them, so the chunk that names
    both is found however often each is named elsewhere."""
    if MENTIONS not in settings.relationship_types:
        return
    walked = [t for t in settings.entity_relations if t != RELATED_TO or t in settings.relationship_types]
    weight = {entity.entity_id: score for entity, score in seeds}
    seed_ids = sorted(weight)
    is_seed = frozenset(seed_ids)
    related: list[list[Relation]] = []
    # read only where a graph has typed relations (an import or extraction), once per search
    question = (
        QuestionTerms.of(query, (n for e, _ in seeds for n in (e.name, *e.aliases)))
        if any(t != RELATED_TO for t in walked)
        else None
    )
    if settings.max_depth >= 2 and walked:  # a neighbour's chunks are two steps from the seed
        related = await asyncio.gather(
            *(reader.relations_of(key, seed_ids, walked, d) for d in ("out", "in"))
        )
    for relation, (near, far) in (
        (r, ends)
        for found in related
        for r in found
        for ends in ((r.source_id, r.target_id), (r.target_id, r.source_id))
    ):
        if relation.type == RELATED_TO and relation.strength < settings.related_min_strength:
            continue
        if near in is_seed and far not in is_seed:
            asked = (
                question is not None
                and relation.type != RELATED_TO
                and question.names(relation.type, relation.properties)
            )
            share = 1.0 if asked else NEIGHBOUR_EVIDENCE
            weight[far] = max(weight.get(far, 0.0), share * _edge_value(relation) * weight[near])
    mentions = seed_mentions  # then the neighbours', all in relations_of's order
    if neighbours := sorted(set(weight) - is_seed):
        more = await reader.relations_of(key, neighbours, [MENTIONS], "in")
        mentions = sorted([*mentions, *more], key=lambda r: (r.source_id, r.type, r.target_id))
        # a neighbour named in every other chunk (d'Artagnan, next to any character) says less
        # about which chunk is meant than one named in a few
        specific = _specificity(mentions)
        for neighbour in neighbours:
            weight[neighbour] *= specific.get(neighbour, 1.0)
    named: dict[str, dict[str, Relation]] = {}
    for mention in mentions:
        named.setdefault(mention.source_id, {})[mention.target_id] = mention
    origin = {entity.entity_id: rank for rank, (entity, _) in enumerate(seeds)}
    penalty = settings.hop_penalty[0]
    for chunk_id, by_entity in named.items():
        held = [e for e in seed_ids if e in by_entity]
        if not held:
            continue
        score = penalty * sum(weight[e] for e in by_entity)
        current = reached.get(chunk_id)
        if current is None and len(by_entity) < 2:
            continue  # one name only: the walk's `max_fanout` chose among those chunks
        if current is not None and current.score >= score:
            continue
        first = min(held, key=lambda e: origin[e])
        path = (
            current.path
            if current is not None
            else Path(origin[first], (first, chunk_id), (by_entity[first],), weight[first], 1)
        )
        reached[chunk_id] = Reached(chunk_id, path, score)


def _specificity(mentions: Sequence[Relation]) -> dict[str, float]:
    """Entity id -> how specific its mentions are, in (0, 1]: ln(1 + n / df) over the largest of
    these, where df counts the chunks that name the entity and n those that name any of these
    entities (an inverse document frequency over the entities at hand). A name found in every
    other passage ("the king") says less about which passage is meant than one found in a few; it
    still counts. The rarest entity keeps its weight."""
    chunks_of: dict[str, set[str]] = {}
    for mention in mentions:
        chunks_of.setdefault(mention.target_id, set()).add(mention.source_id)
    named = len(set().union(*chunks_of.values())) if chunks_of else 0
    idf = {eid: math.log1p(named / len(chunks)) for eid, chunks in chunks_of.items()}
    top = max(idf.values(), default=0.0)
    return {eid: value / top for eid, value in idf.items()} if top > 0 else {}


async def document_search(
    reader: GraphView,
    source: ChunkSource,
    key: str,
    params: SearchParams,
    settings: DocumentSettings,
    recognized: Sequence[str] = (),
    linked: Sequence[str] = (),
) -> GraphResult:
    """The chunks the question's named entities lead to (see the module docstring), best first.
    `recognized`: the entity names NER found in the question; `linked`: the ids of the entities
    whose name or alias it holds."""
    found = await find_document_seeds(reader, key, params.query, settings, recognized, linked)
    if not found:
        return GraphResult([], {})
    seed_ids = sorted({entity.entity_id for entity, _ in found})
    seed_mentions = (
        await reader.relations_of(key, seed_ids, [MENTIONS], "in")
        if MENTIONS in settings.relationship_types
        else []
    )
    # among the question's own seeds; a question's only seed keeps its score
    specific = _specificity(seed_mentions) if len(found) > 1 else {}
    seeds = [(entity, score * specific.get(entity.entity_id, 1.0)) for entity, score in found]
    walk = _Walk(reader, key, settings, settings.max_depth)
    starts = {
        entity.entity_id: Path(rank, (entity.entity_id,), (), score, 1)
        for rank, (entity, score) in enumerate(seeds)
    }
    await walk.run(starts, {}, 1, chunk_steps=False)
    await _add_evidence(reader, key, settings, seeds, seed_mentions, walk.chunks, params.query)
    seed_of = [entity for entity, _ in seeds]
    match_of = [seed_match(score) for _, score in found]

    def explain(reached: Reached, names: Mapping[str, Entity]) -> tuple[str, common_pb2.GraphProvenance]:
        origin = reached.path.origin
        seed = seed_of[origin]
        return provenance(reached, names, seed.name, match_of[origin], seed.imported)

    return await _result(
        reader,
        source,
        key,
        params.corpus_id,
        walk.chunks,
        params.top_k,
        explain,
        params.path_regex,
        params.languages,
    )


async def document_expansion(
    reader: GraphView,
    source: ChunkSource,
    corpus_id: str,
    key: str,
    chunk_ids: Sequence[str],
    max_depth: int,
    top_k: int,
    settings: DocumentSettings,
) -> GraphResult:
    """The chunks within `max_depth` of the given ones (see the module docstring; the given
    chunks themselves are left out), best first. Provenance: seed_entity is the chunk id the
    path started from; hops is the depth."""
    walk = _Walk(reader, key, settings, max_depth)
    starts = {cid: Path(rank, (cid,), (), 1.0, 0) for rank, cid in enumerate(dict.fromkeys(chunk_ids))}
    defined: dict[str, list[str]] = {}
    if MENTIONS in settings.relationship_types:  # a code chunk's definitions, named by docs
        for entity in await reader.entities_by_chunks(key, list(starts)):
            if entity.type in CODE_ENTITY_TYPES and entity.entity_id not in starts:
                defined.setdefault(entity.chunk_id, []).append(entity.entity_id)
    await walk.run({}, starts, 0, chunk_steps=True, defined=defined)
    reached = {cid: r for cid, r in walk.chunks.items() if cid not in starts}
    start_ids = list(starts)

    def explain(found: Reached, names: Mapping[str, Entity]) -> tuple[str, common_pb2.GraphProvenance]:
        return provenance(found, names, start_ids[found.path.origin], "")

    return await _result(reader, source, key, corpus_id, reached, top_k, explain)


def merge_results(code: GraphResult, documents: GraphResult, top_k: int) -> GraphResult:
    """A mixed corpus's answer: each chunk with its best score of the two searches (the code
    search's on a tie), best first, then chunk id; top_k of them. Either alone is returned as is."""
    if not documents.chunks:
        return code
    if not code.chunks:
        return documents
    best: dict[str, tuple[ScoredChunk, common_pb2.GraphProvenance | None]] = {}
    for result in (code, documents):
        for chunk in result.chunks:
            cid = chunk.chunk.chunk_id
            if cid not in best or chunk.score > best[cid][0].score:
                best[cid] = (chunk, result.provenance.get(cid))
    ranked = sorted(best.values(), key=lambda pair: (-pair[0].score, pair[0].chunk.chunk_id))[:top_k]
    return GraphResult(
        [chunk for chunk, _ in ranked],
        {chunk.chunk.chunk_id: prov for chunk, prov in ranked if prov is not None},
    )
