"""What a service's warm-up loads (a graph leg's snapshots, its question NER) leaves the garbage
collector's passes once every warm-up is done, as what the service built before serving does."""

from __future__ import annotations

import asyncio
import gc
from typing import Any, cast

import pytest

from tribrid import server
from tribrid.server import RunningServer, freeze_when_warm


def _in_oldest_generation(obj: object) -> bool:
    """After a full pass: a live object the collector tracks is there, unless frozen."""
    gc.collect()
    return any(o is obj for o in gc.get_objects(generation=2))


def _server(*warming: asyncio.Task[object]) -> RunningServer:
    return RunningServer(server=cast(Any, None), port=0, health=cast(Any, None), warming=list(warming))


async def test_the_warm_ups_loads_are_frozen_once_every_warm_up_is_done(
    caplog: pytest.LogCaptureFixture,
) -> None:
    release = asyncio.Event()
    loaded: list[list[int]] = []

    async def slow() -> object:
        await release.wait()
        loaded.append([1, 2, 3])
        return None

    async def failing() -> object:
        raise RuntimeError("a corpus's graph could not be read")

    slow_task, failing_task = asyncio.create_task(slow()), asyncio.create_task(failing())
    thresholds = gc.get_threshold()
    freezing = asyncio.create_task(freeze_when_warm([_server(slow_task), _server(failing_task)]))
    try:
        await asyncio.sleep(0.01)
        assert not freezing.done()  # a warm-up still runs: nothing frozen yet
        assert gc.get_threshold()[:2] == thresholds[:2] and gc.get_threshold()[2] > 1000  # no full pass
        release.set()
        await freezing
        assert "a corpus's graph could not be read" in caplog.text  # a warm-up's failure is told
        assert gc.get_threshold() == thresholds
        assert not _in_oldest_generation(loaded[0])  # frozen: in no generation any more
        later: list[int] = [4]
        assert _in_oldest_generation(later)  # what comes after is collected as usual
    finally:
        gc.unfreeze()


async def test_no_warm_up_freezes_at_once() -> None:
    made: list[int] = [1]
    try:
        await asyncio.wait_for(freeze_when_warm([_server()]), timeout=5)
        assert not _in_oldest_generation(made)
    finally:
        gc.unfreeze()


async def test_a_warm_up_that_does_not_end_stops_full_passes_only_for_a_while(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(server, "WARM_UP_UNFROZEN_S", 0.05)
    thresholds = gc.get_threshold()
    hanging = asyncio.create_task(asyncio.Event().wait())
    made: list[int] = [1]
    try:
        warming = _server(cast(asyncio.Task[object], hanging))
        await asyncio.wait_for(server.freeze_when_warm([warming]), timeout=5)
        assert gc.get_threshold() == thresholds  # full passes are back
        assert not _in_oldest_generation(made)  # and what was there is frozen
        assert not hanging.done()  # the warm-up itself goes on
    finally:
        hanging.cancel()
        gc.unfreeze()
