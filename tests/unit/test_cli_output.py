"""What the CLI prints for a search answer, without running it."""

from __future__ import annotations

from tribrid.v1 import common_pb2, fusion_options_pb2, fusion_pb2, legs_pb2
from tribridctl import cli as cli_module


def test_an_expanded_match_is_marked_with_where_expansion_reached_it_from() -> None:
    found = common_pb2.ChunkMatch(chunk_id="c1", file_path="pole.md", start_line=1, end_line=9, score=0.9)
    found.explain.add(leg=legs_pb2.LEG_VECTOR, rank=1, raw_score=0.71)
    added = common_pb2.ChunkMatch(
        chunk_id="c2", file_path="ship.md", start_line=3, end_line=8, score=0.6, expanded=True
    )
    entry = added.explain.add(leg=legs_pb2.LEG_EXPANSION, rank=1, raw_score=0.8, source="c1")
    entry.graph.path.extend(["c1", "Roald Amundsen", "c2"])
    entry.graph.relationship_types.extend(["mentions", "mentions"])
    entry.graph.edges.add(count=2)
    entry.graph.edges.add(count=1)
    reply = fusion_pb2.FusionSearchResponse(
        matches=[found, added], fusion_method=fusion_options_pb2.FUSION_METHOD_WEIGHTED
    )
    with cli_module.console.capture() as captured:
        cli_module.print_results("who sailed south", reply)
    lines = captured.get().splitlines()
    assert "2+" in next(line for line in lines if "ship.md:3-8" in line)
    assert "+" not in next(line for line in lines if "pole.md:1-9" in line).split("│")[1]
    assert any(line.startswith("+ added by graph expansion") for line in lines)
    assert cli_module.expansion_origin(added, {"c1": 1, "c2": 2}) == (
        "#1 via mentions (count=2) > 'Roald Amundsen' > mentions (count=1) (graph score 0.80)"
    )
