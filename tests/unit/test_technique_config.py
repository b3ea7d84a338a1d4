"""Query techniques (HyDE, multi-query) in the config and as a request option: what start-up
refuses."""

from __future__ import annotations

import pytest

from tribrid.config import ConfigError, load_config
from tribrid.options import set_option
from tribrid.v1 import common_pb2


def test_techniques_in_config_and_cli() -> None:
    options = common_pb2.SearchOptions()
    set_option(options, "fusion.techniques=hyde,multi_query")
    assert list(options.fusion.techniques) == ["hyde", "multi_query"]
    assert not load_config().generation.configured  # off by default
    cfg = load_config(
        fusion={"techniques": ["multi_query"]}, generation={"base_url": "http://127.0.0.1:1/v1"}
    )
    assert cfg.fusion.techniques == ["multi_query"] and cfg.generation.configured
    # techniques on every request that could never run stop start-up
    with pytest.raises(ConfigError, match=r"needs generation\.base_url"):
        load_config(fusion={"techniques": ["multi_query"]})
    with pytest.raises(ConfigError, match="disables"):
        load_config(
            fusion={"techniques": ["hyde"], "technique_settings": {"hyde": {"enabled": False}}},
            generation={"base_url": "http://127.0.0.1:1/v1"},
        )
    with pytest.raises(ConfigError, match="unknown techniques"):
        load_config(fusion={"techniques": ["step_back"]})
    with pytest.raises(ConfigError, match="num_queries"):
        load_config(fusion={"technique_settings": {"multi_query": {"num_queries": 6}}})
