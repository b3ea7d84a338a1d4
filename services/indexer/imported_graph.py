"""An imported graph joins the corpus's document graph: its nodes and typed edges, and MENTIONS
found by linking every node's name and aliases in the document chunks' text (any script).

A named entity the recogniser found under a name or alias of an imported node is that node: its
mentions move to the node and the recognised entity goes. RELATED_TO is then computed again over
every entity's mentioning chunks, with the thresholds of `build_document_graph`, so expansion
walks from an imported node like from any named entity.
"""

from __future__ import annotations

import json
import unicodedata
from collections import defaultdict
from collections.abc import Mapping

from services.indexer.graph_import import ImportedGraph
from services.indexer.named_entities import MENTIONS, DocumentGraph, normalize_name, related_edges
from tribrid.config import EntitiesConfig
from tribrid.entity_linking import EntityLinker, KnownEntity
from tribrid.models import Entity, Relation


def _name_key(name: str) -> str:
    """Names the linker takes as one: normalized, and without accents ("Zurich" is Zürich)."""
    decomposed = unicodedata.normalize("NFD", normalize_name(name))
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _properties(values: Mapping[str, object]) -> str:
    return json.dumps(values, ensure_ascii=False, sort_keys=True) if values else ""


def imported_entities(corpus_id: str, graph: ImportedGraph) -> list[Entity]:
    """The nodes as entities of no file, by their own ids."""
    return [
        Entity(
            entity_id=node.id,
            corpus_id=corpus_id,
            type=node.type,
            name=node.name,
            qualified_name=node.name,
            file_path="",
            start_line=0,
            end_line=0,
            chunk_id="",
            aliases=tuple(sorted(set(node.aliases) - {node.name})),
            properties=_properties(node.properties),
            imported=True,
        )
        for node in sorted(graph.nodes, key=lambda n: n.id)
    ]


def typed_relations(graph: ImportedGraph) -> list[Relation]:
    return [
        Relation(edge.source, edge.target, edge.relation, properties=_properties(edge.properties))
        for edge in sorted(graph.edges, key=lambda e: (e.source, e.relation, e.target))
    ]


def link_chunks(graph: ImportedGraph, texts: Mapping[str, str]) -> dict[str, dict[str, int]]:
    """Chunk id -> (node id -> times its name or aliases occur in the chunk's text)."""
    linker = EntityLinker(KnownEntity(node.id, (node.name, *node.aliases)) for node in graph.nodes)
    return linker.link(texts)


def merge_imported(
    corpus_id: str,
    graph: ImportedGraph,
    named: DocumentGraph,
    linked: Mapping[str, Mapping[str, int]],
    cfg: EntitiesConfig,
) -> DocumentGraph:
    """The document graph with the import in it: recognised entities that are imported nodes
    folded into them, MENTIONS counted once per chunk and entity (the larger count), typed edges,
    and RELATED_TO over the merged mentions."""
    by_name: dict[str, str] = {}
    for node in sorted(graph.nodes, key=lambda n: n.id):
        for name in (node.name, *node.aliases):
            by_name.setdefault(_name_key(name), node.id)
    folded = {
        entity.entity_id: node_id
        for entity in named.entities
        for name in (entity.name, *entity.aliases)
        if (node_id := by_name.get(_name_key(name))) is not None
    }
    counts: dict[tuple[str, str], int] = {}
    for mention in named.mentions:
        key = (mention.source_id, folded.get(mention.target_id, mention.target_id))
        counts[key] = max(counts.get(key, 0), mention.count)
    for chunk_id, found in linked.items():
        for node_id, n in found.items():
            counts[(chunk_id, node_id)] = max(counts.get((chunk_id, node_id), 0), n)
    mentions = [Relation(chunk, entity, MENTIONS, count=n) for (chunk, entity), n in sorted(counts.items())]
    chunks_of: dict[str, set[str]] = defaultdict(set)
    for mention in mentions:
        chunks_of[mention.target_id].add(mention.source_id)
    entities = [e for e in named.entities if e.entity_id not in folded] + imported_entities(corpus_id, graph)
    return DocumentGraph(
        entities=sorted(entities, key=lambda e: e.entity_id),
        mentions=mentions,
        related=related_edges(chunks_of, cfg),
        merges=named.merges,
        typed=typed_relations(graph),
    )
