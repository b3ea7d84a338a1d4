"""Which entities refer to a name the corpus does not define ("requests.get", "shutil.which").

The graph keeps such names on their entities (`Entity.unresolved`). Neither graph database can
index the elements of a list property for lookup, so answering from the graph is a scan of every
entity. A committed generation's graph never changes, so the graph leg reads its unresolved names
once and keeps them as an inverted index, per graph key: the first such query of a generation pays
one scan, the rest are dictionary lookups.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from tribrid.graphstore import GraphStore
from tribrid.models import Entity


def lookup_keys(name: str) -> list[str]:
    """The lowered name and every dotted suffix of it: a.b.c -> a.b.c, b.c, c."""
    lowered = name.lower()
    parts = lowered.split(".")
    return [".".join(parts[i:]) for i in range(len(parts)) if parts[i]]


@dataclass(frozen=True, slots=True)
class Referrer:
    entity: Entity  # without its unresolved references
    name: str  # the unresolved reference that matched, as written


class ExternalNames:
    """Per graph key: lookup key -> {entity id: the reference it matched}."""

    def __init__(self, max_graphs: int = 8) -> None:
        self._max_graphs = max_graphs
        self._indexes: OrderedDict[str, asyncio.Task[_Index]] = OrderedDict()

    async def referrers(
        self, store: GraphStore, key: str, names: Sequence[str], entity_types: Sequence[str], limit: int
    ) -> list[Referrer]:
        """Entities of these types referring to any of the names (a name or its dotted tail),
        ordered by id, at most `limit`; each with the first name's reference it matched."""
        index = await self._index(store, key)
        matched: dict[str, str] = {}
        for name in names:
            for entity_id, ref in index.get(name.lower(), {}).items():
                matched.setdefault(entity_id, ref)
        if not matched:
            return []
        wanted = set(entity_types)
        entities = await store.get_entities(key, sorted(matched), with_unresolved=False)
        kept = [e for e in entities if e.type in wanted][:limit]
        return [Referrer(e, matched[e.entity_id]) for e in kept]

    async def _index(self, store: GraphStore, key: str) -> _Index:
        task = self._indexes.get(key)
        if task is None or (task.done() and task.exception() is not None):
            # One load per key, shared by the requests that arrive while it runs.
            task = asyncio.ensure_future(_load(store, key))
            self._indexes[key] = task
            while len(self._indexes) > self._max_graphs:
                self._indexes.popitem(last=False)
        self._indexes.move_to_end(key)
        return await asyncio.shield(task)


_Index = dict[str, dict[str, str]]  # lookup key -> {entity id: reference as written}


async def _load(store: GraphStore, key: str) -> _Index:
    index: _Index = {}
    for entity_id, names in (await store.unresolved_refs(key)).items():
        for name in names:
            for lookup in lookup_keys(name):
                index.setdefault(lookup, {}).setdefault(entity_id, name)
    return index
