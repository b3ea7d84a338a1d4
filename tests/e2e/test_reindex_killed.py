"""An index run killed (SIGKILL, in a worker process) while its next generation is half written
leaves the previous generation whole for searches, and a re-run completes it."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

from tests.index_worker import killed_run
from tests.integration.test_reindex import _clean_corpora, edit_tree, exact_term_stats, index, snapshot
from tests.stack import FIXTURE_REPO, Stack
from tribrid.graphstore.base import graph_key
from tribrid.models import Entity
from tribrid.v1 import common_pb2, sparse_pb2_grpc, vector_pb2_grpc

__all__ = ["_clean_corpora"]  # the autouse fixture: no corpus of an earlier run left


async def test_killed_index_run_leaves_previous_generation_and_rerun_completes(
    stack: Stack, tmp_path: Path
) -> None:
    corpus_id = "reindex-kill"
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE_REPO, root)
    await index(stack, stack.resources.embedder(), corpus_id, root)
    before = await snapshot(stack, corpus_id)
    before_stats = await exact_term_stats(stack, corpus_id)

    # Enough new code that embedding takes a while; the worker is killed during it.
    edit_tree(root)
    for n in range(60):
        body = "\n\n".join(f"def helper_{n}_{i}(x: int) -> int:\n    return x * {i} + {n}" for i in range(12))
        (root / "shop" / f"generated_{n}.py").write_text(body + "\n")

    async def after_first_batch(event: dict[str, Any], phases: list[str]) -> bool:
        # Killed once its first embedded batch is in PostgreSQL, hidden as the next generation.
        if event["phase"] == "embedding" and event.get("chunksEmbedded", 0) > 0:
            await wait_for_hidden_rows(stack, corpus_id, before.generation)
            return True
        return False

    await killed_run(stack.cfg, corpus_id, root, after_first_batch, 240)

    # A half-built next generation in the graph, as a run killed while writing it would leave.
    store = stack.resources.graph()
    junk = graph_key(corpus_id, before.generation + 1)
    await store.upsert_entities(
        junk, [Entity("junk", corpus_id, "function", "junk", "junk", "junk.py", 1, 1, "")]
    )

    # The previous generation is what searches see, whole and without duplicates.
    assert await hidden_rows(stack, corpus_id, before.generation) > 0
    for leg, stub_class in (
        ("vector", vector_pb2_grpc.VectorSearchStub),
        ("sparse", sparse_pb2_grpc.SparseSearchStub),
    ):
        async with stack.channel(leg) as channel:
            reply = await stub_class(channel).Search(
                common_pb2.SearchRequest(corpus_id=corpus_id, query="helper_0_3 generated", top_k=50),
                timeout=30,
            )
        paths = {m.file_path for m in reply.matches}
        assert reply.matches and not any(p.startswith("shop/generated_") for p in paths), (leg, paths)
    middle = await snapshot(stack, corpus_id)
    assert middle.generation == before.generation
    assert middle.chunks == before.chunks
    assert middle.entities == before.entities
    assert middle.relations == before.relations
    assert middle.counts == before.counts
    assert await exact_term_stats(stack, corpus_id) == before_stats  # hidden rows count for nothing

    # A re-run finishes the job: same result as a fresh index of the tree, junk discarded.
    progress = await index(stack, stack.resources.embedder(), corpus_id, root)
    assert progress.generation == before.generation + 1
    done = await snapshot(stack, corpus_id)
    assert "junk" not in done.entities
    assert ("shop.orders.order_total", "calls", "shop.pricing.apply_tax") in done.relations
    assert sum(1 for path, *_r in done.chunks.values() if path.startswith("shop/generated_")) == 60 * 12
    # The killed run's rows were discarded, not merged: every row is now visible, once.
    pool = await stack.resources.pool()
    assert await pool.fetchval("SELECT count(*) FROM chunks WHERE corpus_id = $1", corpus_id) == len(
        done.chunks
    )
    assert await hidden_rows(stack, corpus_id, done.generation) == 0
    assert (await exact_term_stats(stack, corpus_id))["helper"] >= 60 * 12  # each generated function


async def hidden_rows(stack: Stack, corpus_id: str, generation: int) -> int:
    """Chunk rows written for a generation after `generation`, which searches must not see."""
    pool = await stack.resources.pool()
    count: int = await pool.fetchval(
        "SELECT count(*) FROM chunks WHERE corpus_id = $1 AND generation > $2", corpus_id, generation
    )
    return count


async def wait_for_hidden_rows(stack: Stack, corpus_id: str, generation: int) -> None:
    for _ in range(1200):  # up to a minute
        if await hidden_rows(stack, corpus_id, generation) > 0:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the index run wrote no rows of its next generation within a minute")
