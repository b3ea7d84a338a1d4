"""Query techniques in front of the legs: HyDE and multi-query, through the generation model.

A technique asks the model for queries of its own (a hypothetical passage, query variants),
searches them on some legs, and hands the gateway extra ranked lists to fuse next to the
original query's. It runs beside the original leg calls, under a budget of its own inside the
caller's deadline; whatever goes wrong (the model fails, hangs or answers unusable text, its leg
calls fail) it reports a status and adds nothing, and the answer is the original query's.

A new technique: one settings field in `tribrid.config.TechniqueRegistry` and one class here,
registered in TECHNIQUES.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

import grpc

from tribrid import telemetry
from tribrid.config import (
    DOCUMENT_LANGUAGES,
    TECHNIQUE_NAMES,
    FusionConfig,
    HydeSettings,
    MultiQuerySettings,
    TechniqueSettings,
)
from tribrid.generation import GenerationClient, GenerationError
from tribrid.options import RequestError
from tribrid.v1 import common_pb2, fusion_pb2

log = logging.getLogger(__name__)

# (leg, query, budget_s) -> that leg's answer (a gateway LegOutcome: .status, .matches, .error).
LegSearch = Callable[[str, str, float], Awaitable["LegAnswer"]]


class LegAnswer(Protocol):
    """What the gateway's leg call returns, as far as techniques read it."""

    status: fusion_pb2.LegStatus.ValueType
    matches: list[common_pb2.ChunkMatch]
    error: str


@dataclass(slots=True)
class RankedList:
    """One extra ranked list: a leg searched with a generated query."""

    leg: str
    source: str  # "hyde", "multi_query:1", ...
    query: str
    weight_factor: float  # x the leg's weight
    matches: list[common_pb2.ChunkMatch] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.leg}:{self.source}"


@dataclass(slots=True)
class TechniqueResult:
    report: fusion_pb2.TechniqueReport
    lists: list[RankedList] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class TechniqueContext:
    request: common_pb2.SearchRequest
    enabled_legs: Sequence[str]
    leg_budget_s: float
    max_query_chars: int
    search: LegSearch


def _strip_fences(text: str) -> str:
    """A model's answer without a Markdown code fence around it."""
    fenced = re.fullmatch(r"\s*```[\w-]*\n(.*?)\n?```\s*", text, flags=re.DOTALL)
    return fenced.group(1) if fenced else text


class Technique(ABC):
    name: ClassVar[str]

    def __init__(self, settings: TechniqueSettings) -> None:
        self.settings = settings

    @abstractmethod
    def legs(self, ctx: TechniqueContext) -> list[str]:
        """The legs that search the generated queries (none: the technique is skipped)."""

    @abstractmethod
    def prompt(self, ctx: TechniqueContext) -> str:
        """What the model is asked."""

    @abstractmethod
    def parse(self, text: str, ctx: TechniqueContext) -> list[str]:
        """The queries to search with; GenerationError when the answer is unusable."""

    @abstractmethod
    def lists(self, queries: list[str], ctx: TechniqueContext) -> list[RankedList]:
        """The ranked lists to search: a leg and a generated query each."""


class Hyde(Technique):
    name = "hyde"
    settings: HydeSettings

    def legs(self, ctx: TechniqueContext) -> list[str]:
        return ["vector"] if "vector" in ctx.enabled_legs else []

    def prompt(self, ctx: TechniqueContext) -> str:
        passage = self.settings.passage
        if passage == "auto":
            languages = set(ctx.request.filters.languages)
            passage = "document" if languages and languages <= DOCUMENT_LANGUAGES else "code"
        template = self.settings.prompt_document if passage == "document" else self.settings.prompt_code
        return template.replace("{query}", ctx.request.query)

    def parse(self, text: str, ctx: TechniqueContext) -> list[str]:
        passage = _strip_fences(text).strip()
        if not passage:
            raise GenerationError("empty answer")
        return [passage[: ctx.max_query_chars]]

    def lists(self, queries: list[str], ctx: TechniqueContext) -> list[RankedList]:
        return [RankedList("vector", "hyde", queries[0], self.settings.weight_factor)]


class MultiQuery(Technique):
    name = "multi_query"
    settings: MultiQuerySettings

    def legs(self, ctx: TechniqueContext) -> list[str]:
        return list(ctx.enabled_legs)

    def prompt(self, ctx: TechniqueContext) -> str:
        return self.settings.prompt.replace("{num_queries}", str(self.settings.num_queries)).replace(
            "{query}", ctx.request.query
        )

    def parse(self, text: str, ctx: TechniqueContext) -> list[str]:
        try:
            answer = json.loads(_strip_fences(text))
        except ValueError:
            raise GenerationError("unusable answer: not a JSON array of queries") from None
        if isinstance(answer, dict) and len(answer) == 1:  # {"queries": [...]}
            answer = next(iter(answer.values()))
        if not isinstance(answer, list):
            raise GenerationError("unusable answer: not a JSON array of queries")
        seen = {ctx.request.query.strip().casefold()}
        variants = []
        for item in answer:
            if not isinstance(item, str) or item.strip().casefold() in seen:
                continue
            seen.add(item.strip().casefold())
            variants.append(item.strip()[: ctx.max_query_chars])
        if not variants:
            raise GenerationError("unusable answer: no query different from the original")
        return variants[: self.settings.num_queries]

    def lists(self, queries: list[str], ctx: TechniqueContext) -> list[RankedList]:
        return [
            RankedList(leg, f"multi_query:{n}", query, 1.0)
            for n, query in enumerate(queries, start=1)
            for leg in ctx.enabled_legs
        ]


TECHNIQUES: dict[str, type[Technique]] = {cls.name: cls for cls in (Hyde, MultiQuery)}
assert set(TECHNIQUES) == set(TECHNIQUE_NAMES), "every configured technique needs a class"


def requested(fcfg: FusionConfig, client: GenerationClient | None) -> list[Technique]:
    """The techniques this request runs (its merged `fusion.techniques`), or FAILED_PRECONDITION
    for one that cannot run."""
    chosen = []
    for name in fcfg.techniques:
        if client is None:
            raise RequestError(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"technique {name!r} needs a generation model: set generation.base_url "
                "(any OpenAI-compatible endpoint)",
            )
        settings: TechniqueSettings = getattr(fcfg.technique_settings, name)
        if not settings.enabled:
            raise RequestError(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"technique {name!r} is disabled (fusion.technique_settings.{name}.enabled)",
            )
        chosen.append(TECHNIQUES[name](settings))
    return chosen


_STATUS_NAMES = {
    fusion_pb2.TECHNIQUE_STATUS_OK: "ok",
    fusion_pb2.TECHNIQUE_STATUS_TIMEOUT: "timeout",
    fusion_pb2.TECHNIQUE_STATUS_ERROR: "error",
    fusion_pb2.TECHNIQUE_STATUS_SKIPPED: "skipped",
}


async def run(
    technique: Technique, client: GenerationClient, ctx: TechniqueContext, budget_s: float
) -> TechniqueResult:
    """The technique's ranked lists, within `budget_s`; on any failure none, and a status why."""
    report = fusion_pb2.TechniqueReport(technique=technique.name, budget_ms=max(budget_s, 0) * 1000)
    result = TechniqueResult(report)
    with telemetry.span(f"technique.{technique.name}", timeout_ms=report.budget_ms) as span:
        started = time.perf_counter()
        try:
            await _run(technique, client, ctx, budget_s, result)
        except Exception as err:  # a technique's own fault must not cost the answer either
            log.exception("technique %s failed", technique.name)
            result.lists.clear()
            report.status = fusion_pb2.TECHNIQUE_STATUS_ERROR
            report.error = f"{type(err).__name__}: {err}"
        report.latency_ms = (time.perf_counter() - started) * 1000
        status = _STATUS_NAMES[report.status]
        span.set_attribute("tribrid.status", status)
        telemetry.METRICS.technique_latency.labels(technique.name, status).observe(report.latency_ms / 1000)
        span.set_attribute("tribrid.hits", report.hits)
        if report.error:
            span.set_attribute("tribrid.error", report.error)
    return result


async def _run(
    technique: Technique,
    client: GenerationClient,
    ctx: TechniqueContext,
    budget_s: float,
    result: TechniqueResult,
) -> None:
    report = result.report
    legs = technique.legs(ctx)
    if not legs:
        report.status = fusion_pb2.TECHNIQUE_STATUS_SKIPPED
        report.error = "none of the legs it searches is enabled"
        return
    if budget_s <= 0:
        report.status = fusion_pb2.TECHNIQUE_STATUS_SKIPPED
        report.error = "no time left of the caller's deadline"
        return
    deadline = time.perf_counter() + budget_s
    try:
        queries, report.cached = await asyncio.wait_for(
            client.generate(
                technique.prompt(ctx), ctx.request.query, lambda text: technique.parse(text, ctx)
            ),
            timeout=budget_s,
        )
    except TimeoutError:
        report.status = fusion_pb2.TECHNIQUE_STATUS_TIMEOUT
        report.error = f"the model did not answer within the technique's budget of {budget_s * 1000:.0f} ms"
        return
    except GenerationError as err:
        report.status = fusion_pb2.TECHNIQUE_STATUS_ERROR
        report.error = str(err)
        return
    report.generated.extend(queries)
    lists = technique.lists(queries, ctx)
    left_s = min(ctx.leg_budget_s, deadline - time.perf_counter())
    if left_s <= 0:
        report.status = fusion_pb2.TECHNIQUE_STATUS_TIMEOUT
        report.error = "the model's answer left no time to search it"
        return
    answers = await asyncio.gather(*(ctx.search(ranked.leg, ranked.query, left_s) for ranked in lists))
    for ranked, answer in zip(lists, answers, strict=True):
        if answer.status == fusion_pb2.LEG_STATUS_OK:
            ranked.matches = answer.matches
            result.lists.append(ranked)
    report.hits = len({m.chunk_id for ranked in result.lists for m in ranked.matches})
    if result.lists:
        report.status = fusion_pb2.TECHNIQUE_STATUS_OK
        return
    timed_out = any(a.status == fusion_pb2.LEG_STATUS_TIMEOUT for a in answers)
    report.status = fusion_pb2.TECHNIQUE_STATUS_TIMEOUT if timed_out else fusion_pb2.TECHNIQUE_STATUS_ERROR
    report.error = "no leg answered its queries: " + "; ".join(
        f"{ranked.key}: {answer.error}" for ranked, answer in zip(lists, answers, strict=True)
    )
