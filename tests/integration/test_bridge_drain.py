"""A draining HTTP bridge (SIGTERM's first step) is not ready but still serves."""

from __future__ import annotations

import httpx

from services.bridge.service import start_bridge
from tests.stack import SAMPLE_CORPUS, Stack
from tribrid.v1 import indexer_pb2


async def test_a_draining_bridge_is_not_ready_but_still_serves(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress
) -> None:
    update = {f"{name}_address": f"127.0.0.1:{server.port}" for name, server in stack.servers.items()}
    cfg = stack.cfg.model_copy(update={"services": stack.cfg.services.model_copy(update=update)})
    bridge = await start_bridge(cfg, "127.0.0.1", 0)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{bridge.port}", timeout=30) as http:
            assert (await http.get("/readyz")).status_code == 200
            await bridge.drain()
            assert (await http.get("/readyz")).status_code == 503
            assert (await http.get("/healthz")).status_code == 200
            search = await http.post("/v1/search", json={"corpusId": SAMPLE_CORPUS, "query": "cart total"})
            assert search.status_code == 200 and search.json()["matches"]
    finally:
        await bridge.stop(0)
