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
import concurrent.futures
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

    async def load() -> GraphSnapshot:
        store = open_store()
        try:
            return await GraphSnapshot.load(
                store, key, fulltext=fulltext, fulltext_cache_terms=fulltext_cache_terms
            )
        finally:
            await store.close()

    done: concurrent.futures.Future[GraphSnapshot] = concurrent.futures.Future()

    def run() -> None:
        if not done.set_running_or_notify_cancel():  # the caller went away before it started
            return
        try:
            done.set_result(asyncio.run(load()))
        except BaseException as err:  # the awaiting caller's error
            done.set_exception(err)

    # not the loop's executor: its threads are joined at exit, and a stopping service would wait
    threading.Thread(target=run, name=f"graph-load {key}", daemon=True).start()
    return await asyncio.wrap_future(done)
