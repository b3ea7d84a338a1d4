"""What every service shares: configuration and code-aware tokens (health and reflection:
tests/integration/test_platform_health.py; graceful shutdown: tests/e2e/test_platform_sigterm.py)."""

from __future__ import annotations

import os

import pytest

from tribrid.config import ConfigError, TriBridConfig, load_config
from tribrid.text import query_terms, tokenize


def test_config_defaults_follow_the_design() -> None:
    cfg = load_config()
    assert cfg.fusion.rrf_k == 60
    assert {leg: s.weight for leg, s in cfg.fusion.legs.items()} == {
        "vector": 0.4,
        "sparse": 0.3,
        "graph": 0.3,
    }
    assert cfg.graph.max_hops == 2 and cfg.graph.top_k == 30
    assert (cfg.sparse.bm25_k1, cfg.sparse.bm25_b) == (1.2, 0.6)
    assert cfg.graph.entity_types == ["function", "class", "module", "variable", "import"]
    assert cfg.graph.relationship_types == ["calls", "imports", "inherits", "contains", "references"]


def test_config_keeps_the_weights_as_written() -> None:
    """Weights are normalized where they are used, not overwritten in the config."""
    cfg = load_config(fusion={"legs": {"vector": {"weight": 2}, "sparse": {"weight": 1}}})
    assert {leg: s.weight for leg, s in cfg.fusion.legs.items()} == {"vector": 2, "sparse": 1}
    assert cfg.fusion.leg("graph").weight == 1.0 and cfg.fusion.leg("graph").enabled


@pytest.mark.parametrize(
    ("fusion", "message"),
    [
        (
            {"legs": {"vectr": {"weight": 1}}},
            "fusion.legs: unknown legs ['vectr']; the legs are vector, sparse, graph",
        ),
        (
            {"legs": {leg: {"enabled": False} for leg in ("vector", "sparse", "graph")}},
            "every leg is disabled",
        ),
        ({"legs": {"vector": {"weight": 0}, "sparse": {"weight": 0}, "graph": {"weight": 0}}}, "sum to 0"),
        ({"query_kind_weights": {"natural": {"sparse": -1}}}, "greater than or equal to 0"),
    ],
)
def test_bad_fusion_config_names_the_field(fusion: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as excinfo:
        load_config(fusion=fusion)
    assert message in str(excinfo.value)


def test_invalid_config_names_field_and_range(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIBRID_GRAPH__MAX_HOPS", "9")
    with pytest.raises(ConfigError) as excinfo:
        load_config()
    assert "graph.max_hops" in str(excinfo.value)
    assert "le=5" in str(excinfo.value)


def test_config_from_toml_file(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    path = os.path.join(str(tmp_path), "tribrid.toml")
    with open(path, "w") as f:
        f.write("[fusion]\nrrf_k = 30\n[graph]\nmax_hops = 3\n")
    monkeypatch.setenv("TRIBRID_CONFIG", path)
    monkeypatch.setenv("TRIBRID_GRAPH__MAX_HOPS", "4")  # the environment wins over the file
    cfg = TriBridConfig()
    assert cfg.fusion.rrf_k == 30
    assert cfg.graph.max_hops == 4


def test_code_aware_tokens() -> None:
    for form in ("parseConfigFile", "parse_config_file", "parse-config-file"):
        assert tokenize(form) == ["parse", "config", "file", "parseconfigfile"]
    assert tokenize("HTTPServer") == ["http", "server", "httpserver"]
    assert query_terms("how does the parser work") == ["parser", "work"]
    assert query_terms("the of and") == []
    assert query_terms("?!") == []
