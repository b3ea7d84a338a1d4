"""The /metrics guard (telemetry.metrics_auth) refuses to start without a token that may read it."""

from __future__ import annotations

import pytest

from tribrid import telemetry
from tribrid.auth import hash_token
from tribrid.config import AuthConfig, TelemetryConfig, TokenConfig

TOKENS = AuthConfig(
    enabled=True,
    tokens=[
        TokenConfig(name="reader", sha256=hash_token("search-token"), scopes=["search"]),
        TokenConfig(name="ops", sha256=hash_token("admin-token"), scopes=["admin"]),
    ],
)


def test_metrics_auth_without_any_accepted_token_refuses_to_start() -> None:
    search_only = AuthConfig(tokens=[TOKENS.tokens[0]])
    with pytest.raises(ValueError, match="metrics_token_sha256 or an auth token with the admin scope"):
        telemetry.metrics_guard(TelemetryConfig(metrics_auth=True), search_only)
    assert telemetry.metrics_guard(TelemetryConfig(metrics_auth=True), TOKENS) is not None
