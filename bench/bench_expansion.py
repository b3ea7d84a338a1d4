"""Graph expansion on the document eval sets: fused with and without the expansion stage.

For each document set of evals/sets/manifest.json (faq-perl, faq-sed) every question goes to the
running gateway once per variant:

- `fused`: top_k 20, expansion off: the legs' twenty best, fused (the baseline);
- `fused-top10`: top_k 10, expansion off: what `expansion-append` starts from;
- `expansion-append`: top_k 10 (`--fused-k`), expansion on, appended: the ten fused matches and
  then the expanded ones, so places 11-20 hold expanded passages where the baseline holds the
  legs' 11th to 20th candidates (with top_k 20 an appended answer's top 20 would be the
  baseline's);
- `expansion-interleave`: top_k 20, expansion on, interleaved: expanded passages take places
  among the twenty fused matches, in the top ten too.

Each answer is scored on its first 10 / 20 matches as `make eval` scores the sets (strict and
loose relevance, evaluation.metrics): nDCG@10 and recall@20. A question "changed" when a
relevant answer span is found in the top 10 (or 20) with expansion and not without (gained), or
the other way round (lost); a gain credited to an expanded match is counted apart. Prints a table
and the changed questions, and writes evals/results/expansion-<time>.json, expansion-latest.json
and expansion-latest.png.

    make eval-expansion                        # starts stores + services first
    .venv/bin/python -m bench.bench_expansion [--sets faq-sed] [--placements append] [--no-index]
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
from rich.console import Console
from rich.table import Table

from evaluation import REPO_ROOT, build_sets, doc_sets
from evaluation.metrics import (
    TOLERANCE,
    Matcher,
    Span,
    is_loose_match,
    is_strict_match,
    ndcg_at,
    recall_at,
)
from evaluation.run import EvalQuery, ensure_indexed, load_sets
from tribrid.config import load_config
from tribrid.options import set_option
from tribrid.v1 import common_pb2, fusion_pb2, fusion_pb2_grpc, legs_pb2

RESULTS_DIR = REPO_ROOT / "evals" / "results"
DOC_SETS = tuple(doc_sets.DOC_SET_CORPUS)
PLACEMENTS = ("append", "interleave")
BASELINE = "fused"
console = Console(width=max(Console().width, 130))

SearchFn = Callable[[common_pb2.SearchRequest], Awaitable[fusion_pb2.FusionSearchResponse]]


@dataclass(frozen=True, slots=True)
class Variant:
    name: str
    top_k: int
    # Settings as `tribrid search -o` takes them.
    settings: tuple[str, ...]


def variants(placements: Sequence[str], fused_k: int = 10, scored_k: int = 20) -> list[Variant]:
    """The baseline first, then (for an appended run) the same answer without expansion, and
    one expansion run per placement (see the module docstring)."""
    off = ("fusion.enable_expansion=false",)
    runs = [Variant(BASELINE, scored_k, off)]
    if "append" in placements:
        runs.append(Variant(f"fused-top{fused_k}", fused_k, off))
    for placement in placements:
        top_k = fused_k if placement == "append" else scored_k
        on = ("fusion.enable_expansion=true", f"fusion.expansion_placement={placement}")
        runs.append(Variant(f"expansion-{placement}", top_k, on))
    return runs


@dataclass(frozen=True, slots=True)
class Answer:
    hits: list[Span]
    expanded: list[bool]
    # The call's status code when it failed, or "expansion <status>" when the stage did not answer.
    error: str | None = None


def credits(hits: Sequence[Span], relevant: Sequence[Span], k: int, match: Matcher) -> dict[int, int]:
    """Relevant item index -> the 0-based rank of the hit credited with it within the top k (each
    item to its best-ranked matching hit, each hit to one item: metrics.judge's rule)."""
    used: dict[int, int] = {}
    for rank, hit in enumerate(hits[:k]):
        for i, rel in enumerate(relevant):
            if i not in used and match(hit, rel, TOLERANCE):
                used[i] = rank
                break
    return used


@dataclass(frozen=True, slots=True)
class Scored:
    ndcg10: float
    ndcg10_loose: float
    recall20: float
    recall20_loose: float
    # Strict judgement: relevant item index -> rank of the hit credited with it.
    found10: dict[int, int]
    found20: dict[int, int]
    expanded20: int


def score_answer(answer: Answer, relevant: Sequence[Span], strict: Matcher = is_strict_match) -> Scored:
    n = len(relevant)
    strict20 = credits(answer.hits, relevant, 20, strict)
    loose20 = credits(answer.hits, relevant, 20, is_loose_match)

    def gains(found: dict[int, int], k: int) -> list[bool]:
        ranks = {rank for rank in found.values() if rank < k}
        return [rank in ranks for rank in range(min(len(answer.hits), k))]

    return Scored(
        ndcg10=ndcg_at(gains(strict20, 10), n, 10),
        ndcg10_loose=ndcg_at(gains(loose20, 10), n, 10),
        recall20=recall_at(gains(strict20, 20), n, 20),
        recall20_loose=recall_at(gains(loose20, 20), n, 20),
        found10={i: rank for i, rank in strict20.items() if rank < 10},
        found20=strict20,
        expanded20=sum(answer.expanded[:20]),
    )


@dataclass(frozen=True, slots=True)
class Change:
    """How expansion changed one question's relevant spans in the top 10 and 20 (item indexes)."""

    id: str
    query: str
    gained10: list[int]
    lost10: list[int]
    gained20: list[int]
    lost20: list[int]
    # Gains credited to an expanded match (the rest: fused matches the expansion run reordered).
    gained_by_expanded: list[int]


def change(query: EvalQuery, base: Scored, other: Scored, answer: Answer) -> Change | None:
    """None when the question's found spans are the same in both top 10s and top 20s."""
    gained10 = sorted(set(other.found10) - set(base.found10))
    lost10 = sorted(set(base.found10) - set(other.found10))
    gained20 = sorted(set(other.found20) - set(base.found20))
    lost20 = sorted(set(base.found20) - set(other.found20))
    if not (gained10 or lost10 or gained20 or lost20):
        return None
    by_expanded = sorted(i for i in set(gained10) | set(gained20) if answer.expanded[other.found20[i]])
    return Change(query.id, query.query, gained10, lost10, gained20, lost20, by_expanded)


def summarize(scored: Sequence[Scored], changes: Sequence[Change], errors: dict[str, int]) -> dict[str, Any]:
    """Means over the questions, how many changed, and the failures by kind."""
    n = len(scored)

    def mean(name: str) -> float:
        return sum(float(getattr(s, name)) for s in scored) / n if n else 0.0

    return {
        "queries": n,
        "errors": errors,
        "ndcg10": mean("ndcg10"),
        "ndcg10_loose": mean("ndcg10_loose"),
        "recall20": mean("recall20"),
        "recall20_loose": mean("recall20_loose"),
        "expanded_in_top20": mean("expanded20"),
        "gained10": sum(bool(c.gained10) for c in changes),
        "lost10": sum(bool(c.lost10) for c in changes),
        "gained20": sum(bool(c.gained20) for c in changes),
        "lost20": sum(bool(c.lost20) for c in changes),
        "gained_by_expanded": sum(bool(c.gained_by_expanded) for c in changes),
    }


async def run_variant(
    search: SearchFn, corpus: str, queries: Sequence[EvalQuery], variant: Variant, concurrency: int
) -> list[Answer]:
    """Every question through the gateway with the variant's options, at most `concurrency` at once."""
    sem = asyncio.Semaphore(concurrency)

    async def one(query: EvalQuery) -> Answer:
        request = common_pb2.SearchRequest(corpus_id=corpus, query=query.query, top_k=variant.top_k)
        for setting in variant.settings:
            set_option(request.options, setting)
        async with sem:
            try:
                reply = await search(request)
            except grpc.aio.AioRpcError as err:
                return Answer([], [], err.code().name)
        stage = next((r for r in reply.legs if r.leg == legs_pb2.LEG_EXPANSION), None)
        failed = stage is not None and stage.status != fusion_pb2.LEG_STATUS_OK
        return Answer(
            [Span(m.file_path, m.start_line, m.end_line) for m in reply.matches],
            [m.expanded for m in reply.matches],
            f"expansion {fusion_pb2.LegStatus.Name(stage.status)}" if stage is not None and failed else None,
        )

    return list(await asyncio.gather(*(one(q) for q in queries)))


async def evaluate_set(
    search: SearchFn,
    corpus: str,
    queries: Sequence[EvalQuery],
    runs: Sequence[Variant],
    concurrency: int,
    strict: Matcher = is_strict_match,
) -> dict[str, Any]:
    """One set: per variant its means and (against the baseline, the first variant) its changes."""
    answers = {v.name: await run_variant(search, corpus, queries, v, concurrency) for v in runs}
    scored = {
        name: [score_answer(a, q.relevant, strict) for a, q in zip(ans, queries, strict=True)]
        for name, ans in answers.items()
    }
    base = runs[0].name
    out: dict[str, Any] = {"summary": {}, "changes": {}}
    for name, ans in answers.items():
        changes = []
        if name != base:
            for query, b, s, a in zip(queries, scored[base], scored[name], ans, strict=True):
                found = change(query, b, s, a)
                if found is not None:
                    changes.append(found)
        errors = dict(sorted(Counter(a.error for a in ans if a.error is not None).items()))
        out["summary"][name] = summarize(scored[name], changes, errors)
        out["changes"][name] = [asdict(c) for c in changes]
    return out


def print_table(results: dict[str, dict[str, Any]]) -> None:
    table = Table(title="Graph expansion on the document sets (strict / loose relevance)")
    for column in ("set", "variant", "n", "nDCG@10", "R@20", "expanded@20", "+@10", "-@10", "+@20", "-@20"):
        table.add_column(column, justify="left" if column in ("set", "variant") else "right")
    table.add_column("errors")
    for name, result in results.items():
        for variant, s in result["summary"].items():
            table.add_row(
                name,
                variant,
                str(s["queries"]),
                f"{s['ndcg10']:.3f} / {s['ndcg10_loose']:.3f}",
                f"{s['recall20']:.3f} / {s['recall20_loose']:.3f}",
                f"{s['expanded_in_top20']:.1f}",
                str(s["gained10"]),
                str(s["lost10"]),
                f"{s['gained20']} ({s['gained_by_expanded']} expanded)",
                str(s["lost20"]),
                ", ".join(f"{kind}={count}" for kind, count in s["errors"].items()) or "-",
            )
        table.add_section()
    console.print(table)


def print_changes(results: dict[str, dict[str, Any]], limit: int) -> None:
    for name, result in results.items():
        for variant, changes in result["changes"].items():
            for c in changes[:limit]:
                marks = [
                    f"{label} {len(c[key])}"
                    for key, label in (
                        ("gained10", "+@10"),
                        ("lost10", "-@10"),
                        ("gained20", "+@20"),
                        ("lost20", "-@20"),
                    )
                    if c[key]
                ]
                via = " (expanded match)" if c["gained_by_expanded"] else ""
                console.print(f"{name} / {variant}: {c['id']} {', '.join(marks)}{via}: {c['query']}")
            if len(changes) > limit:
                console.print(f"{name} / {variant}: ... {len(changes) - limit} more in the JSON")


def plot(results: dict[str, dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = (
        ("ndcg10", "nDCG@10"),
        ("ndcg10_loose", "nDCG@10 loose"),
        ("recall20", "R@20"),
        ("recall20_loose", "R@20 loose"),
    )
    names = list(results)
    fig, axes = plt.subplots(1, len(names), figsize=(6 * len(names), 4.5), squeeze=False, sharey=True)
    for ax, name in zip(axes[0], names, strict=True):
        summary = results[name]["summary"]
        width = 0.8 / max(len(summary), 1)
        for j, (variant, values) in enumerate(summary.items()):
            xs = [i + (j - (len(summary) - 1) / 2) * width for i in range(len(metrics))]
            ax.bar(xs, [values[key] for key, _ in metrics], width, label=variant, color=f"C{j}")
        ax.set_xticks(range(len(metrics)), [label for _, label in metrics])
        ax.set_title(f"{name} (n={next(iter(summary.values()))['queries']})")
        ax.set_ylim(0, 1.1)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("TriBridRAG: fused retrieval with and without graph expansion")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


async def evaluate(
    address: str,
    sets: dict[str, tuple[str, list[EvalQuery]]],
    runs: list[Variant],
    concurrency: int,
    timeout_s: float,
) -> dict[str, dict[str, Any]]:
    async with grpc.aio.insecure_channel(address) as channel:
        stub = fusion_pb2_grpc.FusionStub(channel)

        async def search(request: common_pb2.SearchRequest) -> fusion_pb2.FusionSearchResponse:
            reply: fusion_pb2.FusionSearchResponse = await stub.Search(request, timeout=timeout_s)
            return reply

        results = {}
        for name, (corpus, queries) in sets.items():
            console.print(f"{name}: {len(queries)} questions x {len(runs)} variants")
            results[name] = await evaluate_set(search, corpus, queries, runs, concurrency)
        return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sets", nargs="+", choices=DOC_SETS, default=list(DOC_SETS))
    parser.add_argument("--placements", nargs="+", choices=PLACEMENTS, default=list(PLACEMENTS))
    parser.add_argument("--fused-k", type=int, default=10, help="top_k of the appended run")
    parser.add_argument("--sets-dir", type=Path, default=build_sets.SETS_DIR)
    parser.add_argument("--work-dir", type=Path, default=build_sets.WORK_DIR, help="where the corpora live")
    parser.add_argument("--concurrency", type=int, default=4, help="questions in flight")
    parser.add_argument("--timeout", type=float, default=30.0, help="per-question deadline, seconds")
    parser.add_argument("--no-index", action="store_true", help="skip the IndexCorpus step")
    parser.add_argument(
        "--changes", type=int, default=15, help="changed questions printed per set and variant"
    )
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = parser.parse_args()

    cfg = load_config()
    sets = load_sets(args.sets_dir, args.sets)
    if not args.no_index:
        needed = {corpus for corpus, _ in sets.values()}
        corpora = doc_sets.corpus_dirs(args.work_dir)
        asyncio.run(ensure_indexed(cfg, {c: p for c, p in corpora.items() if c in needed}))
    runs = variants(args.placements, args.fused_k)
    results = asyncio.run(
        evaluate(cfg.services.address("fusion"), sets, runs, args.concurrency, args.timeout)
    )
    print_table(results)
    print_changes(results, args.changes)

    args.out.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    report = {
        "created": stamp,
        "variants": [asdict(v) for v in runs],
        # this machine's config: the running gateway's, unless it was started with another
        "expansion_config": {
            key: value for key, value in cfg.fusion.model_dump().items() if "expansion" in key
        },
        "results": results,
    }
    text = json.dumps(report, indent=1)
    (args.out / f"expansion-{stamp}.json").write_text(text)
    (args.out / "expansion-latest.json").write_text(text)
    plot(results, args.out / "expansion-latest.png")
    console.print(
        f"wrote {args.out / f'expansion-{stamp}.json'}, expansion-latest.json and expansion-latest.png"
    )


if __name__ == "__main__":
    main()
