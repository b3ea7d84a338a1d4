"""Community detection over a stored code graph (igraph), written back as an entity property.

The graph is read as an undirected, weighted graph: one vertex per entity (sorted by id, so the
vertex numbering never depends on the store's row order) and one edge per connected pair, its
weight the number of relations between the two (of any type, either direction). igraph draws
its random numbers from a `random.Random(seed)` installed for the run, so a fixed seed gives
the same communities every time.

Communities are numbered 0, 1, ... in order of their smallest member id. Entities without any
relation get community -1 (NO_COMMUNITY): a singleton "community" tells nothing, and leaving
them out keeps the community count meaningful.
"""

from __future__ import annotations

import asyncio
import random
import threading
from dataclasses import dataclass, field
from typing import Literal

import igraph  # type: ignore[import-untyped]

from tribrid.graphstore.base import NO_COMMUNITY, GraphStore

Algorithm = Literal["louvain", "label_propagation"]
ALGORITHMS: tuple[Algorithm, ...] = ("louvain", "label_propagation")

# igraph's random number generator is process-global: one run at a time.
_RNG_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class CommunityResult:
    algorithm: Algorithm
    # Communities found among entities with at least one relation.
    communities: int
    entities: int
    # Entities left without a community (no relations).
    isolated: int
    modularity: float
    # entity id -> community number (-1 for isolated entities)
    membership: dict[str, int] = field(default_factory=dict)
    # community number -> member count
    sizes: dict[int, int] = field(default_factory=dict)


def compute_communities(
    entity_ids: list[str],
    edges: list[tuple[str, str]],
    algorithm: Algorithm,
    seed: int,
    resolution: float = 1.0,
) -> CommunityResult:
    """Pure computation (no store): membership of each entity id; see the module docstring."""
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown community algorithm {algorithm!r}; allowed: {list(ALGORITHMS)}")
    ids = sorted(set(entity_ids))
    index = {eid: i for i, eid in enumerate(ids)}
    weights: dict[tuple[int, int], float] = {}
    for source, target in edges:
        a, b = index.get(source), index.get(target)
        if a is None or b is None or a == b:
            continue
        pair = (a, b) if a < b else (b, a)
        weights[pair] = weights.get(pair, 0.0) + 1.0
    pairs = sorted(weights)
    graph = igraph.Graph(n=len(ids), edges=pairs, directed=False)
    graph.es["weight"] = [weights[p] for p in pairs]
    connected = [graph.degree(i) > 0 for i in range(len(ids))]

    raw: list[int]
    modularity = 0.0
    if pairs:
        with _RNG_LOCK:
            igraph.set_random_number_generator(random.Random(seed))
            try:
                if algorithm == "louvain":
                    clustering = graph.community_multilevel(weights="weight", resolution=resolution)
                else:
                    clustering = graph.community_label_propagation(weights="weight")
            finally:
                igraph.set_random_number_generator(random)
        raw = list(clustering.membership)
        modularity = float(graph.modularity(raw, weights="weight", resolution=resolution))
    else:
        raw = list(range(len(ids)))

    # Renumber by smallest member id (vertices are in id order), isolated entities -> -1.
    renumber: dict[int, int] = {}
    membership: dict[str, int] = {}
    sizes: dict[int, int] = {}
    for i, eid in enumerate(ids):
        if not connected[i]:
            membership[eid] = NO_COMMUNITY
            continue
        number = renumber.setdefault(raw[i], len(renumber))
        membership[eid] = number
        sizes[number] = sizes.get(number, 0) + 1
    return CommunityResult(
        algorithm=algorithm,
        communities=len(renumber),
        entities=len(ids),
        isolated=sum(1 for c in connected if not c),
        modularity=modularity,
        membership=membership,
        sizes=sizes,
    )


async def detect_communities(
    store: GraphStore,
    key: str,
    algorithm: Algorithm,
    seed: int,
    resolution: float = 1.0,
    *,
    known: tuple[list[str], list[tuple[str, str]]] | None = None,
) -> CommunityResult:
    """Detect communities in the graph stored under `key` and store them on its entities.

    Reads all entity ids and relations (unless the caller `known`s them: the indexer has just
    written exactly those), runs igraph off the event loop, then writes every entity's
    `community` property in batches. Returns counts and the modularity.
    """
    if known is not None:
        ids, edges = known
    else:
        ids = await store.entity_ids(key)
        edges = [(r.source_id, r.target_id) for r in await store.all_relations(key)]
    result = await asyncio.to_thread(compute_communities, ids, edges, algorithm, seed, resolution)
    await store.set_communities(key, result.membership)
    return result
