"""Runs one index run in its own process, printing each progress event as a JSON line.

Used by tests that kill an index run part-way (`python -m tests.index_worker CORPUS PATH`).
"""

from __future__ import annotations

import asyncio
import sys

from google.protobuf.json_format import MessageToJson

from services.indexer.pipeline import IndexPipeline
from tribrid.config import load_config
from tribrid.serve import Resources


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
