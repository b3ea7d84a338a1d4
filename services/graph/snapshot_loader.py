"""A graph snapshot loaded in a thread of its own, over a store connection of its own.

Loading a 10k-chunk graph parses 1.5 s of CPU worth of store replies. On the loop that answers
searches, each batch's parse held it: searches waited up to 160-180 ms at a time, every batch, for
the 2 s of a load (after each commit, and at the start's warm-up). In a thread, the loop gets the
interpreter back at its switch interval between those parses: 60-80 ms at worst (a single reply's
parse in C), ~2 ms typically (lab, 10k graph, a 5 ms ticker on the loop).

The thread is a daemon, so a stopping service does not wait for a load nobody needs any more.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from services.graph.snapshot import GraphSnapshot
from tribrid.graphstore.base import GraphStore


async def load_apart(
    open_store: Callable[[], GraphStore], key: str, fulltext: GraphStore, fulltext_cache_terms: int
) -> GraphSnapshot:
    """`GraphSnapshot.load` of `key` from a store `open_store` makes for it, in a thread of its own;
    the snapshot sends its fulltext questions to `fulltext` (the caller's store, on the caller's
    loop)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[GraphSnapshot] = loop.create_future()

    async def load() -> GraphSnapshot:
        store = open_store()
        try:
            return await GraphSnapshot.load(
                store, key, fulltext=fulltext, fulltext_cache_terms=fulltext_cache_terms
            )
        finally:
            await store.close()

    def settle(result: GraphSnapshot | None, error: BaseException | None) -> None:
        if done.cancelled():
            return
        if error is None:
            assert result is not None
            done.set_result(result)
        else:
            done.set_exception(error)

    def run() -> None:
        try:
            result, error = asyncio.run(load()), None
        except BaseException as err:  # handed to the awaiting task
            result, error = None, err
        try:
            loop.call_soon_threadsafe(settle, result, error)
        except RuntimeError:  # the caller's loop has closed: nobody waits for it
            pass

    threading.Thread(target=run, name=f"graph-load {key}", daemon=True).start()
    return await done
