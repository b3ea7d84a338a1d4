"""The per-version snapshot cache: a read that fails leaves the searches to PostgreSQL and is not
tried again on every search; one that races a commit is not kept; the budget drops the least
recently searched corpus first. The store's own behaviour: tests/integration/test_*_in_memory.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import asyncpg

from tribrid.stores import small_corpora
from tribrid.stores.corpus_versions import CorpusVersions, Version
from tribrid.stores.small_corpora import Limits, SmallCorpora, TooLarge


@dataclass(frozen=True)
class Read:
    version: Version
    nbytes: int


class Versions:
    """The committed versions, as CorpusVersions would report them."""

    def __init__(self) -> None:
        self.now: dict[str, Version] = {}

    async def get(self, corpus_id: str) -> Version:
        return self.now.get(corpus_id)


class Store:
    """What the loader reads: a snapshot of `size` bytes at the version it says, or a fault."""

    def __init__(self, versions: Versions) -> None:
        self.versions = versions
        self.size: dict[str, int] = {}
        self.fail = False
        self.calls = 0

    async def load(self, pool: asyncpg.Pool, corpus_id: str, limits: Limits) -> Read | TooLarge | None:
        self.calls += 1
        if self.fail:
            raise OSError("connection refused")
        version = self.versions.now.get(corpus_id)
        if version is None:
            return None
        if self.size[corpus_id] > limits.max_rows:
            return TooLarge(version)
        return Read(version, self.size[corpus_id])


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def cache(budget: int = 1000, clock: Clock | None = None) -> tuple[SmallCorpora[Read], Versions, Store]:
    versions = Versions()
    store = Store(versions)
    kept = SmallCorpora(
        cast(Any, None), cast(CorpusVersions, versions), 500, budget, store.load, clock or Clock()
    )
    return kept, versions, store


async def test_a_failed_read_is_retried_only_after_a_while() -> None:
    clock = Clock()
    kept, versions, store = cache(clock=clock)
    versions.now["a"], store.size["a"] = (1, "life"), 100
    store.fail = True
    assert await kept.ready("a") is None
    assert await kept.ready("a") is None and store.calls == 1  # not read again at once
    store.fail = False
    clock.now += small_corpora.RETRY_S - 1
    assert await kept.ready("a") is None and store.calls == 1  # not yet
    clock.now += 2
    found = await kept.ready("a")
    assert found == Read((1, "life"), 100) and store.calls == 2


async def test_a_new_version_is_read_and_a_read_that_raced_a_commit_is_not_kept() -> None:
    kept, versions, store = cache()
    versions.now["a"], store.size["a"] = (1, "life"), 100
    assert await kept.get("a") is None  # the first search does not wait: PostgreSQL answers it
    assert await kept.ready("a") == Read((1, "life"), 100)
    versions.now["a"] = (2, "life")
    assert await kept.ready("a") == Read((2, "life"), 100) and store.calls == 2

    async def racing(pool: asyncpg.Pool, corpus_id: str, limits: Limits) -> Read:
        versions.now[corpus_id] = (4, "life")  # committed before the snapshot was read: it is 4's
        return Read((4, "life"), 100)

    versions.now["a"] = (3, "life")
    kept._read = racing
    assert await kept.ready("a") is None  # asked for 3, read 4: not kept as 3
    kept._read = store.load
    assert await kept.ready("a") == Read((4, "life"), 100)


async def test_the_budget_drops_the_least_recently_searched_first() -> None:
    kept, versions, store = cache(budget=250)
    for corpus in "abc":
        versions.now[corpus], store.size[corpus] = (1, corpus), 100
    assert await kept.ready("a") and await kept.ready("b")
    assert await kept.ready("a")  # a searched after b
    assert await kept.ready("c")  # 300 bytes: b goes
    assert kept.kept_bytes == 200 and store.calls == 3
    assert await kept.get("a") and await kept.get("c") and store.calls == 3
    assert await kept.ready("b") and store.calls == 4
    # larger than the budget, or than the leg takes: never kept, never waited for
    versions.now["big"], store.size["big"] = (1, "big"), 300
    versions.now["huge"], store.size["huge"] = (1, "huge"), 501
    assert await kept.ready("big") is None and await kept.ready("huge") is None
    assert await kept.ready("nowhere") is None
