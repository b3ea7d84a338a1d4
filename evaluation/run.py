"""Run the evaluation sets against every leg's Search RPC and the Fusion gateway.

Indexes the eval corpora through the Indexer service (incremental: unchanged files are skipped),
sends every query of every set to VectorSearch, SparseSearch, GraphSearch and Fusion with top_k 20,
and scores the answers against the ast ground truth (evaluation.metrics). Prints a table and
writes evals/results/eval-<time>.json, eval-latest.json and eval-latest.png.

    make eval                                   # starts stores + services first
    .venv/bin/python -m evaluation.run [--sets docstring identifier] [--legs sparse fusion]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from evaluation import REPO_ROOT, build_sets, doc_sets, lang_sets, unseen_sets
from evaluation.metrics import (
    METRIC_LABELS,
    METRIC_NAMES,
    Matcher,
    QueryScores,
    Span,
    is_match,
    is_strict_match,
    mean_scores,
    score_query,
    span_from,
)
from tribrid.config import TriBridConfig, load_config
from tribrid.legs import LEG_NAMES, LEGS, search_method
from tribrid.v1 import (
    common_pb2,
    fusion_pb2_grpc,
    indexer_pb2,
    indexer_pb2_grpc,
)

RESULTS_DIR = REPO_ROOT / "evals" / "results"
GATEWAY = "fusion"
# What the eval asks: every leg on its own, then the gateway.
SEARCHED = (*LEG_NAMES, GATEWAY)
SET_NAMES = (
    "docstring",
    "structural",
    "identifier",
    *doc_sets.DOC_SET_CORPUS,
    *(f"unseen-{library}" for library in unseen_sets.LIBRARIES),
    *unseen_sets.REWORDED_SETS,
    *unseen_sets.DOCSTRING_SETS,
    *lang_sets.ALL_SET_NAMES,
)
console = Console(width=max(Console().width, 130))

SearchFn = Callable[[common_pb2.SearchRequest], Awaitable[list[common_pb2.ChunkMatch]]]


@dataclass(frozen=True, slots=True)
class EvalQuery:
    id: str
    query: str
    relevant: list[Span]
    tags: list[str]


def load_set(path: Path) -> list[EvalQuery]:
    items: list[EvalQuery] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        obj = json.loads(line)
        items.append(
            EvalQuery(
                str(obj["id"]),
                str(obj["query"]),
                [span_from(r) for r in obj["relevant"]],
                [str(t) for t in obj.get("tags", [])],
            )
        )
    return items


def load_sets(sets_dir: Path, names: list[str]) -> dict[str, tuple[str, list[EvalQuery]]]:
    """Set name -> (corpus id, queries), from the manifest the builder wrote."""
    manifest = json.loads((sets_dir / "manifest.json").read_text())
    return {name: (manifest["sets"][name]["corpus"], load_set(sets_dir / f"{name}.jsonl")) for name in names}


async def ensure_indexed(cfg: TriBridConfig, corpora: dict[str, Path]) -> None:
    """IndexCorpus for each corpus (a no-op beyond hashing when nothing changed)."""
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    async with grpc.aio.insecure_channel(cfg.services.address("indexer")) as channel:
        stub = indexer_pb2_grpc.IndexerStub(channel)
        for corpus, path in corpora.items():
            last = indexer_pb2.IndexProgress()
            with Progress(*columns, console=console, transient=True) as bar:
                task = bar.add_task(f"index {corpus}", total=None)
                request = indexer_pb2.IndexCorpusRequest(corpus_id=corpus, path=str(path.resolve()))
                async for event in stub.IndexCorpus(request):
                    last = event
                    bar.update(
                        task,
                        description=f"index {corpus}: {event.phase}",
                        completed=event.chunks_embedded,
                        total=event.chunks_to_embed or None,
                    )
            console.print(
                f"corpus {corpus}: {last.files_seen} files, {last.chunks_total} chunks "
                f"({last.chunks_embedded} embedded now), generation {last.generation}, {last.elapsed_s:.1f}s"
            )


def _searchers(
    cfg: TriBridConfig, channels: dict[str, grpc.aio.Channel], timeout_s: float
) -> dict[str, SearchFn]:
    searches: dict[str, Any] = {leg.name: search_method(channels[leg.name], leg) for leg in LEGS}
    searches[GATEWAY] = fusion_pb2_grpc.FusionStub(channels[GATEWAY]).Search

    def searcher(search: Any) -> SearchFn:
        async def run(request: common_pb2.SearchRequest) -> list[common_pb2.ChunkMatch]:
            reply = await search(request, timeout=timeout_s)
            return list(reply.matches)

        return run

    return {name: searcher(search) for name, search in searches.items()}


@dataclass
class LegRun:
    scores: list[QueryScores]
    per_query: list[dict[str, Any]]
    errors: dict[str, int]
    latency_ms: list[float]


async def run_leg(
    search: SearchFn,
    corpus: str,
    queries: list[EvalQuery],
    top_k: int,
    concurrency: int,
    progress: Progress,
    label: str,
    strict: Matcher = is_match,
    keep_lists: bool = False,
) -> LegRun:
    task = progress.add_task(label, total=len(queries))
    sem = asyncio.Semaphore(concurrency)
    results: list[tuple[QueryScores, dict[str, Any], str | None, float]] = [None] * len(queries)  # type: ignore[list-item]

    async def one(i: int, q: EvalQuery) -> None:
        async with sem:
            error: str | None = None
            started = time.perf_counter()
            try:
                matches = await search(common_pb2.SearchRequest(corpus_id=corpus, query=q.query, top_k=top_k))
            except grpc.aio.AioRpcError as err:
                matches, error = [], err.code().name
            latency = 1000 * (time.perf_counter() - started)
            hits = [Span(m.file_path, m.start_line, m.end_line) for m in matches]
            scores = score_query(hits, q.relevant, strict=strict)
            detail = {
                "id": q.id,
                **asdict(scores),
                "error": error,
                "top": [f"{h.path}:{h.start_line}-{h.end_line}" for h in hits[:3]],
            }
            if keep_lists:  # the whole ranked list, for re-fusing offline (bench/fusion_lab.py)
                detail["ranked"] = [
                    [m.chunk_id, m.file_path, m.start_line, m.end_line, m.score] for m in matches
                ]
            results[i] = (scores, detail, error, latency)
            progress.advance(task)

    await asyncio.gather(*(one(i, q) for i, q in enumerate(queries)))
    errors: dict[str, int] = {}
    for _, _, error, _ in results:
        if error:
            errors[error] = errors.get(error, 0) + 1
    return LegRun([r[0] for r in results], [r[1] for r in results], errors, [r[3] for r in results])


async def evaluate(
    cfg: TriBridConfig,
    sets: dict[str, tuple[str, list[EvalQuery]]],
    legs: list[str],
    top_k: int,
    concurrency: int,
    timeout_s: float,
    keep_lists: bool = False,
) -> dict[str, dict[str, LegRun]]:
    channels = {name: grpc.aio.insecure_channel(cfg.services.address(name)) for name in SEARCHED}
    try:
        searchers = _searchers(cfg, channels, timeout_s)
        out: dict[str, dict[str, LegRun]] = {}
        columns = (
            TextColumn("{task.description:<24}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
        )
        with Progress(*columns, console=console) as progress:
            for name, (corpus, queries) in sets.items():
                out[name] = {}
                strict = is_strict_match if name in doc_sets.DOC_SET_CORPUS else is_match
                for leg in legs:
                    out[name][leg] = await run_leg(
                        searchers[leg],
                        corpus,
                        queries,
                        top_k,
                        concurrency,
                        progress,
                        f"{name} / {leg}",
                        strict,
                        keep_lists,
                    )
        return out
    finally:
        for channel in channels.values():
            await channel.close()


def summarize(runs: dict[str, dict[str, LegRun]]) -> dict[str, dict[str, dict[str, Any]]]:
    summary: dict[str, dict[str, dict[str, Any]]] = {}
    for name, by_leg in runs.items():
        summary[name] = {}
        for leg, run in by_leg.items():
            lat = sorted(run.latency_ms)
            summary[name][leg] = {
                **mean_scores(run.scores),
                "queries": len(run.scores),
                "errors": run.errors,
                "p50_ms": lat[len(lat) // 2] if lat else 0.0,
            }
    return summary


def by_tag(
    sets: dict[str, tuple[str, list[EvalQuery]]], runs: dict[str, dict[str, LegRun]], depth: int = 1
) -> dict[str, dict[str, dict[str, dict[str, float]]]]:
    """Set -> the query's tags 1..depth joined by "/" -> leg -> means. Depth 1: the sub-kind
    (callers/subclasses/methods); 2: also the phrasing family of the unseen sets (callers/noun)."""
    out: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    for name, (_, queries) in sets.items():
        keys = ["/".join(q.tags[1 : depth + 1]) if len(q.tags) > depth else None for q in queries]
        out[name] = {}
        for key in sorted({k for k in keys if k is not None}):
            picked = [i for i, k in enumerate(keys) if k == key]
            out[name][key] = {
                leg: {**mean_scores(run.scores[i] for i in picked), "queries": float(len(picked))}
                for leg, run in runs[name].items()
            }
    return out


def print_breakdown(
    breakdown: dict[str, dict[str, dict[str, dict[str, float]]]],
    title: str = "MRR@10 / R@10 by query kind",
    metrics: tuple[str, str] = ("mrr10", "recall10"),
    column: str = "set / kind",
) -> None:
    table = Table(title=title)
    table.add_column(column)
    table.add_column("n", justify="right")
    legs = next((list(b) for kinds in breakdown.values() for b in kinds.values()), [])
    for leg in legs:
        table.add_column(leg, justify="right")
    for name, kinds in breakdown.items():
        for kind, by_leg in kinds.items():
            n = int(next(iter(by_leg.values()))["queries"]) if by_leg else 0
            cells = [f"{by_leg[leg][metrics[0]]:.2f} / {by_leg[leg][metrics[1]]:.2f}" for leg in legs]
            table.add_row(f"{name} / {kind}", str(n), *cells)
    console.print(table)


def print_table(summary: dict[str, dict[str, dict[str, Any]]]) -> None:
    table = Table(title="TriBridRAG evaluation (top_k 20; ground truth: ast, tsc, javac, FAQ headings)")
    table.add_column("set")
    table.add_column("leg")
    table.add_column("n", justify="right")
    for metric in METRIC_NAMES:
        table.add_column(METRIC_LABELS[metric], justify="right")
    table.add_column("errors")
    table.add_column("p50 ms", justify="right")
    for name, by_leg in summary.items():
        best = {m: max(v[m] for v in by_leg.values()) for m in METRIC_NAMES if m != "lines10"}
        for leg, values in by_leg.items():
            cells = []
            for metric in METRIC_NAMES:
                text = f"{values[metric]:.1f}" if metric == "lines10" else f"{values[metric]:.3f}"
                if metric in best and values[metric] == best[metric] and values[metric] > 0:
                    text = f"[bold green]{text}[/]"
                cells.append(text)
            errors = ", ".join(f"{k}={v}" for k, v in values["errors"].items()) or "-"
            table.add_row(name, leg, str(values["queries"]), *cells, errors, f"{values['p50_ms']:.0f}")
        table.add_section()
    console.print(table)


def plot(summary: dict[str, dict[str, dict[str, Any]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = [m for m in METRIC_NAMES if m != "lines10"]
    names = list(summary)
    fig, axes = plt.subplots(1, len(names), figsize=(6 * len(names), 4.5), squeeze=False, sharey=True)
    for ax, name in zip(axes[0], names, strict=True):
        legs = list(summary[name])
        width = 0.8 / max(len(legs), 1)
        for j, leg in enumerate(legs):
            xs = [i + (j - (len(legs) - 1) / 2) * width for i in range(len(metrics))]
            values = [summary[name][leg][m] for m in metrics]
            label = f"{leg} ({summary[name][leg]['lines10']:.0f} lines@10)"
            ax.bar(xs, values, width, label=label, color=f"C{SEARCHED.index(leg) % 10}")
        ax.set_xticks(range(len(metrics)), [METRIC_LABELS[m] for m in metrics])
        ax.set_title(f"{name} (n={summary[name][legs[0]]['queries']})")
        ax.set_ylim(0, 1.3)  # headroom for the legend above the bars
        ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8, loc="upper center", ncol=2)
    fig.suptitle("TriBridRAG: per-leg and fused retrieval quality")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sets", nargs="+", choices=SET_NAMES, default=list(SET_NAMES))
    parser.add_argument("--legs", nargs="+", choices=SEARCHED, default=list(SEARCHED))
    parser.add_argument("--sets-dir", type=Path, default=build_sets.SETS_DIR)
    parser.add_argument("--work-dir", type=Path, default=build_sets.WORK_DIR, help="where the corpora live")
    parser.add_argument(
        "--unseen-dir", type=Path, default=unseen_sets.WORK_DIR, help="where the unseen-library corpora live"
    )
    parser.add_argument("--top-k", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=4, help="queries in flight per leg")
    parser.add_argument("--timeout", type=float, default=30.0, help="per-query deadline, seconds")
    parser.add_argument("--no-index", action="store_true", help="skip the IndexCorpus step")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    parser.add_argument(
        "--keep-lists", action="store_true", help="store every leg's whole ranked list per query (fusion lab)"
    )
    args = parser.parse_args()

    cfg = load_config()
    sets = load_sets(args.sets_dir, args.sets)
    needed = {corpus for corpus, _ in sets.values()}
    corpora = build_sets.corpus_dirs(args.work_dir) | doc_sets.corpus_dirs(args.work_dir)
    if any(corpus.startswith("unseen-") for corpus in needed - set(lang_sets.SET_NAMES)):
        corpora |= unseen_sets.corpus_dirs(args.unseen_dir)
    for name in needed & set(unseen_sets.DOCSTRING_SETS):
        corpora[name] = unseen_sets.docstring_corpus_dirs(name, args.unseen_dir)[1]
    if needed & set(lang_sets.SET_NAMES):
        corpora |= lang_sets.corpus_dirs(args.unseen_dir)
    if not args.no_index:
        asyncio.run(ensure_indexed(cfg, {c: p for c, p in corpora.items() if c in needed}))
    started = time.monotonic()
    runs = asyncio.run(
        evaluate(cfg, sets, args.legs, args.top_k, args.concurrency, args.timeout, args.keep_lists)
    )
    summary = summarize(runs)
    breakdown = by_tag(sets, runs)
    phrased = {name: value for name, value in sets.items() if name.startswith("unseen-")}
    by_family = by_tag(phrased, runs, depth=2)
    print_table(summary)
    print_breakdown(breakdown)
    if by_family:
        print_breakdown(
            by_family, "nDCG@10 / R@10 by phrasing family", ("ndcg10", "recall10"), "set / kind / family"
        )

    args.out.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    report = {
        "created": stamp,
        "top_k": args.top_k,
        "elapsed_s": round(time.monotonic() - started, 1),
        "packages": build_sets.versions(),
        "summary": summary,
        "by_kind": breakdown,
        "by_family": by_family,
        "per_query": {
            name: {leg: run.per_query for leg, run in by_leg.items()} for name, by_leg in runs.items()
        },
    }
    text = json.dumps(report, indent=1)
    (args.out / f"eval-{stamp}.json").write_text(text)
    (args.out / "eval-latest.json").write_text(text)
    plot(summary, args.out / "eval-latest.png")
    console.print(f"wrote {args.out / f'eval-{stamp}.json'}, eval-latest.json and eval-latest.png")


if __name__ == "__main__":
    main()
