"""The benches' first-sight questions (bench/load.py): every other request asks a spelling never
sent before of a question of several words; make bench does so unless --seen-only."""

from __future__ import annotations

import pytest
from rich.progress import Progress

from bench import bench_fusion
from bench.load import half_first_sight, respellable, variant

QUERIES = bench_fusion.QUERIES


async def asked(requests: int, first_sight_from: int | None) -> list[str]:
    seen: list[str] = []

    async def call(query: str) -> str:
        seen.append(query)
        return query

    with Progress(disable=True) as progress:
        latencies, replies, _, errors = await bench_fusion.run_load(
            "fused", call, requests, 1, progress, first_sight_from
        )
    assert len(latencies) == len(replies) == requests and errors == 0
    return seen


async def test_every_other_question_is_seen_for_the_first_time() -> None:
    n = 2 * len(QUERIES)
    first, again = await asked(n, 5 << 20), await asked(n, 6 << 20)
    new = [q for i, q in enumerate(first) if i % 2 == 0]
    assert [q for i, q in enumerate(first) if i % 2] == [QUERIES[i % len(QUERIES)] for i in range(1, n, 2)]
    assert not set(new) & set(QUERIES)  # one-word questions ("BadParameter") have no new spelling
    assert len(set(new)) == len(new)  # each new spelling once
    assert not set(new) & {q for i, q in enumerate(again) if i % 2 == 0}  # nor one an earlier run used
    several = respellable(QUERIES)
    assert "BadParameter" in QUERIES and "BadParameter" not in several and len(several) < len(QUERIES)
    # the same words: a reader or an embedding model sees the same question
    assert [" ".join(q.split()) for q in new] == [several[j % len(several)] for j in range(len(new))]


async def test_seen_only_repeats_the_bench_questions() -> None:
    assert await asked(5, None) == QUERIES[:5]


def test_a_one_word_question_has_no_other_spelling() -> None:
    with pytest.raises(ValueError, match="one word"):
        variant("BadParameter", 3)
    assert variant("who calls echo", 3) != variant("who calls echo", 4)
    assert half_first_sight(["a", "b c"], ["b c"], 1, 0) == "b c"  # odd: the mix in turn
    assert half_first_sight(["a", "b c"], ["b c"], 2, 0).split() == ["b", "c"]
