"""The gateway's fan-out: every enabled leg in parallel, each under its own deadline, then fusion,
the per-file cap and final_k, then the optional graph-expansion stage."""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import asyncpg
import grpc
import numpy as np
from google.protobuf import descriptor_pool

from services.fusion import paging, techniques
from services.fusion.expansion import (
    Expanded,
    ExpansionSettings,
    FusedChunk,
    ReachedChunk,
    place,
    score_expanded,
)
from services.fusion.fuse import (
    Fused,
    Ranked,
    cap_per_file,
    confidence,
    document_context,
    keep_leg_order,
    normalize_weights,
    rrf,
    weighted,
)
from services.fusion.hedging import HedgedLeg, listed_addresses, name_and_port
from services.fusion.mmr import diversify
from services.fusion.rerank import Reranker, rerank
from services.fusion.techniques import RankedList, TechniqueContext, TechniqueResult
from tribrid import auth, telemetry, tls
from tribrid.config import FusionConfig, HedgingConfig, LimitsConfig, ServicesConfig
from tribrid.corpus_profile import CorpusProfile, CorpusProfiles
from tribrid.generation import GenerationClient
from tribrid.legs import BY_NAME, LEG_NAMES, LEGS, LegInfo
from tribrid.options import RequestError, invalid, merge_options, option_values
from tribrid.question import Reading, read
from tribrid.question.contract import KINDS, intent_value, to_proto
from tribrid.search_common import validate_search
from tribrid.stores.postgres import fetch_contents, fetch_contents_and_vectors
from tribrid.text import PROSE_LANGUAGES
from tribrid.v1 import common_pb2, fusion_options_pb2, fusion_pb2, graph_pb2, legs_pb2, reading_pb2

log = logging.getLogger(__name__)

# The RPC the expansion stage calls, on the leg whose service offers it.
EXPAND_METHOD = "ExpandContext"
_missing = [leg.name for leg in LEGS if leg.name not in common_pb2.SearchOptions.DESCRIPTOR.fields_by_name]
assert not _missing, f"SearchOptions has no field for the legs {_missing}"


def _offers(leg: LegInfo, method: str) -> bool:
    service = descriptor_pool.Default().FindServiceByName(leg.service)
    return method in service.methods_by_name


def channel_options(service: str) -> list[tuple[str, Any]]:
    """Long-lived channel settings: keepalive, and retries of UNAVAILABLE by gRPC's own retry policy."""
    service_config = {
        # spread calls over every address a DNS name resolves to (k8s headless services)
        "loadBalancingConfig": [{"round_robin": {}}],
        "methodConfig": [
            {
                "name": [{"service": service}],
                "retryPolicy": {
                    "maxAttempts": 3,
                    "initialBackoff": "0.01s",
                    "maxBackoff": "0.1s",
                    "backoffMultiplier": 2,
                    "retryableStatusCodes": ["UNAVAILABLE"],
                },
            }
        ],
    }
    return [
        ("grpc.service_config", json.dumps(service_config)),
        ("grpc.enable_retries", 1),
        *tls.CLIENT_KEEPALIVE,
        # A leg that went away is dialled again within a second (gRPC's backoff grows to 120 s):
        # `make faults` measured 1.2-2.9 s from a restarted leg's SERVING to the gateway using it.
        ("grpc.initial_reconnect_backoff_ms", 200),
        ("grpc.max_reconnect_backoff_ms", 1000),
    ]


@dataclass(slots=True)
class LegOutcome:
    leg: str
    status: fusion_pb2.LegStatus.ValueType
    latency_ms: float = 0.0
    budget_ms: float = 0.0
    matches: list[common_pb2.ChunkMatch] = field(default_factory=list)
    error: str = ""
    code: grpc.StatusCode | None = None
    coverage: float = 0.0  # SearchResponse.coverage (0: not reported)
    hedged: bool = False  # a second endpoint was asked


_STATUS_NAMES = {
    fusion_pb2.LEG_STATUS_OK: "ok",
    fusion_pb2.LEG_STATUS_TIMEOUT: "timeout",
    fusion_pb2.LEG_STATUS_ERROR: "error",
    fusion_pb2.LEG_STATUS_DISABLED: "disabled",
}


def _failed(outcome: LegOutcome, err: grpc.aio.AioRpcError) -> None:
    outcome.code = err.code()
    timed_out = err.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    outcome.status = fusion_pb2.LEG_STATUS_TIMEOUT if timed_out else fusion_pb2.LEG_STATUS_ERROR
    outcome.error = f"{err.code().name}: {err.details()}"


def _record(leg_span: Any, outcome: LegOutcome) -> None:
    """Span attributes and Prometheus metrics for one leg call."""
    status = _STATUS_NAMES[outcome.status]
    leg_span.set_attribute("tribrid.status", status)
    leg_span.set_attribute("tribrid.hits", len(outcome.matches))
    if outcome.error:
        leg_span.set_attribute("tribrid.error", outcome.error)
    metrics = telemetry.METRICS
    metrics.leg_requests.labels(outcome.leg, status).inc()
    metrics.leg_latency.labels(outcome.leg, status).observe(outcome.latency_ms / 1000)
    if outcome.status == fusion_pb2.LEG_STATUS_TIMEOUT:
        metrics.leg_timeouts.labels(outcome.leg).inc()


class LegClient:
    """One long-lived channel to one leg service: its `Search`, and `ExpandContext` if it has one;
    and, for hedged calls, a channel to each of its endpoints (services/fusion/hedging.py)."""

    def __init__(
        self,
        leg: LegInfo,
        address: str,
        services: ServicesConfig | None = None,
        hedging: HedgingConfig | None = None,
    ) -> None:
        self.leg = leg.name
        services = services or ServicesConfig()

        def make_channel(target: str, **options: Any) -> grpc.aio.Channel:
            return tls.channel(
                target,
                services,
                options=[*channel_options(leg.service), *options.items()],
                # no token forwarding here: each call passes auth.outgoing_metadata() itself
                interceptors=telemetry.client_interceptors(),
            )

        self.channel = make_channel(address)
        # a resolved pod's certificate names the leg's service, not the pod's address
        resolved = listed_addresses(address) is None
        tls_name = (
            {"grpc.ssl_target_name_override": name_and_port(address)[0]}
            if services.tls_ca_file is not None and resolved
            else {}
        )
        self.hedged = HedgedLeg(
            leg.service, address, hedging or HedgingConfig(), lambda target: make_channel(target, **tls_name)
        )
        self._search = self.channel.unary_unary(
            f"/{leg.service}/Search",
            request_serializer=common_pb2.SearchRequest.SerializeToString,
            response_deserializer=common_pb2.SearchResponse.FromString,
        )
        self._expand = (
            self.channel.unary_unary(
                f"/{leg.service}/{EXPAND_METHOD}",
                request_serializer=graph_pb2.ExpandContextRequest.SerializeToString,
                response_deserializer=common_pb2.SearchResponse.FromString,
            )
            if _offers(leg, EXPAND_METHOD)
            else None
        )

    @property
    def expands(self) -> bool:
        return self._expand is not None

    async def search(
        self, request: common_pb2.SearchRequest, budget_s: float, *, hedge: bool = False
    ) -> LegOutcome:
        outcome = LegOutcome(self.leg, fusion_pb2.LEG_STATUS_OK, budget_ms=budget_s * 1000)
        with telemetry.span(
            f"leg.{self.leg}", leg=self.leg, corpus=request.corpus_id, timeout_ms=budget_s * 1000
        ) as leg_span:
            started = time.perf_counter()
            try:
                if hedge:
                    response, outcome.hedged = await self.hedged.search(request, budget_s)
                    if outcome.hedged:
                        telemetry.METRICS.leg_hedges.labels(self.leg).inc()
                else:
                    # the legs check the caller's own token: a leg is no way around the gateway
                    response = await self._search(
                        request, timeout=budget_s, metadata=auth.outgoing_metadata()
                    )
                outcome.matches = list(response.matches)
                outcome.coverage = response.coverage
            except grpc.aio.AioRpcError as err:
                _failed(outcome, err)
            outcome.latency_ms = (time.perf_counter() - started) * 1000
            _record(leg_span, outcome)
        return outcome

    async def expand(self, request: graph_pb2.ExpandContextRequest, budget_s: float) -> LegOutcome:
        """The leg's ExpandContext (only for a leg that `expands`)."""
        assert self._expand is not None
        outcome = LegOutcome("expansion", fusion_pb2.LEG_STATUS_OK, budget_ms=budget_s * 1000)
        with telemetry.span(
            "leg.expansion", leg="expansion", corpus=request.corpus_id, timeout_ms=budget_s * 1000
        ) as leg_span:
            started = time.perf_counter()
            try:
                response = await self._expand(request, timeout=budget_s, metadata=auth.outgoing_metadata())
                outcome.matches = list(response.matches)
            except grpc.aio.AioRpcError as err:
                _failed(outcome, err)
            outcome.latency_ms = (time.perf_counter() - started) * 1000
            _record(leg_span, outcome)
        return outcome

    async def close(self) -> None:
        await self.channel.close()
        await self.hedged.close()


@dataclass(frozen=True, slots=True)
class FusionPlan:
    """One request's settings: the fusion section with its options, and the legs' weights."""

    cfg: FusionConfig
    enabled: dict[str, bool]
    # Normalized over the enabled legs; 0 for the others.
    weights: dict[str, float]
    reading: Reading = field(default_factory=lambda: Reading("mixed", None, ""))
    weights_reason: str = ""
    # The kind's weights are scaled by each leg's confidence once the legs answer.
    confidence_scaled: bool = False
    # The corpus's code share scaled the code legs' weights down (a corpus of documents): an
    # answer of the graph leg seeded by entity names the question holds replaces them.
    code_scaled: bool = False
    # The leg whose order of its answers the fused list keeps ("": none); see fuse.keep_leg_order.
    lead_leg: str = ""


def plan(
    cfg: FusionConfig,
    request: common_pb2.SearchRequest,
    corpus: CorpusProfile | None = None,
    reading: Reading | None = None,
) -> FusionPlan:
    """`corpus`: what the corpus holds (None: unknown, taken as code); `reading`: how the question
    was read with it (None: read here, `tribrid.question.read`).
    A leg of `fusion.code_legs` answers from code structure: a query kind's weight for it is kept
    whole while at least half the corpus's chunks are code (a repository with its docs), falls
    linearly below that, and is 0 for a corpus of documents; normalizing gives the rest to the
    other legs in the kind's proportions."""
    values = option_values(request.options.fusion, "options.fusion")
    fcfg = merge_options(cfg, values, "options.fusion")
    enabled = {leg: fcfg.leg(leg).enabled for leg in LEG_NAMES}
    weights = {leg: fcfg.leg(leg).weight for leg in LEG_NAMES}
    reading = read(request.query, corpus) if reading is None else reading
    kind = reading.kind
    weights_set = any("weight" in setting for setting in values.get("legs", {}).values())
    reason = ""
    scaled = False
    lead = ""
    code_scaled = False
    if fcfg.adaptive_weights and not weights_set:
        kind_weights = fcfg.query_kind_weights.get(kind)
        if kind_weights is not None:
            weights = {leg: kind_weights.get(leg, 0.0) for leg in LEG_NAMES}
            if corpus is not None:
                scaled_weights = dict(weights)
                reason = _scale_code_legs(scaled_weights, fcfg.code_legs, corpus, kind)
                # a kind that weighs only code legs keeps them on a corpus of documents: scaled to
                # nothing, the answer would have no leg to come from
                if sum(scaled_weights[leg] for leg in LEG_NAMES if enabled[leg]) > 0:
                    weights = scaled_weights
                else:
                    reason = ""
                code_scaled = bool(reason)
            scaled = kind in fcfg.confidence_kinds and fcfg.method != "rrf" and fcfg.confidence_power > 0
            lead = fcfg.lead_legs.get(kind, "") if fcfg.method != "rrf" else ""
    on = [leg for leg in LEG_NAMES if enabled[leg]]
    if sum(weights[leg] for leg in on) <= 0:
        raise invalid(f"options.fusion.legs: the enabled legs' weights ({', '.join(on)}) sum to 0")
    return FusionPlan(
        fcfg,
        enabled,
        normalize_weights({leg: weights[leg] for leg in on})
        | {leg: 0.0 for leg in LEG_NAMES if leg not in on},
        reading=reading,
        weights_reason=reason,
        confidence_scaled=scaled,
        lead_leg=lead if enabled.get(lead, False) else "",
        code_scaled=code_scaled,
    )


def named_entities(graph: Sequence[common_pb2.ChunkMatch]) -> list[str]:
    """The entities of an imported graph that a graph-leg answer started from by an exact name
    match, in rank order. Only imported ones: on corpora whose only entities are the recogniser's
    (the FAQ sets), trusting the graph on every name it found cost faq-perl 0.05 nDCG@10."""
    seeds: dict[str, None] = {}
    for match in graph:
        for explain in match.explain:
            graph_path = explain.graph
            if graph_path.seed_match == "exact" and graph_path.seed_imported and graph_path.seed_entity:
                seeds.setdefault(graph_path.seed_entity, None)
    return list(seeds)


def entity_plan(fusion_plan: FusionPlan, graph: Sequence[common_pb2.ChunkMatch] | None) -> FusionPlan:
    """The plan for a question that names entities of a corpus of documents: `entity_weights` over
    the enabled legs in place of the kind's (which the corpus's prose scaled the graph out of), then
    scaled by each leg's confidence as usual, when the graph leg's answer starts from names the
    question holds; else the plan as it was."""
    if not fusion_plan.code_scaled or not graph:
        return fusion_plan
    names = named_entities(graph)
    wanted = fusion_plan.cfg.entity_weights
    on = {leg: wanted.get(leg, 0.0) for leg in LEG_NAMES if fusion_plan.enabled[leg]}
    if not names or sum(on.values()) <= 0:
        return fusion_plan
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return replace(
        fusion_plan,
        weights=normalize_weights(on) | {leg: 0.0 for leg in LEG_NAMES if leg not in on},
        weights_reason=f"the question names entities of the corpus ({shown}): the entity weights",
        confidence_scaled=fusion_plan.cfg.confidence_power > 0,
    )


def confident_weights(
    fusion_plan: FusionPlan,
    answered: Mapping[str, Sequence[float]],
    depth: int,
    coverage: Mapping[str, float] | None = None,
) -> tuple[dict[str, float], str]:
    """The plan's weights times each answering leg's confidence (`fuse.confidence` of its scores
    among the `depth` it was asked for, times the share of the question and of its answers it
    could read where it says: `coverage`) to `confidence_power`, normalized, and what was done;
    the plan's own when it asks for no scaling or no leg stands out."""
    weights = dict(fusion_plan.weights)
    if not fusion_plan.confidence_scaled:
        return weights, fusion_plan.weights_reason
    power = fusion_plan.cfg.confidence_power
    read = {leg: share for leg, share in (coverage or {}).items() if 0 < share < 1}
    conf = {
        leg: confidence(scores, depth) * read.get(leg, 1.0)
        for leg, scores in answered.items()
        if weights.get(leg, 0.0) > 0
    }
    scaled = {leg: weights[leg] * conf[leg] ** power for leg in conf}
    if sum(scaled.values()) <= 0:
        return weights, fusion_plan.weights_reason
    said = ", ".join(
        f"{leg} {conf[leg]:.2f}" + (f" (reads {read[leg]:.0%} of what it compares)" if leg in read else "")
        for leg in LEG_NAMES
        if leg in conf
    )
    reason = "; ".join(
        r
        for r in (fusion_plan.weights_reason, f"scaled by each leg's confidence (top score's z): {said}")
        if r
    )
    return normalize_weights(scaled) | {leg: 0.0 for leg in LEG_NAMES if leg not in scaled}, reason


def _scale_code_legs(
    weights: dict[str, float], code_legs: list[str], corpus: CorpusProfile, kind: str
) -> str:
    """Scale the weights of the legs that answer from code by the corpus's code share (whole from
    one half up); say so when any weight changed."""
    scale = min(1.0, 2 * corpus.code_share)
    scaled = [leg for leg in code_legs if weights.get(leg, 0.0) > 0]
    if scale >= 1.0 or not scaled:
        return ""
    for leg in scaled:
        weights[leg] *= scale
    return (
        f"corpus is {corpus.prose_share:.0%} prose: {', '.join(scaled)} answer from code, so the"
        f" {kind} kind's weight for them is scaled by {scale:.2f}"
    )


class Gateway:
    def __init__(
        self,
        cfg: FusionConfig,
        limits: LimitsConfig,
        legs: dict[str, LegClient],
        pool: asyncpg.Pool,
        generation: GenerationClient | None = None,
        reranker: Reranker | None = None,
    ) -> None:
        """`pool`: where the final matches' content is read, once per request; `generation`:
        the model the query techniques call (None: they are unavailable); `reranker`: the
        rerank stage's endpoint (None: the stage is unavailable)."""
        self._cfg = cfg
        self._limits = limits
        self._legs = legs
        self._pool = pool
        self._generation = generation
        self._reranker = reranker
        self._page_key = cfg.page_token_key.get_secret_value().encode() or secrets.token_bytes(32)
        self._profiles = CorpusProfiles(pool)
        self._expander = next((client for client in legs.values() if client.expands), None)

    @classmethod
    def connect(
        cls,
        cfg: FusionConfig,
        limits: LimitsConfig,
        services: ServicesConfig,
        pool: asyncpg.Pool,
        generation: GenerationClient | None = None,
        reranker: Reranker | None = None,
    ) -> Gateway:
        legs = {leg.name: LegClient(leg, services.address(leg.name), services, cfg.hedging) for leg in LEGS}
        return cls(cfg, limits, legs, pool, generation, reranker)

    async def close(self) -> None:
        await asyncio.gather(*(c.close() for c in self._legs.values()))
        if self._generation is not None:
            await self._generation.close()
        if self._reranker is not None:
            await self._reranker.close()

    async def search(
        self, request: common_pb2.SearchRequest, remaining_s: float | None
    ) -> fusion_pb2.FusionSearchResponse:
        started = time.perf_counter()
        with telemetry.span("fusion.search", corpus=request.corpus_id) as search_span:
            try:
                reply = await self._search(request, remaining_s, started)
            except RequestError as err:
                search_span.set_attribute("tribrid.status", err.code.name)
                telemetry.METRICS.gateway_latency.labels(err.code.name).observe(time.perf_counter() - started)
                raise
            search_span.set_attribute("tribrid.status", "OK")
            search_span.set_attribute("tribrid.hits", len(reply.matches))
            search_span.set_attribute("tribrid.partial", reply.partial)
            telemetry.METRICS.gateway_latency.labels("OK").observe(time.perf_counter() - started)
            if reply.partial:
                telemetry.METRICS.partial.inc()
            return reply

    async def _search(
        self, request: common_pb2.SearchRequest, remaining_s: float | None, started: float
    ) -> fusion_pb2.FusionSearchResponse:
        params = validate_search(request, self._cfg.final_k, self._limits)
        offset = paging.offset_of(request, self._page_key)
        corpus = await self._corpus_profile(request.corpus_id)
        reading = read(params.query, corpus)
        fusion_plan = plan(self._cfg, request, corpus, reading)
        fcfg = fusion_plan.cfg
        budget_s = fcfg.leg_timeout_ms / 1000
        if remaining_s is not None:
            budget_s = min(budget_s, remaining_s - fcfg.merge_reserve_ms / 1000)
            if budget_s <= 0:
                raise RequestError(grpc.StatusCode.DEADLINE_EXCEEDED, "deadline too short to query any leg")
        enabled = [leg for leg in LEG_NAMES if fusion_plan.enabled[leg]]
        chosen = techniques.requested(fcfg, self._generation)
        if fcfg.enable_rerank and self._reranker is None:
            raise RequestError(
                grpc.StatusCode.FAILED_PRECONDITION,
                "fusion.enable_rerank needs a reranker: set rerank.base_url (any /rerank endpoint: "
                "Cohere, Jina, TEI, vLLM, Infinity) or rerank.model_path (a local cross-encoder)",
            )

        # Legs return more candidates than the fused answer needs: fusion works on their union.
        top_k = min(max(params.top_k, fcfg.candidates_per_leg), self._limits.max_top_k)
        # The original query's leg calls start now and never wait for a technique's model.
        read_once = to_proto(reading)
        legs_done = asyncio.gather(
            *(
                self._legs[leg].search(
                    _leg_request(request, leg, top_k, reading=read_once), budget_s, hedge=fcfg.enable_hedging
                )
                for leg in enabled
            )
        )
        technique_tasks = self._start_techniques(
            chosen, fcfg, request, enabled, top_k, budget_s, remaining_s, started
        )
        try:
            outcomes = await legs_done
        except BaseException:  # the call was cancelled: so are its techniques
            for task in technique_tasks:
                task.cancel()
            raise
        by_leg = {o.leg: o for o in outcomes}
        answered = {o.leg: o for o in outcomes if o.status == fusion_pb2.LEG_STATUS_OK}
        caller_error = next((o for o in outcomes if o.code in _CALLER_ERRORS), None)
        if caller_error is not None or not answered:
            for task in technique_tasks:
                task.cancel()
        if caller_error is not None:  # the request is bad, not the leg
            raise RequestError(caller_error.code, caller_error.error.split(": ", 1)[-1])  # type: ignore[arg-type]
        reports = [self._report(leg, by_leg.get(leg)) for leg in LEG_NAMES]
        if not answered:
            reasons = "; ".join(f"{o.leg}: {o.error}" for o in outcomes)
            raise RequestError(grpc.StatusCode.UNAVAILABLE, f"no leg answered ({reasons})")
        results: list[TechniqueResult] = list(await asyncio.gather(*technique_tasks))
        technique_lists = [ranked for result in results for ranked in result.lists]
        answered, technique_lists = _above_floors(fcfg, answered, technique_lists)

        merge_started = time.perf_counter()
        first_seen = _first_seen(answered, technique_lists)
        graph = answered.get("graph")
        fusion_plan = entity_plan(fusion_plan, graph.matches if graph is not None else None)
        weights, weights_reason = confident_weights(
            fusion_plan,
            {leg: [m.score for m in o.matches] for leg, o in answered.items()},
            top_k,
            {leg: o.coverage for leg, o in answered.items()},
        )
        fused = self._fuse(fusion_plan.cfg, weights, answered, technique_lists)
        fused = in_document_context(fcfg, fused, first_seen, corpus)
        if fusion_plan.lead_leg in answered:
            fused = keep_leg_order(fused, fusion_plan.lead_leg)
            weights_reason = "; ".join(
                r
                for r in (weights_reason, f"the {fusion_plan.lead_leg} leg's order of its answers kept")
                if r
            )
        fused = cap_per_file(fused, lambda cid: first_seen[cid].file_path, fcfg.max_chunks_per_file)
        if reading.structural_intent in DEFINITION_INTENTS:
            fused = [item for item in fused if not is_module_head(first_seen[item.item_id])]
        if fcfg.min_score is not None:
            fused = [item for item in fused if item.score >= fcfg.min_score]
        # the stages after fusion work on more than a page (the MMR pool, the rerank window); they
        # reorder and add to it, so their answers are not paged
        staged = fcfg.enable_mmr or fcfg.enable_rerank or fcfg.enable_expansion
        depth = max(
            params.top_k,
            fcfg.mmr_pool if fcfg.enable_mmr else 0,
            fcfg.rerank_candidates if fcfg.enable_rerank else 0,
        )
        matches = self._to_matches(fused[offset : offset + depth], answered, first_seen, technique_lists)
        page_end = offset + params.top_k
        paged = not staged and page_end < len(fused)
        next_page = paging.next_token(request, page_end, self._page_key) if paged else ""
        telemetry.METRICS.fusion_time.observe(time.perf_counter() - merge_started)
        if staged:
            matches = await self._stages(
                request, params.query, params.top_k, fcfg, matches, reports, remaining_s, started
            )
        await self._fill_content(request.corpus_id, matches, fcfg.leg_timeout_ms / 1000)
        return fusion_pb2.FusionSearchResponse(
            matches=matches,
            legs=reports,
            partial=len(answered) < len(enabled),
            took_ms=(time.perf_counter() - started) * 1000,
            fusion_method=FUSION_METHODS[fcfg.method],
            query_kind=KINDS[reading.kind],
            query_intent=intent_value(reading.structural_intent),
            weights=weights,
            techniques=[result.report for result in results],
            weights_reason=weights_reason,
            next_page_token=next_page,
        )

    async def _stages(
        self,
        request: common_pb2.SearchRequest,
        query: str,
        top_k: int,
        fcfg: FusionConfig,
        matches: list[common_pb2.ChunkMatch],
        reports: list[fusion_pb2.LegReport],
        remaining_s: float | None,
        started: float,
    ) -> list[common_pb2.ChunkMatch]:
        """The stages after fusion, in order: diversity (MMR), rerank, then graph expansion; each
        appends its report. Returns the answer's matches (`top_k`, and what expansion added)."""
        if fcfg.enable_mmr:
            mmr_started = time.perf_counter()
            vectors = await self._fill_content(
                request.corpus_id, matches, fcfg.leg_timeout_ms / 1000, vectors=True
            )
            matches = diversify(matches, vectors, fcfg.mmr_lambda)
            reports.append(
                fusion_pb2.LegReport(
                    leg=legs_pb2.LEG_MMR,
                    status=fusion_pb2.LEG_STATUS_OK,
                    latency_ms=(time.perf_counter() - mmr_started) * 1000,
                    hits=len(matches),
                )
            )
        if fcfg.enable_rerank:
            assert self._reranker is not None  # checked before the legs were called
            del matches[max(top_k, fcfg.rerank_candidates) :]
            await self._fill_content(request.corpus_id, matches, fcfg.leg_timeout_ms / 1000)
            rerank_s = fcfg.rerank_timeout_ms / 1000
            if remaining_s is not None:
                rerank_s = min(
                    rerank_s, remaining_s - (time.perf_counter() - started) - fcfg.merge_reserve_ms / 1000
                )
            report, matches = await rerank(self._reranker, query, matches, rerank_s)
            reports.append(report)
        del matches[top_k:]
        if fcfg.enable_expansion:
            elapsed_s = time.perf_counter() - started
            left_s = None if remaining_s is None else remaining_s - elapsed_s
            report, matches = await self._expand(request, fcfg, matches, left_s)
            reports.append(report)
        return matches

    async def _corpus_profile(self, corpus_id: str) -> CorpusProfile | None:
        """What the corpus holds, for the weights; unknown (None: weighed as code) when the store
        cannot say in a leg's time: the legs then say what is wrong with the store."""
        try:
            async with asyncio.timeout(self._cfg.leg_timeout_ms / 1000):
                return await self._profiles.get(corpus_id)
        except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as err:
            log.warning("corpus profile unreadable", extra={"corpus": corpus_id, "error": repr(err)})
            return None

    async def _fill_content(
        self, corpus_id: str, matches: list[common_pb2.ChunkMatch], timeout_s: float, *, vectors: bool = False
    ) -> dict[str, np.ndarray]:
        """The content of the matches that have none yet (a stage after fusion reads it first), in
        one query, waited for at most a leg's time; with `vectors`, of every match, with their
        embeddings (returned by chunk id). A match whose chunk a commit removed is dropped. A store
        that fails or hangs makes the answer UNAVAILABLE, not an internal error. (The caller's own
        deadline is gRPC's to enforce: cutting this read to what the legs left of it failed answers
        the caller could still receive, on a busy machine.)"""
        wanted = list(matches) if vectors else [m for m in matches if not m.content]
        if not wanted:
            return {}
        ids = [m.chunk_id for m in wanted]
        rows: Mapping[str, tuple[str, np.ndarray | None]]
        try:
            async with asyncio.timeout(timeout_s):
                if vectors:
                    rows = await fetch_contents_and_vectors(self._pool, corpus_id, ids)
                else:
                    rows = {
                        cid: (text, None)
                        for cid, text in (await fetch_contents(self._pool, corpus_id, ids)).items()
                    }
        except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as err:
            raise RequestError(
                grpc.StatusCode.UNAVAILABLE,
                f"the answers' content could not be read: {type(err).__name__} {err}",
            ) from None
        asked = {id(m) for m in wanted}
        matches[:] = [m for m in matches if id(m) not in asked or m.chunk_id in rows]
        for match in matches:
            if match.chunk_id in rows:
                match.content = rows[match.chunk_id][0]
        return {cid: vector for cid, (_, vector) in rows.items() if vector is not None}

    def _start_techniques(
        self,
        chosen: list[techniques.Technique],
        fcfg: FusionConfig,
        request: common_pb2.SearchRequest,
        enabled: list[str],
        top_k: int,
        leg_budget_s: float,
        remaining_s: float | None,
        started: float,
    ) -> list[asyncio.Task[TechniqueResult]]:
        """One task per technique, each under its own budget inside the caller's deadline."""
        if not chosen:
            return []
        assert self._generation is not None  # techniques.requested checked it

        async def search(leg: str, query: str, budget: float) -> LegOutcome:
            return await self._legs[leg].search(_leg_request(request, leg, top_k, query), budget)

        ctx = TechniqueContext(request, enabled, leg_budget_s, self._limits.max_query_chars, search)
        tasks = []
        for technique in chosen:
            budget_s = technique.settings.timeout_ms / 1000
            if remaining_s is not None:
                left_s = remaining_s - (time.perf_counter() - started) - fcfg.merge_reserve_ms / 1000
                budget_s = min(budget_s, left_s)
            tasks.append(asyncio.create_task(techniques.run(technique, self._generation, ctx, budget_s)))
        return tasks

    async def _expand(
        self,
        request: common_pb2.SearchRequest,
        fcfg: FusionConfig,
        matches: list[common_pb2.ChunkMatch],
        left_s: float | None,
    ) -> tuple[fusion_pb2.LegReport, list[common_pb2.ChunkMatch]]:
        """Graph expansion (services/fusion/expansion.py): the chunks ExpandContext reaches from
        the top N fused chunks, scored by the hybrid and placed among or after the fused matches.
        Returns the stage's report and the whole ranked answer."""
        budget_s = fcfg.expansion_timeout_ms / 1000
        report = fusion_pb2.LegReport(leg=legs_pb2.LEG_EXPANSION, budget_ms=budget_s * 1000)
        top = matches[: fcfg.expansion_top_n]
        if not top:
            report.status = fusion_pb2.LEG_STATUS_OK
            return report, matches
        if left_s is not None and left_s - fcfg.merge_reserve_ms / 1000 < budget_s:
            report.status = fusion_pb2.LEG_STATUS_TIMEOUT
            report.error = (
                f"skipped: {max(left_s, 0) * 1000:.0f} ms left of the deadline, "
                f"below the expansion budget of {budget_s * 1000:.0f} ms"
            )
            telemetry.METRICS.leg_requests.labels("expansion", "skipped").inc()
            return report, matches
        if self._expander is None:
            report.status = fusion_pb2.LEG_STATUS_ERROR
            report.error = f"no leg service offers {EXPAND_METHOD}"
            return report, matches
        expand_request = graph_pb2.ExpandContextRequest(
            corpus_id=request.corpus_id,
            chunk_ids=[m.chunk_id for m in top],
            max_hops=fcfg.expansion_max_hops,
            # room for the fused chunks it may reach again, within what a leg may be asked
            top_k=min(fcfg.expansion_max_chunks + len(matches), self._limits.max_top_k),
        )
        outcome = await self._expander.expand(expand_request, budget_s)
        report.status = outcome.status
        report.latency_ms = outcome.latency_ms
        report.error = outcome.error
        if outcome.status != fusion_pb2.LEG_STATUS_OK:
            return report, matches
        settings = ExpansionSettings(
            top_n=fcfg.expansion_top_n,
            chunk_weight=fcfg.expansion_chunk_weight,
            min_score=fcfg.expansion_min_score,
            max_chunks=fcfg.expansion_max_chunks,
            placement=fcfg.expansion_placement,
            max_per_file=fcfg.max_chunks_per_file,
        )
        fused = [FusedChunk(m.chunk_id, m.score, m.file_path, m.symbol) for m in matches]
        reached = [_reached(m, i) for i, m in enumerate(outcome.matches)]
        expanded = score_expanded(fused, reached, settings)
        report.hits = len(expanded)
        by_id = {m.chunk_id: m for m in matches}
        ranked = []
        for item in place(fused, expanded, settings.placement):
            if item.expanded is None:
                ranked.append(by_id[item.chunk_id])
            else:
                answer = outcome.matches[item.expanded.reached.position]
                ranked.append(_expanded_match(answer, item.expanded))
        return report, ranked

    @staticmethod
    def _report(leg: str, outcome: LegOutcome | None) -> fusion_pb2.LegReport:
        if outcome is None:
            return fusion_pb2.LegReport(leg=BY_NAME[leg].value, status=fusion_pb2.LEG_STATUS_DISABLED)
        return fusion_pb2.LegReport(
            leg=BY_NAME[leg].value,
            status=outcome.status,
            latency_ms=outcome.latency_ms,
            hits=len(outcome.matches),
            error=outcome.error,
            budget_ms=outcome.budget_ms,
            hedged=outcome.hedged,
        )

    @staticmethod
    def _fuse(
        cfg: FusionConfig,
        leg_weights: Mapping[str, float],
        answered: dict[str, LegOutcome],
        extra: Sequence[RankedList] = (),
    ) -> list[Fused]:
        """The legs' lists by leg name and the techniques' by `leg:source`, each weighing as its leg
        (times the technique's factor): with no technique, plain (weighted) RRF over the legs."""
        ranked = {leg: [Ranked(m.chunk_id, m.score) for m in o.matches] for leg, o in answered.items()}
        weights = {leg: leg_weights[leg] for leg in answered}
        for extra_list in extra:
            ranked[extra_list.key] = [Ranked(m.chunk_id, m.score) for m in extra_list.matches]
            weights[extra_list.key] = leg_weights[extra_list.leg] * extra_list.weight_factor
        if sum(weights.values()) <= 0:  # only zero-weight legs answered: rank them equally
            weights = dict.fromkeys(ranked, 1.0)
        if cfg.method == "rrf":
            return rrf(ranked, weights, cfg.rrf_k)
        return weighted(ranked, weights, cfg.normalization)

    @staticmethod
    def _to_matches(
        fused: list[Fused],
        answered: dict[str, LegOutcome],
        first_seen: dict[str, common_pb2.ChunkMatch] | None = None,
        extra: Sequence[RankedList] = (),
    ) -> list[common_pb2.ChunkMatch]:
        """Fused items as matches; explain: one entry per answering leg (rank 0 where absent),
        then one per technique list that holds the chunk, naming its source and query."""
        first_seen = first_seen if first_seen is not None else _first_seen(answered, extra)
        # each list's matches by key: an item's rank in a list is its place there (1-based), so
        # its detail is read from that match alone, not by scanning every candidate's message
        lists = {leg: o.matches for leg, o in answered.items()} | {r.key: r.matches for r in extra}
        extra_by_key = {ranked.key: ranked for ranked in extra}
        order = [leg for leg in LEG_NAMES if leg in answered] + list(extra_by_key)
        matches = []
        for item in fused:
            match = common_pb2.ChunkMatch()
            match.CopyFrom(first_seen[item.item_id])
            best = min(
                (key for key, c in item.contributions.items() if c.rank),
                key=lambda key: (item.contributions[key].rank, key in extra_by_key, order.index(key)),
            )
            match.score = item.score
            match.document_context = item.context
            match.leg = BY_NAME[extra_by_key[best].leg if best in extra_by_key else best].value
            match.expanded = False
            del match.explain[:]
            for key in order:
                c = item.contributions.get(key)
                if c is None or (key in extra_by_key and not c.rank):
                    continue
                source = extra_by_key.get(key)
                listed = lists[key][c.rank - 1] if c.rank else None
                # added in place: a LegExplain built apart is built again by append's copy
                explain = match.explain.add(
                    leg=BY_NAME[source.leg if source else key].value,
                    rank=c.rank,
                    raw_score=c.raw_score,
                    normalized_score=c.normalized,
                    contribution=c.contribution,
                    detail=listed.explain[0].detail if listed is not None and listed.explain else "",
                )
                if source:
                    explain.source = source.source
                    explain.source_query = source.query
            matches.append(match)
        return matches


FUSION_METHODS = {
    "rrf": fusion_options_pb2.FUSION_METHOD_RRF,
    "weighted": fusion_options_pb2.FUSION_METHOD_WEIGHTED,
}

# Structural questions answered by definitions (not by modules, as "what imports X" is).
DEFINITION_INTENTS = frozenset(("callers", "callees", "members", "subclasses", "bases"))


def in_document_context(
    fcfg: FusionConfig,
    fused: list[Fused],
    first_seen: Mapping[str, common_pb2.ChunkMatch],
    corpus: CorpusProfile | None,
) -> list[Fused]:
    """`fuse.document_context` over the prose chunks, a document being its file. Its share falls
    linearly from a corpus of documents to none at half code: in a code base with its docs, a
    page's sections would crowd out the definitions they document (click with its docs lost
    0.03 nDCG@10 with the whole share), as the code legs fade the other way (`_scale_code_legs`)."""
    prose = corpus.prose_share if corpus is not None else 0.0
    share = fcfg.document_context * max(0.0, 2 * prose - 1)

    def document_of(chunk_id: str) -> str | None:
        match = first_seen[chunk_id]
        return match.file_path if match.language in PROSE_LANGUAGES else None

    return document_context(fused, document_of, share)


def is_module_head(match: common_pb2.ChunkMatch) -> bool:
    """A file's first lines (its imports, its docstring): they name X without calling, defining
    or extending it, so they answer no question about definitions."""
    return match.kind == "module" and match.start_line == 1


def _first_seen(
    answered: dict[str, LegOutcome], extra: Sequence[RankedList] = ()
) -> dict[str, common_pb2.ChunkMatch]:
    """Each chunk's match as the first answering leg (in the legs' order) returned it, then the
    techniques' lists for chunks only they found."""
    first: dict[str, common_pb2.ChunkMatch] = {}
    for leg in LEG_NAMES:
        if leg in answered:
            for m in answered[leg].matches:
                first.setdefault(m.chunk_id, m)
    for ranked in extra:
        for m in ranked.matches:
            first.setdefault(m.chunk_id, m)
    return first


# A leg answering these says the request is wrong (bad options, an unknown corpus), not the leg.
_CALLER_ERRORS = frozenset({grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND})


def _above_floors(
    fcfg: FusionConfig, answered: dict[str, LegOutcome], lists: list[RankedList]
) -> tuple[dict[str, LegOutcome], list[RankedList]]:
    """Each leg's matches, and its technique lists', at or above the leg's `min_score`."""
    floors = {leg: fcfg.leg(leg).min_score for leg in LEG_NAMES}
    if all(floor is None for floor in floors.values()):
        return answered, lists

    def kept(leg: str, matches: list[common_pb2.ChunkMatch]) -> list[common_pb2.ChunkMatch]:
        floor = floors[leg]
        return matches if floor is None else [m for m in matches if m.score >= floor]

    answered = {leg: replace(o, matches=kept(leg, o.matches)) for leg, o in answered.items()}
    lists = [replace(ranked, matches=kept(ranked.leg, ranked.matches)) for ranked in lists]
    return answered, lists


def _leg_request(
    request: common_pb2.SearchRequest,
    leg: str,
    top_k: int,
    query: str | None = None,
    reading: reading_pb2.QueryReading | None = None,
) -> common_pb2.SearchRequest:
    """What one leg is asked: the query (or a technique's), filters and `top_k` candidates, with
    only its own options; and the original query's reading (a technique's query is read by the
    leg)."""
    leg_request = common_pb2.SearchRequest(
        corpus_id=request.corpus_id,
        query=request.query if query is None else query,
        top_k=top_k,
        filters=request.filters,
        reading=reading,
    )
    if request.options.HasField(leg):  # type: ignore[arg-type]
        getattr(leg_request.options, leg).CopyFrom(getattr(request.options, leg))
    return leg_request


def _reached(match: common_pb2.ChunkMatch, position: int) -> ReachedChunk:
    """An ExpandContext answer as the stage scores it (without provenance: a direct neighbour of
    an unknown source, see expansion.source_chunk)."""
    graph = match.explain[0].graph if match.explain else common_pb2.GraphProvenance()
    return ReachedChunk(
        match.chunk_id, match.score, graph.seed_entity, graph.hops or 1, match.file_path, position
    )


def _expanded_match(answer: common_pb2.ChunkMatch, item: Expanded) -> common_pb2.ChunkMatch:
    """The answer's match for an expanded chunk; explain as documented on LegExplain."""
    match = common_pb2.ChunkMatch()
    match.CopyFrom(answer)
    match.score = item.score
    match.leg = legs_pb2.LEG_EXPANSION
    match.expanded = True
    match.expansion_hops = item.reached.depth
    explain = common_pb2.LegExplain(
        leg=legs_pb2.LEG_EXPANSION,
        rank=item.rank,
        raw_score=item.graph_score,
        normalized_score=item.chunk_score,
        contribution=item.hybrid,
        source=item.source_chunk_id,
    )
    if answer.explain:
        explain.detail = answer.explain[0].detail
        explain.graph.CopyFrom(answer.explain[0].graph)
    if not explain.graph.graph_score:  # a graph leg that scores only the match: its score
        explain.graph.graph_score = answer.score
    del match.explain[:]
    match.explain.append(explain)
    return match
