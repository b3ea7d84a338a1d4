"""Index runs killed part-way (SIGKILL of the indexing process) and run again leave no duplicate or
orphan chunks, postings, entities or edges, and PostgreSQL and the graph agree (the long run with
20 random kill points, of PostgreSQL too, is `make faults-index`)."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from services.indexer.consistency import Consistency, check_corpus, falkordb_graph_keys
from tests.index_worker import killed_run
from tests.stack import FIXTURE_REPO, Stack, index_corpus
from tribrid.graphstore.base import graph_key
from tribrid.models import Entity
from tribrid.v1 import indexer_pb2, indexer_pb2_grpc

# corpus -> (the phase, and which of its events) the run is killed at
KILL_POINTS = {
    "kill-embedding": ("embedding", 2),  # the first batch embedded, its rows on their way
    "kill-graph": ("graph", 1),  # writing the next generation's graph
    "kill-writing": ("writing", 1),  # committing, or just committed
}


def write_modules(root: Path, version: int) -> None:
    for n in range(3):
        body = "\n\n".join(
            f"def step_{n}_{i}(x: int) -> int:\n    return step_{n}_{i - 1}(x) + {version}"
            if i
            else f"def step_{n}_0(x: int) -> int:\n    return x * {version}"
            for i in range(4)
        )
        (root / "shop" / f"steps_{n}.py").write_text(f"from shop.pricing import apply_tax\n\n\n{body}\n")


async def consistency(stack: Stack, corpus_id: str) -> Consistency:
    store_cfg = stack.cfg.graph_store
    keys = await falkordb_graph_keys(store_cfg.falkordb_host, store_cfg.falkordb_port, store_cfg.graph_prefix)
    return await check_corpus(await stack.resources.pool(), stack.resources.graph(), corpus_id, keys)


async def delete(stack: Stack, *corpora: str) -> None:
    async with stack.channel("indexer") as channel:
        for corpus_id in corpora:
            await indexer_pb2_grpc.IndexerStub(channel).DeleteCorpus(
                indexer_pb2.DeleteCorpusRequest(corpus_id=corpus_id)
            )


def at_nth(phase: str, nth: int) -> Callable[[dict[str, Any], list[str]], Awaitable[bool]]:
    """Kill when the `nth` event of `phase` arrives."""

    async def kill_at(event: dict[str, Any], phases: list[str]) -> bool:
        return phases.count(phase) == nth

    return kill_at


async def test_runs_killed_then_rerun_leave_the_stores_consistent(stack: Stack, tmp_path: Path) -> None:
    await delete(stack, *KILL_POINTS)
    roots = {}
    for corpus_id in KILL_POINTS:
        roots[corpus_id] = tmp_path / corpus_id
        shutil.copytree(FIXTURE_REPO, roots[corpus_id])
        write_modules(roots[corpus_id], 1)
        await index_corpus(stack, corpus_id, roots[corpus_id])
        write_modules(roots[corpus_id], 2)  # the killed run has work to do

    # The three runs at once (their process start-up is most of their time), each killed at its point.
    reported = await asyncio.gather(
        *(
            killed_run(stack.cfg, c, roots[c], at_nth(phase, nth), 120)
            for c, (phase, nth) in KILL_POINTS.items()
        )
    )
    for (phase, _), phases in zip(KILL_POINTS.values(), reported, strict=True):
        assert phases[-1] == phase

    for corpus_id, root in roots.items():
        progress = await index_corpus(stack, corpus_id, root)
        assert progress.done
        found = await consistency(stack, corpus_id)
        assert found.problems() == {}, corpus_id
        assert (found.chunks, found.entities, found.relations) == (
            progress.chunks_total,
            progress.entities,
            progress.relationships,
        )
        assert found.entities > 0 and found.relations > 0
    await delete(stack, *KILL_POINTS)


async def test_a_leftover_graph_generation_is_found_and_dropped_by_an_unchanged_rerun(
    stack: Stack, tmp_path: Path
) -> None:
    corpus_id = "kill-leftover-graph"
    await delete(stack, corpus_id)
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE_REPO, root)
    write_modules(root, 1)
    await index_corpus(stack, corpus_id, root)
    write_modules(root, 2)
    done = await index_corpus(stack, corpus_id, root)
    assert (await consistency(stack, corpus_id)).problems() == {}

    # What a run killed between its commit and dropping the previous graph leaves behind.
    junk = Entity("junk", corpus_id, "function", "junk", "junk", "junk.py", 1, 1, "no-such-chunk")
    await stack.resources.graph().upsert_entities(graph_key(corpus_id, done.generation - 1), [junk])
    assert (await consistency(stack, corpus_id)).problems() == {"stale_graphs": 1}

    again = await index_corpus(stack, corpus_id, root)
    assert again.message == "unchanged" and again.generation == done.generation
    assert (await consistency(stack, corpus_id)).problems() == {}
    await delete(stack, corpus_id)


async def test_the_check_counts_what_does_not_belong(stack: Stack, tmp_path: Path) -> None:
    corpus_id = "kill-check"
    await delete(stack, corpus_id)
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE_REPO, root)
    done = await index_corpus(stack, corpus_id, root)
    before = await consistency(stack, corpus_id)
    assert before.problems() == {} and before.chunks == done.chunks_total > 0

    key = graph_key(corpus_id, done.generation)
    orphan = Entity("orphan", corpus_id, "function", "orphan", "orphan", "gone.py", 1, 1, "no-such-chunk")
    await stack.resources.graph().upsert_entities(key, [orphan])
    pool = await stack.resources.pool()
    # a committed chunk row twice (under an older generation) and a hidden one of the next generation
    for generation in (0, done.generation + 1):
        await pool.execute(
            "INSERT INTO chunks SELECT corpus_id, chunk_id, file_path, start_line, end_line, language, kind,"
            " symbol, content, embedding, tsv, term_count, $2, embed_hash, document_title, section,"
            " page_start, page_end FROM chunks WHERE corpus_id = $1 ORDER BY chunk_id LIMIT 1",
            corpus_id,
            generation,
        )
    found = await consistency(stack, corpus_id)
    assert found.problems() == {
        "duplicate_chunks": 1,
        "uncommitted_chunks": 1,
        "chunk_count_mismatch": 1,
        "entities_without_chunk": 1,
        "entities_without_file": 1,
    }
    await delete(stack, corpus_id)
