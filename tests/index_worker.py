"""Runs one index run in its own process, printing each progress event as a JSON line.

Used by tests that kill an index run part-way (`python -m tests.index_worker CORPUS PATH`), through
`killed_run`.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToJson

from services.indexer.pipeline import IndexPipeline
from tests import REPO_ROOT
from tribrid.config import TriBridConfig, load_config
from tribrid.resources import Resources


def worker_env(cfg: TriBridConfig) -> dict[str, str]:
    """The environment that points a worker at the tests' stores."""
    return {
        **os.environ,
        "TRIBRID_STATE_DIR": str(cfg.state_dir),
        "TRIBRID_POSTGRES__PORT": str(cfg.postgres.port),
        "TRIBRID_POSTGRES__DATABASE": cfg.postgres.database,
        "TRIBRID_GRAPH_STORE__FALKORDB_PORT": str(cfg.graph_store.falkordb_port),
        "TRIBRID_GRAPH_STORE__GRAPH_PREFIX": cfg.graph_store.graph_prefix,
        "TRIBRID_EMBEDDING__NUM_THREADS": "1",
    }


async def killed_run(
    cfg: TriBridConfig,
    corpus_id: str,
    root: Path,
    kill_at: Callable[[dict[str, Any], list[str]], Awaitable[bool]],
    timeout_s: float,
) -> list[str]:
    """An index run in a worker process, SIGKILLed at the first progress event (proto3 JSON) for
    which `kill_at(event, phases so far)` is true; the phases it reported. Fails if the run ends
    by itself."""
    worker = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.index_worker",
        corpus_id,
        str(root),
        cwd=REPO_ROOT,
        env=worker_env(cfg),
        stdout=asyncio.subprocess.PIPE,
    )
    assert worker.stdout is not None
    phases: list[str] = []
    try:
        async with asyncio.timeout(timeout_s):
            while line := await worker.stdout.readline():
                event = json.loads(line)
                phases.append(event["phase"])
                if await kill_at(event, phases):
                    worker.send_signal(signal.SIGKILL)
                    break
    finally:
        if worker.returncode is None:
            worker.kill()
        await worker.wait()
    assert worker.returncode == -signal.SIGKILL, f"the run ended by itself after {phases}"
    return phases


async def main(corpus_id: str, path: str) -> None:
    resources = Resources(load_config())
    try:
        pipeline = IndexPipeline(
            resources.cfg, await resources.pool(), resources.graph(), resources.embedder()
        )
        async for event in pipeline.run(corpus_id, path):
            print(MessageToJson(event, indent=None), flush=True)
    finally:
        await resources.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
