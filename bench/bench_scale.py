"""The scale curve (`make bench-scale`): search latency and throughput at about 10k, 30k and 100k
chunks, each leg's p50 against corpus size, and the peak memory of every service and of the
indexer while it indexes.

Every figure here is measured with pseudo-random embeddings: the bench-only provider
`bench-random` (tribrid/bench_embedding.py) stands in for the model, so 100k chunks index in
minutes instead of hours. Everything else is real (rows, HNSW index, postings, code graph), but
the vector leg's ranking means nothing and no process loads a model: the vector leg's and the
indexer's memory leave the model out, and query embedding costs nothing.

The corpora are real Python code installed in the venv (networkx, rich, click, then sympy,
scipy, scikit-learn, numpy, transformers), files taken in a fixed order until a size's chunk
count is reached, so the sizes nest (10k ⊂ 30k ⊂ 100k). Each size gets a stack of its own
(bench/procstack.py: embedded PostgreSQL and FalkorDB on free ports, one process per service)
under --state-dir/<size>, so the shared HNSW index holds only that corpus; the index is kept
there and a rerun skips indexing (reporting the first run's time and indexer memory).

The sizes are indexed one at a time; then every size's stack serves at once and they are
measured side by side, phase by phase, each phase in four turns taken by the sizes in turn (ABBA),
so a change in the shared machine's load hits every size alike. Per size: fused search through
the gateway at concurrency 1 and 8 (p50, p99, answers/s),
each leg called directly at concurrency 1 (p50, p99), with questions about the smallest corpus's
code (the same question sequence at every size; every other one spelled as never before, as
bench-quick does), after a warm-up and a wait until every process is idle (the graph leg reads a
graph into memory in the background on first use). Then VmHWM (peak RSS) of every service process
and FalkorDB. The steepest leg is the one whose direct p50 grew most from the smallest size to the
largest; the target is fused p50 at concurrency 1 at 100k at most twice the 10k figure.

Prints a table and writes bench/results/bench-scale.json and bench-scale.png.

    make bench-scale [SCALE_SIZES="10k 30k 100k" SCALE_SECONDS=20]
    .venv/bin/python -m bench.bench_scale --sizes 10k --seconds 10
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import itertools
import json
import random
import shutil
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import grpc
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from bench.bench_quick import pct, questions
from bench.load import half_first_sight, respellable
from bench.procstack import SERVICE_NAMES, ProcessStack, stack_config, vm_hwm_mb
from bench.report import write_report
from bench.server_cpu import cpu_by_process, cpu_seconds
from evaluation import REPO_ROOT
from services.indexer.chunker import chunk_file
from services.indexer.walker import SourceFile, walk_corpus
from tribrid.bench_embedding import NAME as EMBEDDER_NAME
from tribrid.config import BENCH_SWITCH_ENV, IndexerConfig
from tribrid.legs import BY_NAME, LEG_NAMES, search_method, source_name
from tribrid.stores import embedded
from tribrid.v1 import common_pb2, fusion_pb2, fusion_pb2_grpc, indexer_pb2, indexer_pb2_grpc

RESULTS = REPO_ROOT / "bench" / "results"
CORPUS = "bench-scale"
# Installed packages in the order their files join the corpus: the first three make (nearly all of)
# `make bench`'s 10,105-chunk corpus; the rest are large code bases of real Python.
SOURCES = ("networkx", "rich", "click", "sympy", "scipy", "sklearn", "numpy", "transformers")
LABEL = "pseudo-random embeddings (bench-random, not a model)"
# The services' environment: the bench switch and the provider it allows, in these processes only.
BENCH_ENV = {BENCH_SWITCH_ENV: "1", "TRIBRID_EMBEDDING__PROVIDER": "bench-random"}
TOP_K = 10
TIMEOUT_S = 30.0
console = Console(width=max(Console().width, 140))


def parse_size(text: str) -> int:
    """'10k' -> 10000, '2500' -> 2500."""
    text = text.strip().lower()
    return int(float(text[:-1]) * 1000) if text.endswith("k") else int(text)


# --- the corpora -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CorpusFile:
    package: str
    path: str  # relative to the package directory
    chunks: int


def package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{name} is not installed: the scale corpora are built from {', '.join(SOURCES)}")
    return Path(next(iter(spec.submodule_search_locations)))


def count_files(target: int, progress: Progress) -> list[CorpusFile]:
    """Python files of SOURCES in order, with their chunk counts as the indexer's chunker makes
    them, until `target` chunks (the indexer will report the same count)."""
    cfg = IndexerConfig()
    files: list[CorpusFile] = []
    total = 0
    task = progress.add_task("chunking the sources", total=target)
    for package in SOURCES:
        for item in walk_corpus(package_dir(package), cfg):
            if total >= target:
                return files
            if isinstance(item, SourceFile) and item.language == "python":
                chunks = len(chunk_file(CORPUS, item, cfg).chunks)
                files.append(CorpusFile(package, item.path, chunks))
                total += chunks
                progress.update(task, completed=min(total, target))
    if total < target:
        raise SystemExit(f"the installed sources give {total} chunks, fewer than {target}")
    return files


def manifest(state_dir: Path, target: int, progress: Progress) -> list[CorpusFile]:
    """The ordered file list (kept in the state dir: chunking 100k chunks takes minutes)."""
    path = state_dir / "manifest.json"
    if path.is_file():
        files = [CorpusFile(**row) for row in json.loads(path.read_text())]
        if sum(f.chunks for f in files) >= target:
            return files
    files = count_files(target, progress)
    state_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([asdict(f) for f in files]))
    return files


def prefix_for(files: list[CorpusFile], target: int) -> list[CorpusFile]:
    """The shortest prefix of `files` with at least `target` chunks: sizes nest."""
    total = 0
    for i, f in enumerate(files):
        total += f.chunks
        if total >= target:
            return files[: i + 1]
    return files


def materialize(files: list[CorpusFile], root: Path) -> Path:
    """Copy the files under root/<package>/<path>: a copy, so the indexed tree does not change
    when the venv does (a rerun would re-index). A marker beside the tree (inside it, the walker
    would index it) says the copy is whole."""
    done = root.with_suffix(".complete")
    if done.is_file():
        return root
    if root.exists():
        shutil.rmtree(root)
    for f in files:
        target = root / f.package / f.path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(package_dir(f.package) / f.path, target)
    done.touch()
    return root


# --- indexing ----------------------------------------------------------------------------------


async def listed_chunks(stack: ProcessStack) -> int | None:
    """The corpus's chunk count if the indexer lists it (a committed index), else None."""
    async with grpc.aio.insecure_channel(stack.address("indexer")) as channel:
        listed = await indexer_pb2_grpc.IndexerStub(channel).ListCorpora(indexer_pb2.ListCorporaRequest())
    return next((c.chunks for c in listed.corpora if c.corpus_id == CORPUS), None)


async def index_corpus(stack: ProcessStack, root: Path, label: str) -> dict[str, Any]:
    """A cold index run with a progress bar; its time, stages and the indexer's peak RSS."""
    last = indexer_pb2.IndexProgress()
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    async with grpc.aio.insecure_channel(stack.address("indexer")) as channel:
        stub = indexer_pb2_grpc.IndexerStub(channel)
        with Progress(*columns, console=console) as progress:
            task = progress.add_task(f"indexing {label}", total=None)
            request = indexer_pb2.IndexCorpusRequest(corpus_id=CORPUS, path=str(root))
            async for event in stub.IndexCorpus(request):
                last = event
                progress.update(task, total=event.chunks_to_embed or None, completed=event.chunks_embedded)
    return {
        "chunks": last.chunks_total,
        "files": last.files_seen,
        "entities": last.entities,
        "relationships": last.relationships,
        "elapsed_s": round(last.elapsed_s, 1),
        "chunks_per_s": round(last.chunks_total / max(last.elapsed_s, 1e-9), 1),
        "stage_seconds": {k: round(v, 1) for k, v in sorted(last.stage_seconds.items())},
        # the indexer was started for this run: its peak is the run's (plus its start-up)
        "indexer_peak_rss_mb": round(vm_hwm_mb(stack.procs["indexer"].pid), 1),
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
    }


async def ensure_index(stack: ProcessStack, root: Path, label: str) -> dict[str, Any]:
    """Index unless the corpus is committed already; the run's record lives in the state dir."""
    record = stack.cfg.state_dir / "index.json"
    await stack.start_serving("indexer")
    try:
        chunks = await listed_chunks(stack)
        if chunks is not None and record.is_file():
            info: dict[str, Any] = json.loads(record.read_text())
            console.print(
                f"{label}: indexed already ({chunks} chunks, {info['elapsed_s']} s on {info['when']})"
            )
            return {**info, "indexed_now": False}
        info = await index_corpus(stack, root, label)
        record.write_text(json.dumps(info, indent=1))
        console.print(
            f"{label}: {info['chunks']} chunks, {info['files']} files in {info['elapsed_s']} s "
            f"({info['chunks_per_s']} chunks/s), indexer peak RSS {info['indexer_peak_rss_mb']:.0f} MiB; "
            "stages s: " + ", ".join(f"{k} {v}" for k, v in info["stage_seconds"].items())
        )
        return {**info, "indexed_now": True}
    finally:
        # not part of the search path: its memory would only crowd the measured services
        stack.stop("indexer")


# --- searching ---------------------------------------------------------------------------------


@dataclass
class Phase:
    what: str  # "fused" or a leg's name
    concurrency: int
    answers: int = 0
    errors: int = 0
    answers_per_s: float = 0.0
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    server_cpu_ms_per_answer: float = 0.0
    # the same by process: each service, "postgresql", "falkordb" (what a slow phase spent on)
    server_cpu_ms_by_process: dict[str, float] = field(default_factory=dict)
    # fused phases: each leg's own latency as the gateway reports it (LegReport.latency_ms), the
    # answers that missed a leg (partial) and, per leg, how often it was not OK (a timeout, mostly)
    legs_in_gateway_p50_ms: dict[str, float] = field(default_factory=dict)
    partial: int = 0
    legs_not_ok: dict[str, int] = field(default_factory=dict)


Ask = Callable[[str], Awaitable[object]]


def count_legs(phase: Phase, reply: fusion_pb2.FusionSearchResponse, leg_ms: dict[str, list[float]]) -> None:
    phase.partial += int(reply.partial)
    for report in reply.legs:
        leg = source_name(report.leg)
        leg_ms.setdefault(leg, []).append(report.latency_ms)
        if report.status != fusion_pb2.LEG_STATUS_OK:
            phase.legs_not_ok[leg] = phase.legs_not_ok.get(leg, 0) + 1


async def settle(roots: list[int], timeout_s: float = 180.0, idle_cpu_s: float = 0.1) -> float:
    """Seconds until these processes stay idle for 2 s: what a first call started in the
    background (the graph leg reads a committed graph into memory on first use) is then done
    and not measured. Gives up after `timeout_s`."""
    started = time.monotonic()
    quiet, before = 0, cpu_seconds(roots)
    while quiet < 2 and time.monotonic() - started < timeout_s:
        await asyncio.sleep(1.0)
        now = cpu_seconds(roots)
        quiet = quiet + 1 if now - before < idle_cpu_s else 0
        before = now
    return round(time.monotonic() - started, 1)


@dataclass
class Slices:
    """What a phase's slices measured so far, summed up in its Phase by `finish`."""

    latencies: list[float] = field(default_factory=list)
    leg_ms: dict[str, list[float]] = field(default_factory=dict)
    cpu_s: dict[str, float] = field(default_factory=dict)  # by process kind
    wall_s: float = 0.0
    asked: int = 0  # the questions asked so far: the next slice goes on from there


async def run_slice(
    phase: Phase,
    slices: Slices,
    ask: Ask,
    mix: list[str],
    seconds: float,
    fresh: int,
    roots: list[int],
    progress: Progress,
) -> None:
    """Ask for `seconds` at the phase's concurrency; request i asks mix[i], every other one in a
    spelling never sent before (its embedding and reading are cached nowhere)."""
    counter = itertools.count(slices.asked)
    respelled = respellable(mix)
    task = progress.add_task(f"{phase.what} x{phase.concurrency}", total=seconds)
    stop_at = time.perf_counter() + seconds

    async def worker() -> None:
        while time.perf_counter() < stop_at:
            i = next(counter)
            query = half_first_sight(mix, respelled, i, fresh)
            started = time.perf_counter()
            try:
                reply = await ask(query)
                slices.latencies.append((time.perf_counter() - started) * 1000)
            except grpc.aio.AioRpcError:
                phase.errors += 1
                continue
            if isinstance(reply, fusion_pb2.FusionSearchResponse):
                count_legs(phase, reply, slices.leg_ms)

    cpu_before = cpu_by_process(roots)
    started = time.perf_counter()
    workers = asyncio.gather(*(worker() for _ in range(phase.concurrency)))
    while not workers.done():
        await asyncio.wait([workers], timeout=0.25)
        progress.update(task, completed=min(seconds, time.perf_counter() - started))
    await workers
    slices.wall_s += time.perf_counter() - started
    for kind, used in cpu_by_process(roots).items():
        slices.cpu_s[kind] = slices.cpu_s.get(kind, 0.0) + used - cpu_before.get(kind, 0.0)
    slices.asked = next(counter)
    progress.remove_task(task)


def finish(phase: Phase, slices: Slices) -> Phase:
    latencies = slices.latencies
    phase.answers = len(latencies)
    phase.answers_per_s = round(phase.answers / max(slices.wall_s, 1e-9), 1)
    phase.p50_ms, phase.p99_ms = round(pct(latencies, 50), 2), round(pct(latencies, 99), 2)
    phase.legs_in_gateway_p50_ms = {leg: round(pct(ms, 50), 2) for leg, ms in sorted(slices.leg_ms.items())}
    answers = max(phase.answers, 1)
    by_process = {kind: 1000 * used / answers for kind, used in slices.cpu_s.items()}
    phase.server_cpu_ms_per_answer = round(sum(by_process.values()), 2)
    ranked = sorted(by_process.items(), key=lambda kv: -kv[1])
    phase.server_cpu_ms_by_process = {kind: round(ms, 2) for kind, ms in ranked}
    return phase


# Each phase's seconds, per size, in this many turns taken by the sizes in turn.
SLICES = 4
# What each size is asked, in order: fused at concurrency 1 and 8, then each leg directly at 1.
PLAN: tuple[tuple[str, int], ...] = (("fused", 1), ("fused", 8), *((leg, 1) for leg in LEG_NAMES))
SEARCHERS = tuple(name for name in SERVICE_NAMES if name != "indexer")


@dataclass
class SizeUnderTest:
    """One size's stack, its index record, and the channels and phases of its measurement."""

    label: str
    stack: ProcessStack
    index: dict[str, Any] = field(default_factory=dict)
    phases: list[Phase] = field(default_factory=list)
    settle_s: list[float] = field(default_factory=list)
    graph_log_from: int = 0  # where this run's part of the graph leg's log begins
    channels: dict[str, grpc.aio.Channel] = field(default_factory=dict)

    def roots(self) -> list[int]:
        """The service processes and the stores: whose CPU an answer costs."""
        stores = [s.pid for s in embedded.status(self.stack.cfg) if s.pid]
        return [p.pid for p in self.stack.procs.values()] + stores

    def asks(self) -> dict[tuple[str, int], Ask]:
        """Each PLAN entry's call; the legs are asked for as many candidates as the gateway asks."""
        cfg = self.stack.cfg
        leg_top_k = min(max(cfg.fusion.final_k, cfg.fusion.candidates_per_leg), cfg.limits.max_top_k)
        self.channels = {name: grpc.aio.insecure_channel(self.stack.address(name)) for name in SEARCHERS}
        fusion = fusion_pb2_grpc.FusionStub(self.channels["fusion"]).Search

        async def fused(query: str) -> object:
            request = common_pb2.SearchRequest(corpus_id=CORPUS, query=query, top_k=TOP_K)
            return await fusion(request, timeout=TIMEOUT_S)

        def direct(leg: str) -> Ask:
            search = search_method(self.channels[leg], BY_NAME[leg])

            async def ask(query: str) -> object:
                request = common_pb2.SearchRequest(corpus_id=CORPUS, query=query, top_k=leg_top_k)
                return await search(request, timeout=TIMEOUT_S)

            return ask

        return {(what, c): fused if what == "fused" else direct(what) for what, c in PLAN}

    def peak_rss_mb(self) -> dict[str, float]:
        rss = {name: round(vm_hwm_mb(self.stack.procs[name].pid), 1) for name in SEARCHERS}
        for store in embedded.status(self.stack.cfg):
            if store.name == "falkordb" and store.pid:  # PostgreSQL is many processes: left out
                rss["falkordb"] = round(vm_hwm_mb(store.pid), 1)
        return rss

    async def close(self) -> None:
        for channel in self.channels.values():
            await channel.close()

    def graph_log(self) -> Path:
        return self.stack.cfg.state_dir / "logs" / "graph.log"

    def graph_load_failures(self) -> list[str]:
        """The graph leg's failed loads of a graph into memory during this run (it then walks
        the graph in FalkorDB, a query per step, and tries again on the next search)."""
        with self.graph_log().open("rb") as log:
            log.seek(self.graph_log_from)
            lines = log.read().decode("utf-8", "replace").splitlines()
        return [line for line in lines if "loading graph" in line and "failed" in line]

    def record(self) -> dict[str, Any]:
        return {
            "size": self.label,
            "chunks": self.index["chunks"],
            "index": self.index,
            "phases": [asdict(p) for p in self.phases],
            "peak_rss_mb": self.peak_rss_mb(),
            "settle_s": self.settle_s,
            "graph_load_failures": self.graph_load_failures(),
            # above graph.snapshot_max_entities the graph leg walks FalkorDB, a query per step,
            # instead of its copy in memory: a step in its latency, not a slope
            "graph_in_memory": self.index["entities"] <= self.stack.cfg.graph.snapshot_max_entities,
        }


async def measure(sizes: list[SizeUnderTest], mix: list[str], seconds: float, warmup_s: float) -> None:
    """Every size side by side, phase by phase, each phase in turns (a change in the shared
    machine's load then hits every size alike), asking every size the same question sequence."""
    asks = {size.label: size.asks() for size in sizes}
    fresh = random.SystemRandom().getrandbits(24) << 20  # spellings no earlier run has sent
    columns = (TextColumn("{task.description:<16}"), BarColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        for size in sizes:  # not measured: pools, plans, each process's first calls, background loads
            for ask in asks[size.label].values():  # every channel connected
                await ask(mix[0])
            for _ in range(2):
                warm = Phase(f"{size.label} warm-up", 2)
                ask = asks[size.label]["fused", 1]
                await run_slice(warm, Slices(), ask, mix, warmup_s, fresh - 10**6, [], progress)
                size.settle_s.append(await settle(size.roots()))
        for what, concurrency in PLAN:
            phases = [Phase(what, concurrency) for _ in sizes]
            measured = [Slices() for _ in sizes]
            # in SLICES turns, the sizes in turn, in ABBA order: a slower minute of the shared
            # machine falls on every size alike, not on the one measured then
            for turn in range(SLICES):
                order = list(range(len(sizes)))
                for i in order if turn % 2 == 0 else order[::-1]:
                    ask = asks[sizes[i].label][what, concurrency]
                    await run_slice(
                        phases[i], measured[i], ask, mix, seconds / SLICES, fresh, sizes[i].roots(), progress
                    )
            for size, phase, slices in zip(sizes, phases, measured, strict=True):
                size.phases.append(finish(phase, slices))
            fresh += 10**6


# --- the whole curve ---------------------------------------------------------------------------


def p50_of(size: dict[str, Any], what: str, concurrency: int = 1) -> float:
    return float(
        next(p["p50_ms"] for p in size["phases"] if p["what"] == what and p["concurrency"] == concurrency)
    )


def summarize(sizes: list[dict[str, Any]]) -> dict[str, Any]:
    """Growth of each p50 from the smallest size to the largest; the steepest leg; the target."""
    first, last = sizes[0], sizes[-1]

    def growth(what: str, concurrency: int = 1) -> float:
        return round(p50_of(last, what, concurrency) / max(p50_of(first, what, concurrency), 1e-9), 2)

    legs = {leg: growth(leg) for leg in LEG_NAMES}

    def in_gateway(size: dict[str, Any], leg: str) -> float:
        fused = next(p for p in size["phases"] if p["what"] == "fused" and p["concurrency"] == 1)
        return float(fused["legs_in_gateway_p50_ms"].get(leg, float("nan")))

    steepest = max(legs, key=lambda leg: legs[leg])
    fused = growth("fused")
    # the target compares 100k with 10k; other size pairs report the ratio alone
    judged = first["size"] == "10k" and last["size"] == "100k"
    return {
        "from": first["size"],
        "to": last["size"],
        "chunks_ratio": round(last["chunks"] / max(first["chunks"], 1), 2),
        "leg_p50_growth": legs,
        "steepest_leg": steepest,
        "leg_in_gateway_p50_growth": {
            leg: round(in_gateway(last, leg) / max(in_gateway(first, leg), 1e-9), 2) for leg in LEG_NAMES
        },
        "fused_c1_p50_growth": fused,
        "fused_c8_p50_growth": growth("fused", 8),
        "target": "fused p50 at concurrency 1: 100k <= 2 x 10k",
        "target_met": (fused <= 2.0) if judged else None,
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    state_dir = Path(args.state_dir)
    labels = sorted(args.sizes, key=parse_size)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        files = manifest(state_dir, parse_size(labels[-1]), progress)
    roots = {
        label: materialize(prefix_for(files, parse_size(label)), state_dir / label / "corpus")
        for label in labels
    }
    # the same questions at every size: about the smallest corpus, which every larger one holds
    mix = questions(roots[labels[0]])
    sizes: list[SizeUnderTest] = []
    try:
        for label in labels:
            cfg = stack_config(state_dir / label / "stack", "tribrid_scale", "tribrid_scale_")
            sizes.append(SizeUnderTest(label, ProcessStack(cfg, env=BENCH_ENV)))
            sizes[-1].stack.stores_up()
            sizes[-1].index = await ensure_index(sizes[-1].stack, roots[label], label)
        console.print(f"starting the search services of {len(sizes)} stacks")
        for size in sizes:
            size.graph_log_from = size.graph_log().stat().st_size if size.graph_log().is_file() else 0
            await size.stack.start_all(SEARCHERS)
        await measure(sizes, mix, args.seconds, args.warmup_seconds)
        records = [size.record() for size in sizes]
    finally:
        for size in sizes:
            await size.close()
            size.stack.stop_all()
            size.stack.stores_down()
    return {
        "created": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "measured_with": LABEL,
        "embedder": EMBEDDER_NAME,
        "sources": list(SOURCES),
        "questions": len(mix),
        "seconds_per_phase": args.seconds,
        "top_k": TOP_K,
        "sizes": records,
        "summary": summarize(records),
    }


def latency(by: dict[tuple[str, int], dict[str, Any]], what: str, concurrency: int = 1) -> str:
    phase = by[what, concurrency]
    return f"{phase['p50_ms']:.1f} / {phase['p99_ms']:.1f}"


def show_size_notes(size: dict[str, Any]) -> None:
    """What explains a size's figures: each leg inside the gateway, the answers that missed a leg,
    the wait for background work before measuring, the graph leg's failed loads."""
    for p in (p for p in size["phases"] if p["what"] == "fused"):
        inside = ", ".join(f"{leg} {ms:.1f}" for leg, ms in p["legs_in_gateway_p50_ms"].items())
        missed = ", ".join(f"{leg} {n}" for leg, n in p["legs_not_ok"].items()) or "none"
        console.print(
            f"{size['size']} fused x{p['concurrency']}: legs inside the gateway p50 ms: {inside}; "
            f"partial answers {p['partial']} of {p['answers']} (legs not OK: {missed}); "
            f"server CPU {p['server_cpu_ms_per_answer']:.1f} ms per answer ("
            + ", ".join(f"{kind} {ms:.1f}" for kind, ms in p.get("server_cpu_ms_by_process", {}).items())
            + ")"
        )
    settled = " then ".join(f"{s:.0f}" for s in size["settle_s"])
    failures = len(size["graph_load_failures"])
    where = "in memory" if size["graph_in_memory"] else "in FalkorDB (over graph.snapshot_max_entities)"
    console.print(
        f"{size['size']}: idle after the warm-ups in {settled} s; graph leg: {size['index']['entities']:,} "
        f"entities walked {where}, {failures} failed load(s) of the graph into memory"
    )


def show(result: dict[str, Any]) -> None:
    title = f"bench-scale, {result['created']}; every figure measured with {result['measured_with']}"
    table = Table(title=title)
    for col in (
        "size",
        "chunks",
        "index s",
        "chunks/s",
        "fused x1 p50/p99",
        "fused x1 /s",
        "fused x8 p50/p99",
        "fused x8 /s",
        *(f"{leg} x1 p50/p99" for leg in LEG_NAMES),
    ):
        table.add_column(col, justify="left" if col == "size" else "right")
    for size in result["sizes"]:
        by = {(p["what"], p["concurrency"]): p for p in size["phases"]}
        lat = partial(latency, by)

        table.add_row(
            size["size"],
            f"{size['chunks']:,}",
            f"{size['index']['elapsed_s']:.0f}",
            f"{size['index']['chunks_per_s']:.0f}",
            lat("fused"),
            f"{by['fused', 1]['answers_per_s']:.1f}",
            lat("fused", 8),
            f"{by['fused', 8]['answers_per_s']:.1f}",
            *(lat(leg) for leg in LEG_NAMES),
        )
    console.print(table)
    rss = Table(
        title="peak RSS, MiB (VmHWM; no process loads a model: the vector leg and the indexer leave it out)"
    )
    names = list(result["sizes"][0]["peak_rss_mb"])
    for col in ("size", *names, "indexer (indexing)"):
        rss.add_column(col, justify="left" if col == "size" else "right")
    for size in result["sizes"]:
        rss.add_row(
            size["size"],
            *(f"{size['peak_rss_mb'].get(n, 0):.0f}" for n in names),
            f"{size['index']['indexer_peak_rss_mb']:.0f}",
        )
    console.print(rss)
    s = result["summary"]
    console.print(
        f"p50 growth {s['from']} -> {s['to']} ({s['chunks_ratio']}x the chunks): "
        + ", ".join(f"{leg} {g}x" for leg, g in s["leg_p50_growth"].items())
        + f"; steepest leg: [bold]{s['steepest_leg']}[/]"
        + f"; fused x1 {s['fused_c1_p50_growth']}x, x8 {s['fused_c8_p50_growth']}x"
    )
    verdict = {True: "[green]met[/]", False: "[red]not met[/]", None: "not judged (needs sizes 10k and 100k)"}
    console.print(f"target, {s['target']}: {verdict[s['target_met']]}")
    for size in result["sizes"]:
        show_size_notes(size)
    for size in result["sizes"]:
        stages = ", ".join(f"{k} {v}" for k, v in size["index"]["stage_seconds"].items())
        console.print(f"index {size['size']}: {size['index']['elapsed_s']} s; stages s: {stages}")


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = result["sizes"]
    chunks = [s["chunks"] for s in sizes]
    fig, (lat, mem) = plt.subplots(1, 2, figsize=(13, 5))
    for what, c in (("fused", 1), ("fused", 8), *((leg, 1) for leg in LEG_NAMES)):
        lat.plot(chunks, [p50_of(s, what, c) for s in sizes], marker="o", label=f"{what} x{c}")
    lat.set_xscale("log")
    lat.set_yscale("log")
    lat.set_xlabel("chunks")
    lat.set_ylabel("p50 ms")
    lat.set_title("p50 against corpus size")
    lat.legend()
    names = [*sizes[0]["peak_rss_mb"], "indexer (indexing)"]
    width = 0.8 / len(sizes)
    for i, s in enumerate(sizes):
        values = [*s["peak_rss_mb"].values(), s["index"]["indexer_peak_rss_mb"]]
        mem.bar([x + i * width for x in range(len(names))], values, width=width, label=s["size"])
    mem.set_xticks([x + width * (len(sizes) - 1) / 2 for x in range(len(names))], names, rotation=15)
    mem.set_ylabel("peak RSS MiB")
    mem.set_title("peak RSS per process")
    mem.legend()
    fig.suptitle(f"make bench-scale, {result['created']}: measured with {result['measured_with']}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sizes", nargs="+", default=["10k", "30k", "100k"], help="chunk counts, e.g. 10k 30k 100k"
    )
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each measured phase")
    parser.add_argument("--warmup-seconds", type=float, default=5.0, help="unmeasured fused questions first")
    parser.add_argument("--state-dir", default="/tmp/tribrid-bench-scale", help="corpora, stores and indexes")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    result = asyncio.run(run(args))
    show(result)
    write_report(args.out, "bench-scale", result, plot, console)


if __name__ == "__main__":
    main()
