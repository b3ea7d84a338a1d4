"""Hedged leg calls: reading a leg's target, and what config refuses."""

from __future__ import annotations

import pytest

from services.fusion.hedging import listed_addresses, name_and_port
from tribrid.config import ConfigError, HedgingConfig, load_config


def test_a_target_lists_its_endpoints_or_names_them() -> None:
    assert listed_addresses("ipv4:127.0.0.1:50061, 127.0.0.1:50161") == ["127.0.0.1:50061", "127.0.0.1:50161"]
    assert listed_addresses("ipv6:[::1]:1,[::1]:2") == ["[::1]:1", "[::1]:2"]
    assert listed_addresses("unix:/run/vector.sock") == ["unix:/run/vector.sock"]
    assert listed_addresses("tribrid-vector:50061") is None
    assert name_and_port("tribrid-vector:50061") == ("tribrid-vector", 50061)
    assert name_and_port("dns:///tribrid-vector.tribrid.svc:50061") == ("tribrid-vector.tribrid.svc", 50061)
    assert name_and_port("[::1]:7") == ("::1", 7)


def test_hedging_config() -> None:
    cfg = load_config()
    assert not cfg.fusion.enable_hedging and cfg.fusion.hedging.percentile == 95.0  # off by default
    with pytest.raises(ValueError, match="min_samples"):
        HedgingConfig(min_samples=50, window=20)
    with pytest.raises(ConfigError, match="percentile"):
        load_config(fusion={"hedging": {"percentile": 30}})
