"""The breadth-first traversal every graph reader shares, whatever answers its neighbour steps.

A step is "these frontier ids -> their (source id, relation label, neighbour id) edges to nodes
not yet reached, at most max_fanout per source (`cap_fanout`)": the Cypher stores answer it with
one `cypher.neighbours` query, an in-memory snapshot from sorted adjacency lists. The walk, its
tie-breaks and where it stops live only here, so both give the same hits.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Iterable, Iterator, Mapping, Sequence
from itertools import islice
from typing import Any, NamedTuple

from tribrid.graphstore import cypher
from tribrid.graphstore.base import (
    TraversalHit,
    check_direction,
    check_max_hops,
    check_relationship_types,
    clean_strings,
)
from tribrid.models import Entity

# (source id, relation label as stored, e.g. "CALLS", neighbour id)
Edge = tuple[str, str, str]
# One breadth-first step: the edges from these frontier ids to nodes not in `seen`, each once, at
# most the fan-out cap per frontier id, chosen as `cap_fanout` does (in any order).
Step = Callable[[list[str], Collection[str]], Awaitable[Iterable[Edge]]]

# Frontier nodes expanded per step in a traversal (it stops once `limit` are reached).
EXPAND_BATCH = 16


class Route(NamedTuple):
    """How a traversal first reached an entity.

    Routes of a hop compare by priority, as tuples: the better seed (the earlier in the seeds'
    order), then the relation types, then the path, which ends with the entity: never a tie.
    """

    seed_rank: int
    relationship_types: tuple[str, ...]
    path: tuple[str, ...]
    hops: int
    seed_id: str


class Walk:
    """What a breadth-first walk reached: each entity's best route, kept as a pointer to the
    entity it came from (a Route is built only for the entities asked about), its hops, and its
    number of shortest paths. `ranked` lists the entities in route order: the seeds, then each
    hop's entities by route."""

    def __init__(self, seeds: Sequence[str]) -> None:
        # entity id -> (the entity before it on its best route, relation label); None for a seed
        self.parents: dict[str, tuple[str, str] | None] = dict.fromkeys(seeds)
        self.seeds = list(self.parents)
        self.hops: dict[str, int] = dict.fromkeys(self.seeds, 0)
        self.paths: dict[str, int] = dict.fromkeys(self.seeds, 1)
        self.ranked: list[str] = list(self.seeds)
        self._seed_rank = {seed: rank for rank, seed in enumerate(self.seeds)}

    def __contains__(self, entity_id: object) -> bool:
        return entity_id in self.parents

    def route(self, entity_id: str) -> Route:
        """The best route to a reached entity."""
        path, labels = [entity_id], []
        link = self.parents[entity_id]
        while link is not None:
            previous, label = link
            path.append(previous)
            labels.append(cypher.relationship_type(label))
            link = self.parents[previous]
        seed = path[-1]
        return Route(self._seed_rank[seed], tuple(reversed(labels)), tuple(reversed(path)), len(labels), seed)


def checked_walk(
    seed_ids: Sequence[str], max_hops: int, relationship_types: Sequence[str], direction: str, limit: int
) -> tuple[list[str], list[str]] | None:
    """A `traverse` request's seeds (cleaned) and relation types (checked, sorted), or None when
    it can reach nothing; ValueError for a hop count, direction or relation type out of range."""
    check_max_hops(max_hops)
    check_direction(direction)
    rel_types = check_relationship_types(relationship_types)
    sources = clean_strings(seed_ids)
    if not sources or not rel_types or limit <= 0:
        return None
    return sources, rel_types


def batches(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def cap_fanout(edges: Iterable[Edge], max_fanout: int, seen: Collection[str]) -> list[Edge]:
    """(source, label, target) of one breadth-first step, each once, at most `max_fanout` per
    source (0 = all): the first by (target id, label) among targets not in `seen`, so a dense
    node cannot blow up the next hop and the choice is deterministic (the order of what is kept
    is not: a breadth-first step does not depend on it). Done here rather than in Cypher, where
    FalkorDB took 0.5-3 s for the ORDER BY + collect + slice that the plain step does in ~10 ms."""
    by_source: dict[str, set[tuple[str, str]]] = {}
    for source, label, target in edges:
        if target not in seen:
            by_source.setdefault(source, set()).add((target, label))
    capped: list[Edge] = []
    for source, pairs in by_source.items():
        kept = sorted(pairs)[:max_fanout] if 0 < max_fanout < len(pairs) else pairs
        capped.extend((source, label, target) for target, label in kept)
    return capped


async def breadth_first(
    step: Step,
    seeds: list[str],
    max_hops: int,
    limit: int,
    stop_at: str | None = None,
    batch_size: int = EXPAND_BATCH,
) -> Walk:
    """Multi-source BFS: exact minimum hops, and shortest-path counts through what it expanded.

    Each hop expands its frontier best route first (seed rank, relation types, path), in
    batches, and stops as soon as `limit` entities are reached: the rest of a dense hop would
    only be fetched and parsed to be cut (a hop-2 frontier of ~100 nodes can return 2,000+
    rows when ~20 more entities are wanted).

    Routes are compared without being built. Within a hop, a route through frontier node s over
    relation type t orders as (group of s, t, position of s, entity), where a node's position is
    its place in its hop's route order and its group the rank of its (seed, relation types)
    among them: the same order as comparing the routes themselves, with small ints.
    """
    walk = Walk(seeds)
    parents, paths = walk.parents, walk.paths
    type_of = cypher.relationship_type
    # a seed's route is (its rank, (), (seed,)): group and position are both its rank
    position = {seed: rank for rank, seed in enumerate(walk.seeds)}
    group = dict(position)
    frontier = list(walk.seeds)
    reached = 0  # entities beyond the seeds
    for hop in range(1, max_hops + 1):
        # target -> (group, relation type, position of the source, target, source, label)
        found: dict[str, tuple[int, str, int, str, str, str]] = {}
        for batch in batches(frontier, batch_size):
            if reached + len(found) >= limit:
                break
            for source, label, target in await step(list(batch), parents):  # targets not reached before
                paths[target] = paths.get(target, 0) + paths[source]
                best = found.get(target)
                if best is None or (group[source], type_of(label), position[source]) < best[:3]:
                    found[target] = (group[source], type_of(label), position[source], target, source, label)
        ordered = sorted(found.values())
        position, group = {}, {}
        last, group_rank = None, -1
        for rank, (source_group, rel_type, _, target, source, label) in enumerate(ordered):
            parents[target] = (source, label)
            walk.hops[target] = hop
            position[target] = rank
            if (source_group, rel_type) != last:
                last, group_rank = (source_group, rel_type), group_rank + 1
            group[target] = group_rank
        frontier = [item[3] for item in ordered]
        walk.ranked.extend(frontier)
        reached += len(frontier)
        # Later hops rank after this one, so once `limit` hits exist the rest can't make the cut.
        if not frontier or reached >= limit or stop_at in found:
            break
    return walk


def chosen_hits(walk: Walk, limit: int) -> list[str]:
    """The ids of the `limit` best routes beyond the seeds, listed by hops, then id."""
    best = islice(walk.ranked, len(walk.seeds), len(walk.seeds) + limit)
    return sorted(best, key=lambda eid: (walk.hops[eid], eid))


def traversal_hits(chosen: Sequence[str], walk: Walk, entities: Mapping[str, Entity]) -> list[TraversalHit]:
    """The chosen ids as hits (those whose entity is known), in the order given."""
    hits = []
    for eid in chosen:
        if eid in entities:
            route = walk.route(eid)
            types, path = route.relationship_types, route.path
            hits.append(TraversalHit(entities[eid], route.hops, route.seed_id, types, path, walk.paths[eid]))
    return hits
