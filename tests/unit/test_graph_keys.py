"""A graph's key names its corpus and generation."""

from __future__ import annotations

from tribrid.graphstore.base import corpus_of_key, graph_key


def test_graph_keys_name_their_corpus() -> None:
    assert graph_key("shop", 3) == "shop@g3"
    assert corpus_of_key("shop@g3") == "shop"
    assert corpus_of_key("shop") == "shop"
    assert corpus_of_key("odd@gname") == "odd@gname"  # only a numeric suffix is a generation
