"""/metrics behind a bearer token (telemetry.metrics_auth): the dedicated metrics token or an admin
token reads it; no token, another token or a search-only token gets 401."""

from __future__ import annotations

import httpx
import pytest

from bench.procstack import free_port
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


def _scrape(port: int, token: str | None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.get(f"http://127.0.0.1:{port}/metrics", headers=headers, timeout=5)


def test_metrics_need_the_metrics_token_or_an_admin_token() -> None:
    cfg = TelemetryConfig(metrics_auth=True, metrics_token_sha256=hash_token("scraper-token"))
    port = free_port()
    server = telemetry.serve_metrics(port, "127.0.0.1", telemetry.metrics_guard(cfg, TOKENS))
    try:
        for token in (None, "search-token", "no-such-token"):
            refused = _scrape(port, token)
            assert refused.status_code == 401, token
            assert "tribrid_" not in refused.text
            assert refused.headers["www-authenticate"].startswith("Bearer")
        for token in ("scraper-token", "admin-token"):
            read = _scrape(port, token)
            assert read.status_code == 200, token
            assert "# HELP tribrid_grpc_requests_total" in read.text
    finally:
        server.shutdown()
        server.server_close()


def test_metrics_are_open_unless_metrics_auth_is_on() -> None:
    assert telemetry.metrics_guard(TelemetryConfig(), TOKENS) is None
    port = free_port()
    server = telemetry.serve_metrics(port, "127.0.0.1", None)
    try:
        assert _scrape(port, None).status_code == 200
    finally:
        server.shutdown()
        server.server_close()


def test_metrics_auth_without_any_accepted_token_refuses_to_start() -> None:
    search_only = AuthConfig(tokens=[TOKENS.tokens[0]])
    with pytest.raises(ValueError, match="metrics_token_sha256 or an auth token with the admin scope"):
        telemetry.metrics_guard(TelemetryConfig(metrics_auth=True), search_only)
    assert telemetry.metrics_guard(TelemetryConfig(metrics_auth=True), TOKENS) is not None
