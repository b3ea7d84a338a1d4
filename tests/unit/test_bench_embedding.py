"""The bench-only embedder (embedding.provider = "bench-random"): refused by config validation
unless the bench switch is set, and, where allowed, deterministic unit vectors per text."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from tribrid.bench_embedding import NAME, BenchRandomEmbedder
from tribrid.config import BENCH_SWITCH_ENV, ConfigError, EmbeddingConfig, TriBridConfig, load_config
from tribrid.embedding import get_embedder


@pytest.fixture
def bench_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(BENCH_SWITCH_ENV, "1")


@pytest.mark.parametrize("switch", [None, "0", "true", "yes"])
def test_refused_outside_the_bench(monkeypatch: pytest.MonkeyPatch, switch: str | None) -> None:
    if switch is None:
        monkeypatch.delenv(BENCH_SWITCH_ENV, raising=False)
    else:
        monkeypatch.setenv(BENCH_SWITCH_ENV, switch)
    with pytest.raises(ValidationError) as caught:
        TriBridConfig(embedding={"provider": "bench-random"})
    errors = caught.value.errors()
    assert [e["loc"] for e in errors] == [("embedding", "provider")]
    assert BENCH_SWITCH_ENV in str(errors[0]["msg"])


def test_refused_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The way a service would get it: TRIBRID_EMBEDDING__PROVIDER, through load_config."""
    monkeypatch.delenv(BENCH_SWITCH_ENV, raising=False)
    monkeypatch.setenv("TRIBRID_EMBEDDING__PROVIDER", "bench-random")
    with pytest.raises(ConfigError, match=r"embedding\.provider: 'bench-random' .*benchmarks only"):
        load_config()


def test_accepted_in_the_bench(bench_switch: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIBRID_EMBEDDING__PROVIDER", "bench-random")
    cfg = load_config()
    assert cfg.embedding.provider == "bench-random"
    embedder = get_embedder(cfg.embedding)
    assert isinstance(embedder, BenchRandomEmbedder)
    assert embedder.name == NAME and "not a model" in embedder.name


async def test_vectors_deterministic_unit_and_distinct(bench_switch: None) -> None:
    embedder = BenchRandomEmbedder(EmbeddingConfig(provider="bench-random"))
    texts = ["def parse_args(argv):", "class Console:", "def parse_args(argv):", ""]
    first = await embedder.embed(texts)
    again = await BenchRandomEmbedder(EmbeddingConfig(provider="bench-random")).embed(texts)
    assert first.shape == (4, 384) and first.dtype == np.float32
    np.testing.assert_array_equal(first, again)  # across instances, as across processes
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(first[0], first[2])
    assert abs(float(first[0] @ first[1])) < 0.3  # distinct texts: near-orthogonal in 384-d
    assert (await embedder.embed([])).shape == (0, 384)
