"""The graph leg's community boost on a hit's score."""

from __future__ import annotations

from services.graph.search import GraphSettings, hit_score
from tribrid.graphstore.base import TraversalHit
from tribrid.models import Entity


def test_community_boost_scales_a_graph_hit() -> None:
    entity = Entity("e", "c", "function", "f", "m.f", "m.py", 1, 2, "chunk")
    hit = TraversalHit(entity, 1, "seed", ("calls",), ("seed", "e"), 1)
    settings = GraphSettings(2, ["function"], ["calls"], (1.0, 0.8, 0.6), 20, 100, community_boost=0.25)
    plain = hit_score(hit, 1.0, settings, same_community=False)
    assert plain == 0.8
    assert hit_score(hit, 1.0, settings, same_community=True) == 0.8 * 1.25
