"""Canonical named entities and the document graph they make: MENTIONS (chunk -> entity, with a
count) and RELATED_TO (entity <-> entity, co-occurrence strength) for a whole corpus
(`build_document_graph`), from what the recogniser of `tribrid.ner` found in each chunk.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations

from tribrid.config import EntitiesConfig
from tribrid.models import Entity, Relation, stable_id
from tribrid.ner import Mention, collapse_whitespace

MENTIONS = "mentions"
RELATED_TO = "related_to"

# --- canonical entities --------------------------------------------------------------------

# quotes (straight and curly), brackets, sentence punctuation, dashes (hyphen, en, em)
_EDGE_PUNCTUATION = "\"'`\u201c\u201d\u2018\u2019\u00ab\u00bb()[]{}<>.,;:!?-\u2013\u2014*_/\\|"
_POSSESSIVE = re.compile("(?:'s|\u2019s|'|\u2019)$")  # straight or curly apostrophe


def normalize_name(text: str) -> str:
    """The key two surface forms of one entity share: NFKC, case-folded, whitespace collapsed,
    a leading "the " and a trailing possessive dropped, punctuation trimmed at both ends."""
    name = collapse_whitespace(unicodedata.normalize("NFKC", text)).casefold()
    name = name.strip(_EDGE_PUNCTUATION + " ")
    if name.startswith("the "):
        name = name[4:]
    name = _POSSESSIVE.sub("", name)
    return name.strip(_EDGE_PUNCTUATION + " ")


@dataclass(frozen=True, slots=True)
class AliasMerge:
    """A name folded into a longer one of the same type (reported by `build_document_graph`)."""

    type: str
    name: str  # the merged name's display form
    into: str  # the display form it joined
    entity_id: str  # the entity it joined


@dataclass(slots=True)
class DocumentGraph:
    entities: list[Entity] = field(default_factory=list)
    mentions: list[Relation] = field(default_factory=list)
    related: list[Relation] = field(default_factory=list)
    merges: list[AliasMerge] = field(default_factory=list)
    # An imported graph's typed edges (services/indexer/imported_graph.py).
    typed: list[Relation] = field(default_factory=list)


def display_name(surface_counts: Mapping[str, int]) -> str:
    """The most frequent surface form; ties: the lexicographically smallest."""
    return min(surface_counts, key=lambda s: (-surface_counts[s], s))


def _contains_run(words: tuple[str, ...], run: tuple[str, ...]) -> bool:
    n = len(run)
    return any(words[i : i + n] == run for i in range(len(words) - n + 1))


def name_words(name: str) -> tuple[str, ...]:
    """A normalized name's words, punctuation trimmed from each ("interest," -> "interest")."""
    return tuple(w for w in (word.strip(_EDGE_PUNCTUATION) for word in name.split()) if w)


def alias_targets(names: Iterable[tuple[str, str]]) -> dict[tuple[str, str], tuple[str, str]]:
    """(type, normalized name) -> the one longer same-type name containing its words as a
    contiguous whole-word run ("dell" -> "dell technologies"). A name inside two or more longer
    names (a PERSON "dell" with "michael dell" and "adam dell") stays itself. Decided on the
    whole set at once, so the answer does not depend on the order names come in; no chains form,
    since a run of a run of C is a run of C too, and so has two candidates."""
    by_type: dict[str, list[tuple[str, tuple[str, ...]]]] = defaultdict(list)
    for type_, name in sorted(set(names)):
        by_type[type_].append((name, name_words(name)))
    targets: dict[tuple[str, str], tuple[str, str]] = {}
    for type_, named in by_type.items():
        for name, words in named:
            longer = [
                other
                for other, other_words in named
                if len(other_words) > len(words) and _contains_run(other_words, words)
            ]
            if len(longer) == 1:
                targets[(type_, name)] = (type_, longer[0])
    return targets


# --- the corpus's document graph -----------------------------------------------------------


def jaccard(shared: int, first: int, second: int) -> float:
    """|A and B| / |A or B| of two entities' chunk sets A and B, given |A and B|, |A| and |B|."""
    return shared / (first + second - shared)


def build_document_graph(
    corpus_id: str, mentions_by_chunk: Mapping[str, Sequence[Mention]], cfg: EntitiesConfig
) -> DocumentGraph:
    """Canonical entities, MENTIONS and RELATED_TO of a corpus from each chunk's mentions.

    One entity per (type, normalized name); type = cfg.types[label] (labels not there are
    skipped). With cfg.merge_aliases, a name folds into its unique longer same-type name
    (`alias_targets`). MENTIONS go from the chunk id (a chunk node's entity id) to the entity, with
    the chunk's total count of the entity's names.

    RELATED_TO strength is the Jaccard index of the two entities' chunk sets. Why Jaccard and
    not (normalized) PMI: it reads plainly as "of the chunks naming either, the share naming
    both", lies in [0, 1] without clipping, and depends on the two entities' chunks only. PMI
    also depends on the corpus's chunk count, so re-indexing one document would move the
    strength of every edge of the corpus, where the design wants a re-index to recompute only the
    strengths it affects; and PMI rates two entities met once, together, as perfectly related,
    while Jaccard needs `related_min_chunks` shared chunks to begin with. The graph leg multiplies
    strengths along a path and cuts at graph.related_min_strength (0.5): with Jaccard, 0.5 means
    the two are named together at least half the time one of them is.

    Pairs need >= cfg.related_min_chunks shared chunks and a strength (rounded to 6 decimals)
    >= cfg.related_floor. Then each entity ranks its pairs, strongest first (ties: the other
    entity's id), and an edge stays when it is within the top cfg.related_top_n of EITHER end:
    a hub's cut then never strands a rare entity without its strongest neighbour (so a hub can
    keep more than top_n edges, those its neighbours rank high).
    """
    keyed: dict[str, Counter[tuple[str, str]]] = {}  # chunk -> (type, name) -> count
    surfaces: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for chunk_id, mentions in mentions_by_chunk.items():
        counts: Counter[tuple[str, str]] = Counter()
        for mention in mentions:
            type_ = cfg.types.get(mention.label)
            name = normalize_name(mention.text)
            if type_ is None or not name:
                continue
            counts[(type_, name)] += mention.count
            surfaces[(type_, name)][mention.text] += mention.count
        keyed[chunk_id] = counts

    targets = alias_targets(surfaces) if cfg.merge_aliases else {}
    canonical = {key: targets.get(key, key) for key in surfaces}
    ids = {key: stable_id(corpus_id, "named", key[0], key[1]) for key in set(canonical.values())}

    members: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for key, target in canonical.items():
        members[target].append(key)
    graph = DocumentGraph()
    shown: dict[tuple[str, str], str] = {}
    for target, keys in members.items():
        forms: Counter[str] = Counter()
        for key in keys:
            forms.update(surfaces[key])
        shown[target] = display_name(surfaces[target])
        name = shown[target]
        graph.entities.append(
            Entity(
                entity_id=ids[target],
                corpus_id=corpus_id,
                type=target[0],
                name=name,
                qualified_name=name,
                file_path="",
                start_line=0,
                end_line=0,
                chunk_id="",
                aliases=tuple(sorted(form for form in forms if form != name)),
            )
        )
    graph.entities.sort(key=lambda e: e.entity_id)
    graph.merges = sorted(
        (
            AliasMerge(
                type=key[0], name=display_name(surfaces[key]), into=shown[target], entity_id=ids[target]
            )
            for key, target in targets.items()
        ),
        key=lambda m: (m.type, m.name, m.entity_id),
    )

    chunks_of: dict[str, set[str]] = defaultdict(set)
    for chunk_id, counts in sorted(keyed.items()):
        per_entity: Counter[str] = Counter()
        for key, n in counts.items():
            per_entity[ids[canonical[key]]] += n
        for entity_id, n in sorted(per_entity.items()):
            graph.mentions.append(Relation(source_id=chunk_id, target_id=entity_id, type=MENTIONS, count=n))
            chunks_of[entity_id].add(chunk_id)
    graph.related = related_edges(chunks_of, cfg)
    return graph


def related_edges(chunks_of: Mapping[str, set[str]], cfg: EntitiesConfig) -> list[Relation]:
    """RELATED_TO edges (source_id < target_id) from each entity's set of mentioning chunks; the
    measure and the cuts are `build_document_graph`'s."""
    entities_of: dict[str, list[str]] = defaultdict(list)
    for entity_id, chunk_ids in chunks_of.items():
        for chunk_id in chunk_ids:
            entities_of[chunk_id].append(entity_id)
    shared: Counter[tuple[str, str]] = Counter()
    for entity_ids in entities_of.values():
        shared.update(combinations(sorted(entity_ids), 2))

    candidates: dict[tuple[str, str], float] = {}
    for (first, second), together in shared.items():
        if together < cfg.related_min_chunks:
            continue
        strength = round(jaccard(together, len(chunks_of[first]), len(chunks_of[second])), 6)
        if strength >= cfg.related_floor:
            candidates[(first, second)] = strength

    ranked: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for (first, second), strength in candidates.items():
        ranked[first].append((-strength, second))
        ranked[second].append((-strength, first))
    kept: set[tuple[str, str]] = set()
    for entity_id, neighbours in ranked.items():
        for _, other in sorted(neighbours)[: cfg.related_top_n]:
            kept.add((min(entity_id, other), max(entity_id, other)))
    return [
        Relation(source_id=first, target_id=second, type=RELATED_TO, strength=candidates[(first, second)])
        for first, second in sorted(kept)
    ]
