"""What the graph leg derives from a committed graph generation, kept per graph.

A committed generation's graph never changes, so what is read from it once holds until the corpus
moves on to the next generation. A corpus deleted and indexed again reuses its graph keys: entries
are keyed by the key and the corpus's life (`stores.postgres.corpus_version`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from cachetools import LRUCache

T = TypeVar("T")

log = logging.getLogger(__name__)


class PerGraph(Generic[T]):
    """(graph key, corpus life) -> one loaded value, for the `max_graphs` most recently used."""

    def __init__(self, max_graphs: int) -> None:
        self._loaded: LRUCache[tuple[str, str], asyncio.Task[T]] = LRUCache(maxsize=max_graphs)

    async def get(self, key: str, life: str, load: Callable[[], Awaitable[T]]) -> T:
        """The value for this graph, loaded by `load` the first time (or again after a failed load)."""
        # A caller that gives up (cancelled) must not cancel the load the others wait for.
        return await asyncio.shield(self._load(key, life, load))

    def ready(self, key: str, life: str, load: Callable[[], Awaitable[T]]) -> T | None:
        """The value for this graph if it is loaded; else None, with the load started (once)."""
        task = self._load(key, life, load)
        if task.done() and not task.cancelled() and task.exception() is None:
            return task.result()
        return None

    def _load(self, key: str, life: str, load: Callable[[], Awaitable[T]]) -> asyncio.Task[T]:
        task = self._loaded.get((key, life))
        if task is None or (task.done() and (task.cancelled() or task.exception() is not None)):
            # One load per graph, shared by the requests that arrive while it runs.
            task = asyncio.get_running_loop().create_task(_await(load()), name=f"loading graph {key}")
            # A load nobody awaits (`ready` callers don't) still has its error looked at, once.
            task.add_done_callback(_report_failure)
            self._loaded[(key, life)] = task  # the least recently used graph goes
        return task


async def _await(value: Awaitable[T]) -> T:
    return await value


def _report_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("%s failed: %r (retried on next use)", task.get_name(), task.exception())
