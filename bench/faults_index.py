"""Kill while indexing: index runs killed at random points, SIGKILL of the indexer process and of
PostgreSQL, each followed by a run to completion; then every consistency count of the corpus
(services/indexer/consistency.py: duplicate or orphan chunks, postings, entities and edges,
PostgreSQL and the graph naming the same chunks, only the committed generation's graph) must be
0, and the corpus must hold what a fresh index of the same tree holds.

Self-contained: embedded stores on free ports under --state-dir. The corpus is the tests' sample
repository plus generated modules; before each killed run some modules are rewritten, one is
added and one removed, so every run has work to do. A run is one `tests.index_worker` process;
the kill lands at a random moment within a random phase of the run: after a random progress event,
a uniform random part of the time that phase took in an uninterrupted run (so the short phases,
graph writing and the commit, are hit as often as embedding). The phase it hit is the last
progress event seen.

Prints a table and writes bench/results/faults_index.json and faults_index.png.

    make faults-index [KILL_POINTS=20]
    .venv/bin/python -m bench.faults_index --points 20 --seed 7
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.procstack import service_env, stack_config
from bench.report import write_report
from evaluation import REPO_ROOT
from services.indexer.consistency import Consistency, check_corpus, falkordb_graph_keys
from services.indexer.pipeline import IndexPipeline
from tribrid.config import TriBridConfig
from tribrid.resources import Resources
from tribrid.stores import embedded
from tribrid.stores.embedded import postgres

RESULTS = REPO_ROOT / "bench" / "results"
SAMPLE_REPO = REPO_ROOT / "tests" / "fixtures" / "sample_repo"
CORPUS = "faults-index"
FRESH = "faults-index-fresh"
MODULES = 24  # generated modules in the tree
REWRITTEN = 6  # of them rewritten before each run
console = Console(width=max(Console().width, 140))


def module_text(n: int, version: int) -> str:
    """A generated module: functions calling each other and the sample shop's code."""
    functions = [
        f"def step_{n}_{i}(x: int) -> int:\n"
        f'    """Step {i} of pipeline {n}, version {version}."""\n'
        f"    return step_{n}_{i - 1}(x) * {i + version} + {n}\n"
        if i
        else f"def step_{n}_0(x: int) -> int:\n    return x + {version}\n"
        for i in range(8)
    ]
    return "from shop.pricing import apply_tax\n\n\n" + "\n\n".join(functions)


def make_tree(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(SAMPLE_REPO, root)
    for n in range(MODULES):
        (root / "shop" / f"generated_{n}.py").write_text(module_text(n, 0))


def change_tree(root: Path, round_no: int, rng: random.Random) -> None:
    """Rewrite some modules, add this round's, drop the one two rounds back."""
    for n in rng.sample(range(MODULES), REWRITTEN):
        (root / "shop" / f"generated_{n}.py").write_text(module_text(n, round_no))
    (root / "shop" / f"round_{round_no}.py").write_text(module_text(1000 + round_no, round_no))
    (root / "shop" / f"round_{round_no - 2}.py").unlink(missing_ok=True)


@dataclass(frozen=True)
class KillRound:
    target: str  # "indexer" or "postgresql"
    event: int  # killed after the run's progress event of this number (0-based)...
    delay_s: float  # ...and this long after it
    phase: str  # the last progress event before the kill
    killed: bool  # False: the run ended before the kill time
    committed: bool  # the killed run had committed its generation
    left_by_kill: dict[str, int]  # the consistency problems before the re-run
    rerun_s: float
    consistency: Consistency  # after the re-run


class Worker:
    """One index run in its own process (`tests.index_worker`), its progress events read as they come."""

    def __init__(self, cfg: TriBridConfig, root: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.index_worker", CORPUS, str(root)],
            env=service_env(cfg),
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.phases: list[str] = []
        # (phase, when it arrived); None once the process closed its output
        self.events: asyncio.Queue[tuple[str, float] | None] = asyncio.Queue()
        self._loop = asyncio.get_running_loop()
        self.reader = asyncio.create_task(asyncio.to_thread(self._read))

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            phase = str(json.loads(line).get("phase", ""))
            self.phases.append(phase)
            self._loop.call_soon_threadsafe(self.events.put_nowait, (phase, time.monotonic()))
        self._loop.call_soon_threadsafe(self.events.put_nowait, None)

    async def event(self, number: int) -> bool:
        """Until the run's event `number` (0-based) has arrived; False if the run ended before it."""
        while len(self.phases) <= number:
            if await self.events.get() is None:
                return len(self.phases) > number
        return True

    async def wait(self, timeout_s: float) -> int:
        try:
            code = await asyncio.wait_for(asyncio.to_thread(self.proc.wait), timeout_s)
        except TimeoutError:
            self.proc.kill()
            code = await asyncio.to_thread(self.proc.wait)
        await self.reader
        return code


async def phase_spans(cfg: TriBridConfig, root: Path) -> list[tuple[str, float]]:
    """An uninterrupted run: each progress event's phase and the time to the next event (or exit)."""
    worker = Worker(cfg, root)
    arrivals: list[tuple[str, float]] = []
    while (item := await worker.events.get()) is not None:
        arrivals.append(item)
    if await worker.wait(300) != 0:
        raise RuntimeError("the uninterrupted index run failed")
    ends = [t for _, t in arrivals[1:]] + [time.monotonic()]
    return [(phase, end - t) for (phase, t), end in zip(arrivals, ends, strict=True)]


async def run_to_completion(cfg: TriBridConfig, root: Path, corpus_id: str = CORPUS) -> float:
    """A run in this process (fresh connections: PostgreSQL may have restarted); its seconds."""
    started = time.monotonic()
    resources = Resources(cfg)
    try:
        pipeline = IndexPipeline(cfg, await resources.pool(), resources.graph(), resources.embedder())
        async for event in pipeline.run(corpus_id, str(root)):
            if event.done:
                break
    finally:
        await resources.close()
    return time.monotonic() - started


async def consistency(cfg: TriBridConfig, corpus_id: str = CORPUS) -> Consistency:
    resources = Resources(cfg)
    try:
        keys = await falkordb_graph_keys(
            cfg.graph_store.falkordb_host, cfg.graph_store.falkordb_port, cfg.graph_store.graph_prefix
        )
        return await check_corpus(await resources.pool(), resources.graph(), corpus_id, keys)
    finally:
        await resources.close()


def kill_postgres(cfg: TriBridConfig) -> None:
    pid = postgres.status(cfg).pid
    if pid is None:
        raise RuntimeError("postgres is not running")
    os.kill(pid, signal.SIGKILL)


def restart_postgres(cfg: TriBridConfig) -> None:
    """Start PostgreSQL again after a SIGKILL: its backends may take a moment to notice and exit."""
    for attempt in range(30):
        try:
            postgres.up(cfg, lambda _: None)
            return
        except Exception:
            if attempt == 29:
                raise
            time.sleep(1)


async def kill_round(
    cfg: TriBridConfig, root: Path, target: str, spans: list[tuple[str, float]], rng: random.Random
) -> KillRound:
    """Kill at a random moment within a random phase: after progress event `event`, a uniform
    random part of the time that phase took in the uninterrupted run."""
    event = rng.randrange(len(spans))
    delay_s = rng.uniform(0, spans[event][1])
    generation_before = (await consistency(cfg)).generation
    worker = Worker(cfg, root)
    await worker.event(event)
    await asyncio.sleep(delay_s)
    killed = worker.proc.poll() is None
    phase = worker.phases[-1] if worker.phases else "starting"
    if killed and target == "indexer":
        worker.proc.send_signal(signal.SIGKILL)
    elif killed:
        await asyncio.to_thread(kill_postgres, cfg)
    await worker.wait(120)
    if killed and target == "postgresql":
        await asyncio.to_thread(restart_postgres, cfg)
    left = await consistency(cfg)
    rerun_s = await run_to_completion(cfg, root)
    return KillRound(
        target,
        event,
        round(delay_s, 3),
        phase,
        killed,
        left.generation > generation_before,
        left.problems(),
        round(rerun_s, 2),
        await consistency(cfg),
    )


async def run(args: argparse.Namespace) -> dict[str, Any]:
    cfg = stack_config(Path(args.state_dir), "tribrid_faults_index", "tribrid_fi_")
    embedded.up(cfg, log=lambda _: None)
    rng = random.Random(args.seed)
    root = Path(args.state_dir) / "tree"
    rounds: list[KillRound] = []
    try:
        make_tree(root)
        console.print(f"first index: {await run_to_completion(cfg, root):.1f} s")
        # An uninterrupted run of the same size as the killed ones: the phases kills are drawn from.
        change_tree(root, 0, rng)
        spans = await phase_spans(cfg, root)
        console.print("an uninterrupted run: " + ", ".join(f"{p} {s:.2f} s" for p, s in spans))
        targets = ["indexer"] * args.points + ["postgresql"] * args.points
        for n, target in enumerate(targets, start=1):
            change_tree(root, n, rng)
            done = await kill_round(cfg, root, target, spans, rng)
            rounds.append(done)
            console.print(
                f"{n:>2} {target:<10} {done.delay_s:5.2f} s after event {done.event}, in {done.phase:<12}"
                f" {'killed' if done.killed else 'ended first'}; left {done.left_by_kill or '-'};"
                f" after the re-run {done.consistency.problems() or 0}"
            )
        fresh_s = await run_to_completion(cfg, root, FRESH)
        final, fresh = await consistency(cfg), await consistency(cfg, FRESH)
    finally:
        embedded.down(cfg, log=lambda _: None)
    same = {
        what: (getattr(final, what), getattr(fresh, what)) for what in ("chunks", "entities", "relations")
    }
    return {
        "created": datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ"),
        "seed": args.seed,
        "uninterrupted_run": [{"phase": p, "s": round(s, 3)} for p, s in spans],
        "fresh_index_s": round(fresh_s, 2),
        "rounds": [{**asdict(r), "consistency": asdict(r.consistency)} for r in rounds],
        "final": asdict(final),
        "matches_fresh_index": {what: {"killed": a, "fresh": b} for what, (a, b) in same.items()},
    }


def show(result: dict[str, Any]) -> None:
    table = Table(title=f"index runs killed at random points (seed {result['seed']}), then run again")
    columns = (
        "killed",
        "points",
        "killed in phase",
        "after its commit",
        "left by the kill",
        "after the re-run",
    )
    for col in columns:
        table.add_column(col, justify="right" if col in ("points", "after its commit") else "left")
    for target in ("indexer", "postgresql"):
        rows = [r for r in result["rounds"] if r["target"] == target]
        phases = Counter(r["phase"] for r in rows if r["killed"])
        problems: Counter[str] = Counter()
        left: Counter[str] = Counter()  # rounds whose kill left each kind of problem
        for r in rows:
            problems.update(Consistency(**r["consistency"]).problems())
            left.update(r["left_by_kill"].keys())
        ended_first = sum(1 for r in rows if not r["killed"])
        table.add_row(
            f"{target} (SIGKILL)",
            str(len(rows)),
            " ".join(f"{p}={n}" for p, n in sorted(phases.items()))
            + (f" (ended first: {ended_first})" if ended_first else ""),
            str(sum(1 for r in rows if r["committed"])),
            " ".join(f"{p} x{n}" for p, n in sorted(left.items())) or "-",
            " ".join(f"{p}={n}" for p, n in sorted(problems.items())) or "0",
        )
    console.print(table)
    counts = Table(title="the corpus after the last re-run, against a fresh index of the same tree")
    for col in ("", "chunks", "entities", "relations"):
        counts.add_column(col, justify="right")
    same = result["matches_fresh_index"]
    counts.add_row(
        "killed and re-run", *(str(same[w]["killed"]) for w in ("chunks", "entities", "relations"))
    )
    counts.add_row("fresh", *(str(same[w]["fresh"]) for w in ("chunks", "entities", "relations")))
    console.print(counts)


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    for target, marker in (("indexer", "o"), ("postgresql", "s")):
        rows = [r for r in result["rounds"] if r["target"] == target]
        ax.scatter(
            [
                r["event"] + r["delay_s"] / max(result["uninterrupted_run"][r["event"]]["s"], 1e-6)
                for r in rows
            ],
            [sum(Consistency(**r["consistency"]).problems().values()) for r in rows],
            marker=marker,
            label=f"{target} killed",
        )
    ax.set_xlabel("kill point: progress event number + fraction of that phase")
    ax.set_ylabel("consistency problems after the re-run")
    ax.set_title("kill while indexing: " + ", ".join(p["phase"] for p in result["uninterrupted_run"]))
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--points", type=int, default=20, help="kill points per target")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--state-dir", default="/tmp/tribrid-bench-faults-index", help="the stores' data")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    result = asyncio.run(run(args))
    show(result)
    write_report(args.out, "faults_index", result, plot, console)


if __name__ == "__main__":
    main()
