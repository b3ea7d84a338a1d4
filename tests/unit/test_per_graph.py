"""The graph service's per-graph cache of loaded snapshots (services.graph.per_graph): one load per
graph and life, shared by concurrent callers, started without waiting, and retried after a failure."""

from __future__ import annotations

import asyncio

import pytest

from services.graph.per_graph import PerGraph


async def test_per_graph_loads_once_per_key_and_life_and_retries_failures() -> None:
    loads: list[str] = []
    cache: PerGraph[str] = PerGraph(max_graphs=2)

    async def load(value: str) -> str:
        loads.append(value)
        await asyncio.sleep(0)
        if value == "bad":
            raise RuntimeError("store down")
        return value

    together = await asyncio.gather(*(cache.get("k@g1", "life-1", lambda: load("one")) for _ in range(3)))
    assert together == ["one"] * 3 and loads == ["one"]  # concurrent callers share one load
    assert await cache.get("k@g1", "life-2", lambda: load("two")) == "two"  # a new life loads anew
    for _ in range(2):
        with pytest.raises(RuntimeError):
            await cache.get("k@g2", "life-1", lambda: load("bad"))
    assert loads == ["one", "two", "bad", "bad"]  # a failed load is not kept
    assert await cache.get("k@g1", "life-2", lambda: load("again")) == "two"


async def test_per_graph_ready_starts_the_load_without_waiting_for_it() -> None:
    release = asyncio.Event()
    loads: list[str] = []
    cache: PerGraph[str] = PerGraph(max_graphs=2)

    async def load() -> str:
        loads.append("snapshot")
        await release.wait()
        return "snapshot"

    assert cache.ready("k@g1", "life-1", load) is None  # started, not done: the caller goes on
    await asyncio.sleep(0)
    assert cache.ready("k@g1", "life-1", load) is None and loads == ["snapshot"]  # one load
    release.set()
    assert await cache.get("k@g1", "life-1", load) == "snapshot"
    assert cache.ready("k@g1", "life-1", load) == "snapshot" and loads == ["snapshot"]


async def test_per_graph_ready_reports_a_failed_load_and_retries_it(caplog: pytest.LogCaptureFixture) -> None:
    attempts: list[int] = []
    cache: PerGraph[str] = PerGraph(max_graphs=2)

    async def load() -> str:
        attempts.append(len(attempts))
        if len(attempts) == 1:
            raise RuntimeError("store down")
        return "snapshot"

    assert cache.ready("k@g1", "life-1", load) is None
    await asyncio.sleep(0.01)  # the load fails in the background: nobody awaits it
    assert "loading graph k@g1 failed: RuntimeError('store down')" in caplog.text
    assert cache.ready("k@g1", "life-1", load) is None  # a failed load is started again
    await asyncio.sleep(0.01)
    assert cache.ready("k@g1", "life-1", load) == "snapshot" and attempts == [0, 1]
