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


def _run(p50: float, cpu: float, by_process: dict[str, float], errors: int = 0) -> dict[str, object]:
    return {
        "p50_ms": p50,
        "p99_ms": 2 * p50,
        "qps": 1000 / p50,
        "errors": errors,
        "partial": 1,
        "server_cpu_ms_per_query": cpu,
        "server_cpu_ms_by_process": by_process,
    }


def test_the_fused_figures_are_the_medians_of_the_runs() -> None:
    runs = [
        _run(50.0, 12.0, {"vector": 3.0, "graph": 2.0}),
        _run(40.0, 14.0, {"vector": 4.0, "graph": 2.5, "indexer": 0.1}, errors=2),
        _run(60.0, 10.0, {"vector": 2.0, "graph": 3.0}),
    ]
    median = bench_fusion.median_run(runs)
    assert (median["p50_ms"], median["p99_ms"], median["server_cpu_ms_per_query"]) == (50.0, 100.0, 12.0)
    assert median["qps"] == 20.0  # the median run's, not the mean's
    assert (median["errors"], median["partial"]) == (2, 3)
    # a process absent from a run used no CPU in it
    assert median["server_cpu_ms_by_process"] == {"vector": 3.0, "graph": 2.5, "indexer": 0.0}
    assert list(median["server_cpu_ms_by_process"]) == ["vector", "graph", "indexer"]


async def test_each_fused_run_and_each_direct_leg_asks_spellings_of_its_own() -> None:
    base = 7 << 20
    starts = [base + run * bench_fusion._RUN_SPELLINGS for run in range(9)]
    starts += [base + leg * bench_fusion._LEG_SPELLINGS for leg in (1, 2, 3)]
    spelled = [q for start in starts for i, q in enumerate(await asked(800, start)) if i % 2 == 0]
    assert len(set(spelled)) == len(spelled)
