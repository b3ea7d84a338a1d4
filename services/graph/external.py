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
    """Per graph (key and corpus life): lookup key -> {entity id: the reference it matched}."""

    def __init__(self, max_graphs: int = 8) -> None:
        self._max_graphs = max_graphs
        self._indexes: OrderedDict[tuple[str, str], asyncio.Task[_Index]] = OrderedDict()

    def of(self, key: str, life: str) -> GraphExternalNames:
        """The index of the graph under `key` in this life of its corpus (a corpus deleted and
        indexed again reuses its graph keys; `life` tells them apart)."""
        return GraphExternalNames(self, key, life)

    async def index(self, store: GraphStore, key: str, life: str) -> _Index:
        task = self._indexes.get((key, life))
        if task is None or (task.done() and task.exception() is not None):
            # One load per graph, shared by the requests that arrive while it runs.
            task = asyncio.ensure_future(_load(store, key))
            self._indexes[(key, life)] = task
            while len(self._indexes) > self._max_graphs:
                self._indexes.popitem(last=False)
        self._indexes.move_to_end((key, life))
        return await asyncio.shield(task)


@dataclass(frozen=True, slots=True)
class GraphExternalNames:
    """ExternalNames bound to one graph: what a search of that graph is handed."""

    names: ExternalNames
    key: str
    life: str

    async def referrers(
        self, store: GraphStore, names: Sequence[str], entity_types: Sequence[str], limit: int
    ) -> list[Referrer]:
        """Entities of these types referring to any of the names (a name or its dotted tail),
        ordered by id, at most `limit`; each with the first name's reference it matched."""
        index = await self.names.index(store, self.key, self.life)
        matched: dict[str, str] = {}
        for name in names:
            for entity_id, ref in index.get(name.lower(), {}).items():
                matched.setdefault(entity_id, ref)
        wanted, ids = set(entity_types), sorted(matched)
        kept: list[Entity] = []
        step = max(limit, 64)  # a common name ("get") can have thousands: read only what is needed
        for start in range(0, len(ids), step):
            batch = await store.get_entities(self.key, ids[start : start + step], with_unresolved=False)
            kept.extend(e for e in batch if e.type in wanted)
            if len(kept) >= limit:
                break
        return [Referrer(e, matched[e.entity_id]) for e in kept[:limit]]


_Index = dict[str, dict[str, str]]  # lookup key -> {entity id: reference as written}


async def _load(store: GraphStore, key: str) -> _Index:
    index: _Index = {}
    for entity_id, names in (await store.unresolved_refs(key)).items():
        for name in names:
            for lookup in lookup_keys(name):
                index.setdefault(lookup, {}).setdefault(entity_id, name)
    return index
