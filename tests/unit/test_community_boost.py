"""The graph leg's community boost on a hit's score: applied only while communities are on."""

from __future__ import annotations

from services.graph.search import hit_score
from tribrid.config import GraphSearchConfig
from tribrid.graphstore.base import TraversalHit
from tribrid.models import Entity


def test_community_boost_scales_a_graph_hit() -> None:
    entity = Entity("e", "c", "function", "f", "m.f", "m.py", 1, 2, "chunk")
    hit = TraversalHit(entity, 1, "seed", ("calls",), ("seed", "e"), 1)
    settings = GraphSearchConfig(
        max_hops=2,
        entity_types=["function"],
        relationship_types=["calls"],
        hop_decay=[1.0, 0.8, 0.6],
        max_seeds=20,
        max_visited=100,
        community_boost=0.25,
    )
    plain = hit_score(hit, 1.0, settings, same_community=False)
    assert plain == 0.8
    assert hit_score(hit, 1.0, settings, same_community=True) == 0.8 * 1.25
    # communities off: the boost is not applied
    off = settings.model_copy(update={"include_communities": False})
    assert hit_score(hit, 1.0, off, same_community=True) == plain
