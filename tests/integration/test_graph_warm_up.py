"""A graph leg that starts loads the graphs used last, so their first searches are answered from
memory instead of walking the store while the snapshot loads."""

from __future__ import annotations

from typing import Any, cast

from services.graph.recent_graphs import RecentGraphs
from services.graph.service import GraphServicer
from tests.integration.test_graph_documents import document_corpus
from tests.stack import Stack
from tribrid.graphstore import GraphStore
from tribrid.v1 import common_pb2

QUESTION = "Where is Dell headquartered?"


class CountingStore:
    """The real store, with the names of the calls made to it."""

    def __init__(self, store: GraphStore) -> None:
        self._store = store
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        self.calls.append(name)
        return getattr(self._store, name)


async def test_uses_are_listed_latest_first_written_at_most_once_a_while_and_leave_with_the_corpus(
    stack: Stack,
) -> None:
    pool = await stack.resources.pool()
    recent = RecentGraphs(pool)
    async with document_corpus(stack) as first, document_corpus(stack) as second:
        recent.used(first)
        await recent.drain()
        recent.used(second)
        await recent.drain()
        assert [c for c in await recent.latest(100) if c in (first, second)] == [second, first]
        written = await pool.fetchval("SELECT used_at FROM graph_uses WHERE corpus_id = $1", first)
        recent.used(first)  # within WRITE_EVERY_S of its last write: not written again
        await recent.drain()
        assert await pool.fetchval("SELECT used_at FROM graph_uses WHERE corpus_id = $1", first) == written
        again = RecentGraphs(pool, write_every_s=0)
        again.used(first)
        await again.drain()
        assert [c for c in await recent.latest(100) if c in (first, second)] == [first, second]
    # the corpora were deleted on leaving: their uses went with them
    assert not {first, second} & set(await recent.latest(100))


async def test_a_started_leg_answers_a_graph_used_before_from_memory(
    stack: Stack,
) -> None:
    config, pool = stack.cfg, await stack.resources.pool()
    request = common_pb2.SearchRequest(query=QUESTION, top_k=10)
    async with document_corpus(stack) as corpus_id:
        request.corpus_id = corpus_id
        cold_store = CountingStore(stack.resources.graph())
        cold = GraphServicer(config.graph, config.limits, pool, cast(GraphStore, cold_store))
        cold_answer = await cold.Search(request, None)  # type: ignore[arg-type]  # no context needed
        assert "find_seeds" in cold_store.calls  # the snapshot was still loading: the store answered
        await cold.close()  # its use is written
        writes = RecentGraphs(pool, write_every_s=0)
        writes.used(corpus_id)
        await writes.drain()

        warm_store = CountingStore(stack.resources.graph())
        warm = GraphServicer(config.graph, config.limits, pool, cast(GraphStore, warm_store))
        used_at = "SELECT used_at FROM graph_uses WHERE corpus_id = $1"
        before = await pool.fetchval(used_at, corpus_id)
        warmed = await warm.warm_up()
        assert corpus_id in warmed.graphs
        # loading is no use: a graph nobody searches again leaves the warm-up as others are used
        assert await pool.fetchval(used_at, corpus_id) == before
        warm_store.calls.clear()
        warm_answer = await warm.Search(request, None)  # type: ignore[arg-type]
        searched = {"find_seeds", "relations_of", "entities_in_files"}  # the walk and the name linker
        assert not searched & set(warm_store.calls), warm_store.calls
        assert [(m.chunk_id, m.score) for m in warm_answer.matches] == [
            (m.chunk_id, m.score) for m in cold_answer.matches
        ]
        assert warm_answer.matches
