"""Fusion lab: re-fuse the legs' own ranked lists offline under other fusion rules, and score them.

`make eval` with `--keep-lists` stores every leg's whole ranked list per query; this reads that
file, plans each query's weights as the gateway does (`services.fusion.gateway.plan`, with the
corpus's profile from PostgreSQL), fuses with `services.fusion.fuse`, and scores the top 20 with
the eval's metrics. One table: nDCG@10 per set for each rule, next to each set's best single leg,
so a rule can be chosen on the tuning sets and read on the held-out ones.

    .venv/bin/python -m evaluation.run --no-index --top-k 30 --keep-lists --out /tmp/lab
    .venv/bin/python -m bench.fusion_lab /tmp/lab/eval-latest.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.report import write_report
from evaluation import REPO_ROOT, build_sets, doc_sets, lang_sets, unseen_sets
from evaluation.metrics import Span, is_match, is_strict_match, score_query
from evaluation.refuse import corpus_profiles
from evaluation.run import SET_NAMES, EvalQuery, load_sets
from services.fusion.fuse import Fused, Ranked, keep_leg_order, rrf, weighted
from services.fusion.gateway import confident_weights, plan
from tribrid.config import FusionConfig, load_config
from tribrid.v1 import common_pb2

console = Console(width=max(Console().width, 140))
LEGS = ("vector", "sparse", "graph")
HELD_OUT = (*unseen_sets.HELD_OUT, *lang_sets.HELD_OUT, *doc_sets.HELD_OUT)

DEFAULT_RULE = "dbsf + confidence + lead leg (default)"
CONFIDENCE_RULES = (DEFAULT_RULE, "dbsf + confidence")
# item id -> (path, start, end)
Where = dict[str, tuple[str, int, int]]
Rule = Callable[[dict[str, list[Ranked]], dict[str, float], str], list[Fused]]


@dataclass(frozen=True)
class LabQuery:
    set_name: str
    query: EvalQuery
    lists: dict[str, list[Ranked]]
    where: Where
    weights: dict[str, float]
    kind: str
    # the weights the gateway fuses with: the plan's, scaled by each leg's confidence for prose
    confident: dict[str, float]


def _rrf(k: float) -> Rule:
    return lambda lists, weights, kind: rrf(lists, weights, k)


def _rrf_by_kind(k_structural: float, k_other: float = 60.0) -> Rule:
    return lambda lists, weights, kind: rrf(
        lists, weights, k_structural if kind in ("structural", "identifier") else k_other
    )


def _weighted(normalization: str) -> Rule:
    return lambda lists, weights, kind: weighted(lists, weights, normalization)  # type: ignore[arg-type]


def _led(rule: Rule, lead_legs: Mapping[str, str]) -> Rule:
    """The rule, then the order of the kind's lead leg kept (the gateway's `fusion.lead_legs`)."""

    def fuse(lists: dict[str, list[Ranked]], weights: dict[str, float], kind: str) -> list[Fused]:
        fused = rule(lists, weights, kind)
        lead = lead_legs.get(kind, "")
        return keep_leg_order(fused, lead) if lead in lists else fused

    return fuse


def _equal(rule: Rule) -> Rule:
    return lambda lists, weights, kind: rule(lists, dict.fromkeys(lists, 1.0), kind)


def _sharper(rule: Rule, power: float) -> Rule:
    """The plan's weights raised to a power (renormalized by the rule): a profile trusted more."""
    return lambda lists, weights, kind: rule(lists, {leg: w**power for leg, w in weights.items()}, kind)


RULES: dict[str, Rule] = {
    DEFAULT_RULE: _led(
        _weighted("z_score"), {str(kind): leg for kind, leg in FusionConfig().lead_legs.items()}
    ),
    "dbsf + confidence": _weighted("z_score"),
    "rrf k=60": _rrf(60),
    "rrf k=20": _rrf(20),
    "rrf k=10": _rrf(10),
    "rrf k=5": _rrf(5),
    "rrf k=2 structural/identifier": _rrf_by_kind(2),
    "rrf k=10 structural/identifier": _rrf_by_kind(10),
    "dbsf (z-score)": _weighted("z_score"),
    "min-max": _weighted("min_max"),
    "dbsf, equal weights": _equal(_weighted("z_score")),
    "rrf k=60, equal weights": _equal(_rrf(60)),
    "dbsf, weights^2": _sharper(_weighted("z_score"), 2.0),
}


def lab_queries(report: Mapping[str, Any], sets: Mapping[str, tuple[str, list[EvalQuery]]]) -> list[LabQuery]:
    cfg = load_config()
    profiles = asyncio.run(corpus_profiles(cfg, {corpus for corpus, _ in sets.values()}))
    out: list[LabQuery] = []
    for set_name, by_leg in report["per_query"].items():
        if set_name not in sets:
            continue
        corpus, queries = sets[set_name]
        details = {leg: {d["id"]: d for d in by_leg[leg]} for leg in LEGS if leg in by_leg}
        for query in queries:
            lists: dict[str, list[Ranked]] = {}
            where: Where = {}
            for leg in LEGS:
                ranked = details[leg][query.id].get("ranked", [])
                lists[leg] = [Ranked(str(r[0]), float(r[4])) for r in ranked]
                where.update({str(r[0]): (str(r[1]), int(r[2]), int(r[3])) for r in ranked})
            request = common_pb2.SearchRequest(corpus_id=corpus, query=query.query)
            fusion_plan = plan(cfg.fusion, request, profiles[corpus])
            scores = {leg: [r.score for r in ranked] for leg, ranked in lists.items()}
            confident = confident_weights(fusion_plan, scores, cfg.fusion.candidates_per_leg)[0]
            out.append(
                LabQuery(
                    set_name, query, lists, where, fusion_plan.weights, fusion_plan.reading.kind, confident
                )
            )
    return out


def ndcg(fused: Sequence[Fused], q: LabQuery, top: int = 20) -> float:
    strict = is_strict_match if q.set_name in doc_sets.DOC_SET_CORPUS else is_match
    hits = [Span(*q.where[f.item_id]) for f in fused[:top]]
    return score_query(hits, q.query.relevant, strict=strict).ndcg10


def leg_ndcg(q: LabQuery, leg: str) -> float:
    fused = [Fused(r.item_id, r.score, i) for i, r in enumerate(q.lists[leg], start=1)]
    return ndcg(fused, q)


def run(report_path: Path) -> dict[str, dict[str, float]]:
    report = json.loads(report_path.read_text())
    names = [n for n in report["per_query"] if n in SET_NAMES]
    sets = load_sets(build_sets.SETS_DIR, names)
    queries = lab_queries(report, sets)
    table: dict[str, dict[str, float]] = {}
    for set_name in names:
        of_set = [q for q in queries if q.set_name == set_name]
        row = {f"leg {leg}": statistics.mean(leg_ndcg(q, leg) for q in of_set) for leg in LEGS}
        for rule_name, rule in RULES.items():
            row[rule_name] = statistics.mean(
                ndcg(
                    rule(
                        {leg: q.lists[leg] for leg in LEGS if q.weights[leg] > 0},
                        _weights(rule_name, q),
                        q.kind,
                    ),
                    q,
                )
                for q in of_set
            )
        table[set_name] = row
    return table


def _weights(rule_name: str, q: LabQuery) -> dict[str, float]:
    return q.confident if rule_name in CONFIDENCE_RULES else q.weights


def show(table: dict[str, dict[str, float]]) -> None:
    columns = list(next(iter(table.values())))
    out = Table(
        title="nDCG@10, legs and fusion rules over the same lists (held out: " + ", ".join(HELD_OUT) + ")"
    )
    out.add_column("set")
    for column in columns:
        out.add_column(column, justify="right")
    for set_name, row in table.items():
        best_leg = max(row[f"leg {leg}"] for leg in LEGS)
        cells = []
        for column in columns:
            value = row[column]
            mark = "" if column.startswith("leg ") or value >= best_leg - 1e-9 else " <"
            cells.append(f"{value:.3f}{mark}")
        out.add_row(set_name + (" *" if set_name in HELD_OUT else ""), *cells)
    console.print(out)
    console.print("'<': below the set's best single leg")


def plot(table: dict[str, dict[str, float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [DEFAULT_RULE, "rrf k=60", "dbsf (z-score)"]
    names = list(table)
    fig, ax = plt.subplots(figsize=(10, 4))
    width = 0.8 / (len(shown) + 1)
    best = [max(table[n][f"leg {leg}"] for leg in LEGS) for n in names]
    ax.bar(list(range(len(names))), best, width, label="best single leg", color="#999999")
    for j, rule in enumerate(shown, start=1):
        ax.bar([i + j * width for i in range(len(names))], [table[n][rule] for n in names], width, label=rule)
    ax.set_xticks([i + width * len(shown) / 2 for i in range(len(names))])
    ax.set_xticklabels([n + (" *" if n in HELD_OUT else "") for n in names], rotation=15)
    ax.set_ylabel("nDCG@10")
    ax.set_title("Fusion rules over the same leg lists (* held out)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("report", type=Path, help="an eval report written with --keep-lists")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "evals" / "results")
    args = parser.parse_args()
    table = run(args.report)
    show(table)
    write_report(args.out, "fusion-lab", table, plot, console)


if __name__ == "__main__":
    main()
