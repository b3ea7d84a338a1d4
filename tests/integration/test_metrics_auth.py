"""/metrics behind a bearer token (telemetry.metrics_auth): the dedicated metrics token or an admin
token reads it; no token, another token or a search-only token gets 401."""

from __future__ import annotations

import httpx

from bench.procstack import free_port
from tests.unit.test_metrics_guard import TOKENS
from tribrid import telemetry
from tribrid.auth import hash_token
from tribrid.config import TelemetryConfig


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
