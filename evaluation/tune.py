"""`tribrid tune`: the fusion's leg weights per query kind, and its method and `rrf_k`, learned from
judged queries by k-fold cross-validation. It prints a config snippet and writes it to a file; it
never writes the running config.

Each query's leg lists are fetched once, as the gateway would see them (evaluation/refuse.py: the
gateway's reading passed down, `fusion.candidates_per_leg` candidates per leg). Every candidate is
then scored offline by re-fusing those lists with the gateway's own steps (`refuse.gateway_order`)
and nDCG@10 (evaluation/metrics.py): no leg is called again per candidate.

The candidates: per query kind, leg weights on a grid over the simplex (`--step`) plus the running
profiles; the method and `rrf_k` are one setting for every kind in `FusionConfig`, so they are
chosen once, with the weights of every kind, among "weighted" (the gateway's score fusion, with its
confidence scaling and lead legs) and weighted RRF at each `--rrf-k`. A kind with fewer than
`--min-queries` training queries keeps its running weights. Ties go to the weights closest to the
running ones, and to the running method. Folds are split by query, stratified by kind, seeded.

    tribrid tune judged.jsonl --corpus myrepo --out tune.toml
    make tune FILE=judged.jsonl CORPUS=myrepo
    .venv/bin/python -m evaluation.tune evals/sets/docstring.jsonl evals/sets/structural.jsonl \\
        evals/sets/identifier.jsonl --corpus eval-docstring --corpus eval-code --corpus eval-code \\
        --held-out evals/sets/unseen-docstring-2.jsonl --held-out-corpus unseen-docstring-2

A judged file is JSONL, one query a line: {"query": ..., "relevant": [{"path", "start_line",
"end_line"}, ...]} (a code chunk counts when it is that definition, evaluation/metrics.py; the eval
sets' shape, whose "id" and "tags" are allowed), or {"query": ..., "relevant_chunk_ids": [...]};
"corpus" on a line overrides --corpus.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import grpc
import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from bench.report import write_report
from evaluation.metrics import Matcher, Span, is_loose_match, is_match, is_strict_match, ndcg_at, score_query
from evaluation.refuse import LegLists, LegSearch, corpus_profiles, gateway_order
from tribrid import auth, tls
from tribrid.config import ConfigError, FusionConfig, TriBridConfig, load_config
from tribrid.legs import LEG_NAMES
from tribrid.question.contract import KINDS
from tribrid.v1 import common_pb2, fusion_pb2_grpc

console = Console(width=max(Console().width, 120))
# code: the definition's chunk; strict: a document chunk that is mostly the answer; loose: a chunk
# holding any answering line (the entity sets' answers are paragraphs, evaluation/entity_sets.py)
MATCHERS: dict[str, Matcher] = {"code": is_match, "strict": is_strict_match, "loose": is_loose_match}
# a tie within float noise: the mean of the same hits summed in another order
TIE = 1e-12

Weights = tuple[float, ...]  # one per tuned leg, in `Space.legs` order


class TuneError(Exception):
    """What stops a tuning run before it starts: a bad argument, a judged file, an unknown corpus."""


class JudgedFileError(TuneError):
    """A judged file that cannot be read: the message names the file, the line and the field."""


class JudgedSpan(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    path: str = Field(min_length=1)
    start_line: int = Field(ge=1)
    end_line: int = Field(ge=1)

    @model_validator(mode="after")
    def _ordered(self) -> JudgedSpan:
        if self.end_line < self.start_line:
            raise ValueError(f"end_line {self.end_line} is before start_line {self.start_line}")
        return self


class JudgedLine(BaseModel):
    """One line of a judged file."""

    model_config = ConfigDict(extra="forbid", strict=True)

    query: str = Field(min_length=1)
    relevant: list[JudgedSpan] | None = Field(None, min_length=1)
    relevant_chunk_ids: list[str] | None = Field(None, min_length=1)
    corpus: str | None = Field(None, min_length=1)
    # the eval sets' own fields (evals/sets/*.jsonl)
    id: str | None = None
    tags: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_judgement(self) -> JudgedLine:
        if not self.query.strip():
            raise ValueError("query is blank")
        if (self.relevant is None) == (self.relevant_chunk_ids is None):
            raise ValueError("give exactly one of relevant (file and line spans) or relevant_chunk_ids")
        return self


@dataclass(frozen=True)
class Judged:
    query: str
    corpus: str
    spans: tuple[Span, ...]
    chunk_ids: frozenset[str]
    source: str  # file:line, for messages

    @property
    def n_relevant(self) -> int:
        return len(self.chunk_ids) or len(self.spans)


def _describe(err: ValidationError) -> str:
    parts = []
    for e in err.errors():
        where = ".".join(str(p) for p in e["loc"]) or "line"
        given = "" if e["type"] in ("missing", "json_invalid") else f" (got {e['input']!r:.60})"
        parts.append(f"{where}: {e['msg']}{given}")
    return "; ".join(parts)


def load_judged(path: Path, corpus: str | None) -> list[Judged]:
    """Every query of a judged file; JudgedFileError naming the first bad line and its field."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise JudgedFileError(f"{path}: {err.strerror}") from None
    out: list[Judged] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = JudgedLine.model_validate_json(line)
        except ValidationError as err:
            raise JudgedFileError(f"{path} line {number}: {_describe(err)}") from None
        where = item.corpus or corpus
        if where is None:
            raise JudgedFileError(f"{path} line {number}: corpus: no corpus on the line and no --corpus")
        spans = tuple(Span(s.path, s.start_line, s.end_line) for s in item.relevant or ())
        out.append(
            Judged(item.query, where, spans, frozenset(item.relevant_chunk_ids or ()), f"{path}:{number}")
        )
    if not out:
        raise JudgedFileError(f"{path}: no queries")
    return out


def ndcg10(order: Sequence[common_pb2.ChunkMatch], judged: Judged, match: Matcher) -> float:
    """nDCG@10 of a fused answer: by chunk id, or by the eval's span matching."""
    if judged.chunk_ids:
        seen: set[str] = set()
        gains = []
        for m in order[:10]:
            gains.append(m.chunk_id in judged.chunk_ids and m.chunk_id not in seen)
            seen.add(m.chunk_id)
        return ndcg_at(gains, len(judged.chunk_ids))
    hits = [Span(m.file_path, m.start_line, m.end_line) for m in order[:10]]
    return score_query(hits, judged.spans, strict=match).ndcg10


@dataclass(frozen=True, order=True)
class Method:
    name: Literal["weighted", "rrf"]
    rrf_k: float

    @property
    def label(self) -> str:
        return "weighted" if self.name == "weighted" else f"rrf k={self.rrf_k:g}"


def simplex(n_legs: int, step: float) -> list[Weights]:
    """Every weighting of `n_legs` legs in multiples of `step` that sums 1."""
    parts = round(1 / step)
    if parts < 1 or abs(parts * step - 1) > 1e-9:
        raise TuneError(f"--step must divide 1 (0.1, 0.05, 0.25 ...); got {step}")

    def split(left: int, legs: int) -> list[tuple[int, ...]]:
        if legs == 1:
            return [(left,)]
        return [(i, *rest) for i in range(left + 1) for rest in split(left - i, legs - 1)]

    return [tuple(i / parts for i in combo) for combo in split(parts, n_legs)]


def _normalized(weights: Mapping[str, float], legs: Sequence[str]) -> Weights:
    total = sum(weights.get(leg, 0.0) for leg in legs)
    return tuple(weights.get(leg, 0.0) / total if total > 0 else 1 / len(legs) for leg in legs)


@dataclass(frozen=True)
class Space:
    """What is searched: the legs weighed (the enabled ones), the weightings, the methods, and the
    running config's place in it."""

    base: FusionConfig
    legs: tuple[str, ...]
    weights: tuple[Weights, ...]
    methods: tuple[Method, ...]
    current_method: int
    current_weights: dict[str, int]  # kind -> index of its running profile in `weights`

    @classmethod
    def build(cls, base: FusionConfig, step: float, rrf_ks: Sequence[float]) -> Space:
        legs = tuple(leg for leg in LEG_NAMES if base.leg(leg).enabled)
        grid = simplex(len(legs), step)
        running = {kind: _normalized(profile(base, kind), legs) for kind in KINDS}
        weights = list(grid)
        for w in running.values():
            if not any(np.allclose(w, g, atol=1e-9) for g in weights):
                weights.append(w)
        index: dict[str, int] = {
            kind: next(i for i, g in enumerate(weights) if np.allclose(w, g, atol=1e-9))
            for kind, w in running.items()
        }
        current = Method(base.method, base.rrf_k)
        methods = sorted({Method("weighted", base.rrf_k), *(Method("rrf", k) for k in rrf_ks), current})
        return cls(base, legs, tuple(weights), tuple(methods), methods.index(current), index)

    def config(self, method: int, by_kind: Mapping[str, int]) -> FusionConfig:
        """The running config with this method and these weightings (by index) for the kinds given."""
        chosen = self.methods[method]
        kind_weights = {str(k): v for k, v in self.base.query_kind_weights.items()}
        for kind, w in by_kind.items():
            kind_weights[kind] = {leg: round(v, 6) for leg, v in zip(self.legs, self.weights[w], strict=True)}
        return self.base.model_copy(
            update={"method": chosen.name, "rrf_k": chosen.rrf_k, "query_kind_weights": kind_weights}
        )


def profile(cfg: FusionConfig, kind: str) -> dict[str, float]:
    """The weights a kind is planned with: its `query_kind_weights`, else those of `legs`."""
    found = {str(k): v for k, v in cfg.query_kind_weights.items()}.get(kind)
    return dict(found) if found is not None else {leg: cfg.leg(leg).weight for leg in LEG_NAMES}


@dataclass(frozen=True)
class Learned:
    method: int
    weights: dict[str, int]  # kind -> index into Space.weights
    kept: dict[str, int]  # kinds left at their running weights -> their training queries
    train_ndcg: float


def learn(
    space: Space, scores: np.ndarray, kinds: Sequence[str], rows: Sequence[int], min_queries: int
) -> Learned:
    """The method and the weightings per kind with the best mean nDCG@10 over `rows`;
    `scores[query, method, weighting]`."""
    best: Learned | None = None
    for m in range(len(space.methods)):
        chosen: dict[str, int] = {}
        kept: dict[str, int] = {}
        total = 0.0
        for kind in KINDS:
            of_kind = [r for r in rows if kinds[r] == kind]
            running = space.current_weights[kind]
            if len(of_kind) < min_queries:
                chosen[kind] = running
                kept[kind] = len(of_kind)
            else:
                means = scores[of_kind, m, :].mean(axis=0)
                ties = np.flatnonzero(means >= means.max() - TIE)
                start = np.asarray(space.weights[running])
                chosen[kind] = int(
                    min(ties, key=lambda w: (float(np.abs(np.asarray(space.weights[w]) - start).sum()), w))
                )
            total += float(scores[of_kind, m, chosen[kind]].sum())
        mean = total / len(rows)
        if (
            best is None
            or mean > best.train_ndcg + TIE
            or (mean >= best.train_ndcg - TIE and m == space.current_method)
        ):
            best = Learned(m, chosen, kept, mean)
    assert best is not None
    return best


def fold_split(kinds: Sequence[str], folds: int, seed: int) -> list[int]:
    """Each query's fold: shuffled (seeded) within its kind, then dealt round-robin across the kinds
    in turn, so every fold holds about the same share of each kind and of the whole."""
    if not 2 <= folds <= len(kinds):
        raise TuneError(f"--folds must be between 2 and the number of queries ({len(kinds)}); got {folds}")
    rng = random.Random(seed)
    fold = [0] * len(kinds)
    dealt = 0
    for kind in sorted(set(kinds)):
        members = [i for i, k in enumerate(kinds) if k == kind]
        rng.shuffle(members)
        for i in members:
            fold[i] = dealt % folds
            dealt += 1
    return fold


@dataclass
class FoldResult:
    fold: int
    queries: int
    before: float
    after: float
    method: str
    weights: dict[str, list[float]]
    kept: list[str]  # kinds with queries left at their running weights: "kind (n)"


@dataclass
class CrossValidation:
    folds: list[FoldResult]
    # per query, the score on its test fold: running config / learned on the other folds
    before: list[float]
    after: list[float]


def cross_validate(
    space: Space,
    scores: np.ndarray,
    running: np.ndarray,
    kinds: Sequence[str],
    folds: int,
    seed: int,
    min_queries: int,
) -> CrossValidation:
    """`running[q]`: the query's nDCG@10 under the running config (re-fused the same way)."""
    fold_of = fold_split(kinds, folds, seed)
    results = []
    after = [0.0] * len(kinds)
    for f in range(folds):
        test = [i for i, g in enumerate(fold_of) if g == f]
        train = [i for i, g in enumerate(fold_of) if g != f]
        learned = learn(space, scores, kinds, train, min_queries)
        for i in test:
            after[i] = float(scores[i, learned.method, learned.weights[kinds[i]]])
        results.append(
            FoldResult(
                f + 1,
                len(test),
                float(np.mean(running[test])),
                float(np.mean([after[i] for i in test])),
                space.methods[learned.method].label,
                {kind: list(space.weights[w]) for kind, w in learned.weights.items()},
                [f"{kind} ({n})" for kind, n in learned.kept.items() if n],
            )
        )
    return CrossValidation(results, [float(v) for v in running], after)


def snippet(space: Space, learned: Learned, header: Sequence[str]) -> str:
    """The learned settings as TOML for the [fusion] section: every kind (a config's
    `query_kind_weights` replaces the whole default map)."""
    method = space.methods[learned.method]
    lines = [f"# {line}" for line in header]
    lines += ["[fusion]", f'method = "{method.name}"', f"rrf_k = {float(method.rrf_k)!r}"]
    if method.name == "weighted":
        lines[-1] += "  # unused by weighted fusion: the running value"
    for kind in KINDS:
        lines += ["", f"[fusion.query_kind_weights.{kind}]"]
        if kind in learned.kept:
            n = learned.kept[kind]
            lines.append(f"# kept: the running weights ({n or 'no'} queries of this kind, too few)")
        for leg, value in zip(space.legs, space.weights[learned.weights[kind]], strict=True):
            lines.append(f"{leg} = {round(value, 4)!r}")
    return "\n".join(lines) + "\n"


@dataclass
class TuneArgs:
    files: list[Path]
    corpora: list[str]
    out: Path
    held_out: list[Path] = field(default_factory=list)
    held_out_corpora: list[str] = field(default_factory=list)
    folds: int = 5
    seed: int = 0
    step: float = 0.1
    rrf_ks: list[float] = field(default_factory=lambda: [10.0, 30.0, 60.0])
    min_queries: int = 8
    match: str = "code"
    check: int = 5
    concurrency: int = 4
    timeout_s: float = 30.0


@dataclass
class Fetched:
    judged: list[Judged]
    lists: list[LegLists]
    kinds: list[str]


def _paired(files: Sequence[Path], corpora: Sequence[str], what: str) -> list[list[Judged]]:
    if len(corpora) > 1 and len(corpora) != len(files):
        raise JudgedFileError(f"{what}: give one corpus for every file, or one for all ({len(files)} files)")
    return [
        load_judged(path, corpora[i] if len(corpora) > 1 else (corpora[0] if corpora else None))
        for i, path in enumerate(files)
    ]


def _progress() -> Progress:
    columns = (TextColumn("{task.description:<28}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    return Progress(*columns, console=console, transient=True)


async def fetch_all(cfg: TriBridConfig, judged: list[Judged], args: TuneArgs, label: str) -> Fetched:
    """Every query's leg lists, once, `args.concurrency` queries at a time."""
    profiles = await corpus_profiles(cfg, {j.corpus for j in judged})
    missing = sorted(c for c, p in profiles.items() if p is None)
    if missing:
        raise TuneError(f"no indexed corpus {', '.join(missing)} (tribrid status lists them)")
    search = LegSearch(cfg, args.timeout_s)
    sem = asyncio.Semaphore(args.concurrency)
    lists: list[LegLists | None] = [None] * len(judged)
    try:
        with _progress() as bar:
            task = bar.add_task(f"{label}: leg lists", total=len(judged))

            async def one(i: int, j: Judged) -> None:
                async with sem:
                    lists[i] = await search.fetch(
                        cfg.fusion, j.corpus, j.query, profiles[j.corpus], _depth(cfg)
                    )
                bar.advance(task)

            await asyncio.gather(*(one(i, j) for i, j in enumerate(judged)))
    finally:
        await search.close()
    done = [item for item in lists if item is not None]
    return Fetched(judged, done, [item.reading.kind for item in done])


def _depth(cfg: TriBridConfig) -> int:
    # what the gateway asks each leg for a top 10 (Gateway._search)
    return min(max(cfg.fusion.final_k, cfg.fusion.candidates_per_leg), cfg.limits.max_top_k)


def score_all(space: Space, fetched: Fetched, match: Matcher) -> tuple[np.ndarray, np.ndarray]:
    """nDCG@10 of every query under every method and weighting of its kind, and under the running
    config."""
    scores = np.zeros((len(fetched.lists), len(space.methods), len(space.weights)))
    running = np.zeros(len(fetched.lists))
    configs = {
        (m, kind, w): space.config(m, {kind: w})
        for m in range(len(space.methods))
        for kind in KINDS
        for w in range(len(space.weights))
    }
    with _progress() as bar:
        task = bar.add_task("re-fusing every candidate", total=len(fetched.lists))
        for q, (lists, judged, kind) in enumerate(
            zip(fetched.lists, fetched.judged, fetched.kinds, strict=True)
        ):
            running[q] = ndcg10(gateway_order(space.base, lists), judged, match)
            for (m, of_kind, w), cfg in configs.items():
                if of_kind == kind:
                    scores[q, m, w] = ndcg10(gateway_order(cfg, lists), judged, match)
            bar.advance(task)
    return scores, running


async def check_gateway(cfg: TriBridConfig, fetched: Fetched, n: int) -> tuple[int, int, list[str]]:
    """The gateway's own top 10 for `n` queries spread over the file, against the running config
    re-fused offline: (same, asked, what differed)."""
    if n <= 0:
        return 0, 0, []
    picked = sorted({round(i * (len(fetched.lists) - 1) / max(n - 1, 1)) for i in range(n)})
    same = 0
    differed = []
    async with tls.channel(
        cfg.services.address("fusion"), cfg.services, interceptors=auth.client_interceptors()
    ) as channel:
        stub = fusion_pb2_grpc.FusionStub(channel)
        for i in picked:
            lists = fetched.lists[i]
            request = common_pb2.SearchRequest(corpus_id=lists.corpus, query=lists.query, top_k=10)
            try:
                reply = await stub.Search(request, timeout=30)
            except grpc.aio.AioRpcError as err:
                differed.append(f"{fetched.judged[i].source}: the gateway answered {err.code().name}")
                continue
            gateway_ids = [m.chunk_id for m in reply.matches]
            offline = [m.chunk_id for m in gateway_order(cfg.fusion, lists)[:10]]
            if gateway_ids == offline:
                same += 1
            else:
                differed.append(f"{fetched.judged[i].source}: {lists.query[:60]!r}")
    return same, len(picked), differed


@dataclass
class HeldOut:
    name: str
    queries: int
    before: float
    after: float
    by_kind: dict[str, tuple[int, float, float]]


@dataclass
class TuneResult:
    snippet: str
    cv: CrossValidation
    learned: Learned
    kinds: list[str]
    held_out: list[HeldOut]
    gateway_check: tuple[int, int, list[str]]
    space: Space
    errors: int

    def summary(self) -> dict[str, Any]:
        folds = [vars(f) for f in self.cv.folds]
        return {
            "folds": folds,
            "mean_before": float(np.mean(self.cv.before)),
            "mean_after": float(np.mean(self.cv.after)),
            "by_kind": _by_kind(self.kinds, self.cv.before, self.cv.after),
            "learned": {
                "method": self.space.methods[self.learned.method].label,
                "weights": {k: list(self.space.weights[w]) for k, w in self.learned.weights.items()},
                "kept": self.learned.kept,
            },
            "held_out": [vars(h) for h in self.held_out],
            "gateway_check": {"same": self.gateway_check[0], "asked": self.gateway_check[1]},
            "legs_failed": self.errors,
        }


def _by_kind(
    kinds: Sequence[str], before: Sequence[float], after: Sequence[float]
) -> dict[str, tuple[int, float, float]]:
    out: dict[str, tuple[int, float, float]] = {}
    for kind in KINDS:
        rows = [i for i, k in enumerate(kinds) if k == kind]
        if rows:
            out[kind] = (
                len(rows),
                float(np.mean([before[i] for i in rows])),
                float(np.mean([after[i] for i in rows])),
            )
    return out


async def tune(cfg: TriBridConfig, args: TuneArgs) -> TuneResult:
    """Fetch, cross-validate, learn on every query, score the held-out files; write the snippet to
    `args.out` and the report (JSON, PNG) beside it."""
    by_file = _paired(args.files, args.corpora, "--corpus")
    judged = [j for group in by_file for j in group]
    held = _paired(args.held_out, args.held_out_corpora, "--held-out-corpus")
    match = MATCHERS[args.match]
    space = Space.build(cfg.fusion, args.step, args.rrf_ks)
    fetched = await fetch_all(cfg, judged, args, "tuning queries")
    errors = sum(len(lists.failed) for lists in fetched.lists)
    gateway_check = await check_gateway(cfg, fetched, args.check)
    scores, running = score_all(space, fetched, match)
    cv = cross_validate(space, scores, running, fetched.kinds, args.folds, args.seed, args.min_queries)
    learned = learn(space, scores, fetched.kinds, range(len(fetched.kinds)), args.min_queries)

    held_out = []
    learned_cfg = space.config(learned.method, learned.weights)
    for path, group in zip(args.held_out, held, strict=True):
        got = await fetch_all(cfg, group, args, path.name)
        errors += sum(len(lists.failed) for lists in got.lists)
        checked = await check_gateway(cfg, got, args.check)
        gateway_check = (
            gateway_check[0] + checked[0],
            gateway_check[1] + checked[1],
            gateway_check[2] + checked[2],
        )
        before = [
            ndcg10(gateway_order(cfg.fusion, lists), j, match)
            for lists, j in zip(got.lists, group, strict=True)
        ]
        after = [
            ndcg10(gateway_order(learned_cfg, lists), j, match)
            for lists, j in zip(got.lists, group, strict=True)
        ]
        held_out.append(
            HeldOut(
                path.name,
                len(group),
                float(np.mean(before)),
                float(np.mean(after)),
                _by_kind(got.kinds, before, after),
            )
        )

    header = [
        f"`tribrid tune` {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {len(judged)} judged queries:",
        *(f"  {path} ({len(group)})" for path, group in zip(args.files, by_file, strict=True)),
        f"{args.folds}-fold cross-validated nDCG@10: {np.mean(cv.before):.3f} with the running profiles, "
        f"{np.mean(cv.after):.3f} with weights learned on the other folds",
        "Merge into the [fusion] section of tribrid.toml (or the file TRIBRID_CONFIG names);",
        "the gateway reads it when it starts.",
    ]
    result = TuneResult(
        snippet(space, learned, header), cv, learned, fetched.kinds, held_out, gateway_check, space, errors
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(result.snippet)
    write_report(args.out.parent, args.out.stem, result.summary(), plot, console)
    return result


def show(result: TuneResult, out: Path) -> None:
    same, asked, differed = result.gateway_check
    if asked:
        colour = "green" if same == asked else "yellow"
        console.print(
            f"[{colour}]gateway check: {same} of {asked} queries re-fused offline: the gateway's answer[/]"
        )
        for line in differed:
            console.print(f"  differs: {line}")
    if result.errors:
        console.print(f"[yellow]{result.errors} leg calls failed: those queries are fused without the leg[/]")
    table = Table(title="nDCG@10 per fold: the running config, and weights learned on the other folds")
    for column in ("fold", "queries", "before", "after", "change", "method", "kinds kept"):
        table.add_column(
            column, justify="right" if column in ("queries", "before", "after", "change") else "left"
        )
    for f in result.cv.folds:
        table.add_row(
            str(f.fold),
            str(f.queries),
            f"{f.before:.3f}",
            f"{f.after:.3f}",
            f"{f.after - f.before:+.3f}",
            f.method,
            ", ".join(f.kept) or "-",
        )
    before, after = float(np.mean(result.cv.before)), float(np.mean(result.cv.after))
    table.add_section()
    table.add_row(
        "mean", str(len(result.cv.before)), f"{before:.3f}", f"{after:.3f}", f"{after - before:+.3f}", "", ""
    )
    console.print(table)

    kinds = Table(title="by query kind (cross-validated), and the weights learned on every query")
    for column in ("kind", "queries", "before", "after", *(f"{leg}" for leg in result.space.legs)):
        kinds.add_column(column, justify="left" if column == "kind" else "right")
    by_kind = _by_kind(result.kinds, result.cv.before, result.cv.after)
    for kind in KINDS:
        n, b, a = by_kind.get(kind, (0, math.nan, math.nan))
        weights = result.space.weights[result.learned.weights[kind]]
        kept = " (kept)" if kind in result.learned.kept else ""
        kinds.add_row(kind + kept, str(n), f"{b:.3f}", f"{a:.3f}", *(f"{w:.2f}" for w in weights))
    console.print(kinds)
    if result.learned.kept:
        console.print(
            "kept at the running weights (too few queries to learn from): "
            + ", ".join(f"{k} ({n})" for k, n in result.learned.kept.items())
        )
    if result.held_out:
        held = Table(title="held out: the running config against the learned snippet (re-fused offline)")
        for column in (
            "file",
            "queries",
            "running",
            "learned",
            "change",
            "by kind: queries, running → learned",
        ):
            held.add_column(
                column, justify="right" if column in ("queries", "running", "learned", "change") else "left"
            )
        for h in result.held_out:
            kinds_text = "; ".join(f"{kind} {n}: {b:.3f} → {a:.3f}" for kind, (n, b, a) in h.by_kind.items())
            held.add_row(
                h.name,
                str(h.queries),
                f"{h.before:.3f}",
                f"{h.after:.3f}",
                f"{h.after - h.before:+.3f}",
                kinds_text,
            )
        console.print(held)
    # unwrapped: the printed snippet is pasted as TOML
    console.print(result.snippet, markup=False, highlight=False, soft_wrap=True)
    console.print(f"wrote {out} (the running config is unchanged)")


def plot(summary: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"fold {f['fold']}" for f in summary["folds"]] + ["mean"]
    before = [f["before"] for f in summary["folds"]] + [summary["mean_before"]]
    after = [f["after"] for f in summary["folds"]] + [summary["mean_after"]]
    for h in summary["held_out"]:
        labels.append(f"held out: {h['name'].removesuffix('.jsonl')}")
        before.append(h["before"])
        after.append(h["after"])
    xs = np.arange(len(labels))
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(labels)), 4))
    ax.bar(xs - 0.2, before, 0.4, label="running profiles", color="#999999")
    ax.bar(xs + 0.2, after, 0.4, label="learned", color="C0")
    ax.set_xticks(xs, labels, fontsize=8, rotation=20, ha="right")
    ax.set_ylabel("nDCG@10")
    ax.set_ylim(0, 1.15)  # headroom for the legend above the bars
    ax.set_title("tribrid tune: nDCG@10 per fold (learned on the other folds) and held out")
    ax.legend(fontsize=8, loc="upper center", ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tribrid tune", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("files", nargs="+", type=Path, help="judged query files (JSONL)")
    p.add_argument("--corpus", action="append", default=[], help="the files' corpus: once, or once per file")
    p.add_argument("--out", type=Path, default=Path("tune.toml"), help="the snippet; the report beside it")
    p.add_argument(
        "--held-out", action="append", type=Path, default=[], help="a judged file scored, not fitted"
    )
    p.add_argument(
        "--held-out-corpus", action="append", default=[], help="their corpus: once, or once per file"
    )
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--seed", type=int, default=0, help="the fold split's")
    p.add_argument("--step", type=float, default=0.1, help="the weight grid's step over the simplex")
    p.add_argument("--rrf-k", nargs="+", type=float, default=[10.0, 30.0, 60.0], help="rrf_k values tried")
    p.add_argument("--min-queries", type=int, default=8, help="a kind with fewer keeps its weights")
    p.add_argument(
        "--match", choices=sorted(MATCHERS), default="code", help="code; strict or loose (documents)"
    )
    p.add_argument("--check", type=int, default=5, help="queries compared with the gateway's own answer")
    p.add_argument("--concurrency", type=int, default=4, help="queries in flight")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    ns = parser().parse_args(argv)
    args = TuneArgs(
        files=ns.files,
        corpora=ns.corpus,
        out=ns.out,
        held_out=ns.held_out,
        held_out_corpora=ns.held_out_corpus,
        folds=ns.folds,
        seed=ns.seed,
        step=ns.step,
        rrf_ks=ns.rrf_k,
        min_queries=ns.min_queries,
        match=ns.match,
        check=ns.check,
        concurrency=ns.concurrency,
    )
    try:
        cfg = load_config()
        result = asyncio.run(tune(cfg, args))
    except (ConfigError, TuneError) as err:
        console.print(f"[red]{err}[/red]", highlight=False)
        return 2
    except grpc.aio.AioRpcError as err:
        console.print(f"[red]{err.code().name}[/red]: {err.details()} (are the services running? make serve)")
        return 1
    show(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
