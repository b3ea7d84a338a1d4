"""The HTTP client of a model endpoint (the generation model, the reranker): shared by the gateway
and the indexer."""

from __future__ import annotations

import httpx

from tribrid.config import ModelEndpoint


def endpoint_client(cfg: ModelEndpoint) -> httpx.AsyncClient:
    """An HTTP client for a model endpoint: its base URL, its timeout, connection retries (never of
    an answer), and its key as a bearer token in the headers only."""
    key = cfg.api_key.get_secret_value()
    return httpx.AsyncClient(
        base_url=cfg.base_url.rstrip("/") + "/",
        timeout=httpx.Timeout(cfg.timeout_s),
        transport=httpx.AsyncHTTPTransport(retries=cfg.max_retries),
        headers={"Authorization": f"Bearer {key}"} if key else {},
    )
