"""Which entities refer to a name the corpus does not define ("requests.get", "shutil.which").

The graph keeps such names on their entities (`Entity.unresolved`). Neither graph database can
index the elements of a list property for lookup, so answering from the graph is a scan of every
entity. A committed generation's graph never changes, so the graph leg reads its unresolved names
once and keeps them as an inverted index, per graph key: the first such query of a generation pays
one scan, the rest are dictionary lookups.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from services.graph.per_graph import PerGraph
from tribrid.graphstore.base import GraphView
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
        self._indexes: PerGraph[_Index] = PerGraph(max_graphs)

    def of(self, key: str, life: str) -> GraphExternalNames:
        """The index of the graph under `key` in this life of its corpus (a corpus deleted and
        indexed again reuses its graph keys; `life` tells them apart)."""
        return GraphExternalNames(self, key, life)

    async def index(self, store: GraphView, key: str, life: str) -> _Index:
        return await self._indexes.get(key, life, lambda: _load(store, key))


@dataclass(frozen=True, slots=True)
class GraphExternalNames:
    """ExternalNames bound to one graph: what a search of that graph is handed."""

    names: ExternalNames
    key: str
    life: str

    async def referrers(
        self, store: GraphView, names: Sequence[str], entity_types: Sequence[str], limit: int
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


async def _load(store: GraphView, key: str) -> _Index:
    index: _Index = {}
    for entity_id, names in (await store.unresolved_refs(key)).items():
        for name in names:
            for lookup in lookup_keys(name):
                index.setdefault(lookup, {}).setdefault(entity_id, name)
    return index
