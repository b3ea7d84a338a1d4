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

from tribrid.graphstore import GraphStore
from tribrid.models import Entity


def lookup_keys(name: str) -> list[str]:
    """The lowered name and every dotted suffix of it: a.b.c -> a.b.c, b.c, c."""
    lowered = name.lower()
    parts = lowered.split(".")
    return [".".join(parts[i:]) for i in range(len(parts)) if parts[i]]


class ExternalNames:
    """Per graph key: lookup key -> ids of the entities whose unresolved references end with it."""

    def __init__(self, max_graphs: int = 8) -> None:
        self._max_graphs = max_graphs
        self._indexes: OrderedDict[str, asyncio.Task[dict[str, frozenset[str]]]] = OrderedDict()

    async def referrers(
        self, store: GraphStore, key: str, names: Sequence[str], entity_types: Sequence[str], limit: int
    ) -> list[Entity]:
        """Entities of these types referring to any of the names (a name or its dotted tail), by id."""
        index = await self._index(store, key)
        ids = sorted({eid for name in names for eid in index.get(name.lower(), ())})
        if not ids:
            return []
        wanted = set(entity_types)
        found = [e for e in await store.get_entities(key, ids) if e.type in wanted]
        return sorted(found, key=lambda e: e.entity_id)[:limit]

    async def _index(self, store: GraphStore, key: str) -> dict[str, frozenset[str]]:
        task = self._indexes.get(key)
        if task is None or (task.done() and task.exception() is not None):
            # One load per key, shared by the requests that arrive while it runs.
            task = asyncio.ensure_future(_load(store, key))
            self._indexes[key] = task
            while len(self._indexes) > self._max_graphs:
                self._indexes.popitem(last=False)
        self._indexes.move_to_end(key)
        return await asyncio.shield(task)


async def _load(store: GraphStore, key: str) -> dict[str, frozenset[str]]:
    by_key: dict[str, set[str]] = {}
    for entity_id, names in (await store.unresolved_refs(key)).items():
        for name in names:
            for lookup in lookup_keys(name):
                by_key.setdefault(lookup, set()).add(entity_id)
    return {lookup: frozenset(ids) for lookup, ids in by_key.items()}
