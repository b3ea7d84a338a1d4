"""Writes one index generation of a corpus's graph beside the generation being searched.

Generation G+1 starts as a copy of G; the entities of changed and deleted files are replaced and
the relation set is brought to exactly what the new parse resolved (edges of unchanged files may
point into changed ones, so the diff is taken over the whole set, not per file). Searches keep
reading G until PostgreSQL commits G+1; then G is dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tribrid.graphstore import GraphStore
from tribrid.graphstore.base import graph_key
from tribrid.models import Entity, Relation


@dataclass(frozen=True, slots=True)
class GraphChange:
    """What the new generation's graph must hold, and which files changed since the last one."""

    corpus_id: str
    base_generation: int  # the committed generation (0: none yet)
    entities: Sequence[Entity]  # every entity of the new parse
    relations: Sequence[Relation]  # every relation of the new parse
    replaced_files: Sequence[str]  # new or changed files
    deleted_files: Sequence[str]
    # Write the generation from scratch, not from a copy of the last one (a new index format:
    # the copy would keep the old format's indexes).
    rebuild: bool = False


@dataclass(frozen=True, slots=True)
class GraphWriteResult:
    entities_written: int
    relations_added: int
    relations_deleted: int
    rebuilt: bool  # True when written from scratch instead of from the previous generation


async def discard_uncommitted(store: GraphStore, corpus_id: str, committed: int) -> None:
    """Drop what an interrupted run left: the half-built next generation and a stale previous one."""
    await store.delete_corpus(graph_key(corpus_id, committed + 1))
    if committed > 0:
        await store.delete_corpus(graph_key(corpus_id, committed - 1))


async def generation_present(store: GraphStore, corpus_id: str, generation: int) -> bool:
    """Whether the graph store holds a generation's graph (a corpus's graph has at least its
    documents or definitions; one of no chunks has nothing to lose)."""
    return (await store.counts(graph_key(corpus_id, generation)))["entities"] > 0


async def drop_generation(store: GraphStore, corpus_id: str, generation: int) -> None:
    await store.delete_corpus(graph_key(corpus_id, generation))


async def write_next_generation(store: GraphStore, change: GraphChange) -> GraphWriteResult:
    base_key = graph_key(change.corpus_id, change.base_generation)
    new_key = graph_key(change.corpus_id, change.base_generation + 1)
    await store.delete_corpus(new_key)
    has_base = change.base_generation > 0 and (await store.counts(base_key))["entities"] > 0
    if not has_base or change.rebuild:
        await store.ensure_schema(new_key)
        written = await store.upsert_entities(new_key, change.entities)
        added = await store.upsert_relations(new_key, change.relations)
        return GraphWriteResult(written, added, 0, rebuilt=True)

    await store.copy_graph(base_key, new_key)
    touched = set(change.replaced_files) | set(change.deleted_files)
    await store.delete_files(new_key, sorted(touched))
    # Entities of no file (named entities of documents) belong to the whole corpus: their set is
    # diffed whole, and one whose name or aliases changed is rewritten.
    stored_free = {e.entity_id: e for e in await store.entities_in_files(new_key, [""])}
    wanted_free = {e.entity_id: e for e in change.entities if not e.file_path}
    await store.delete_entities(new_key, sorted(set(stored_free) - set(wanted_free)))
    # Entities of unchanged files were copied as they were; one whose unresolved references a
    # changed file now resolves (or no longer resolves) is rewritten too.
    stored_unresolved = await store.unresolved_refs(new_key)
    rewrite = [
        e
        for e in change.entities
        if e.file_path in touched
        or (not e.file_path and stored_free.get(e.entity_id) != e)
        or (e.file_path and stored_unresolved.get(e.entity_id, ()) != e.unresolved)
    ]
    written = await store.upsert_entities(new_key, rewrite)
    wanted = set(change.relations)
    present = set(await store.all_relations(new_key))
    stale = sorted(present - wanted, key=_relation_order)
    missing = sorted(wanted - present, key=_relation_order)
    deleted = await store.delete_relations(new_key, stale)
    added = await store.upsert_relations(new_key, missing)
    return GraphWriteResult(written, added, deleted, rebuilt=False)


def _relation_order(relation: Relation) -> tuple[str, str, str]:
    return (relation.source_id, relation.type, relation.target_id)
