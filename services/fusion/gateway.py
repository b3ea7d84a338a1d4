"""The gateway's fan-out: every enabled leg in parallel, each under its own deadline, then fusion,
the per-file cap and final_k, then the optional graph-expansion stage."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import grpc

from services.fusion.fuse import (
    Fused,
    Normalization,
    Ranked,
    cap_per_file,
    normalize_weights,
    rrf,
    weighted,
)
from tribrid import telemetry
from tribrid.config import TriBridConfig
from tribrid.query_kind import classify_query
from tribrid.search_common import RequestError, invalid, override, validate_search
from tribrid.v1 import common_pb2, fusion_pb2, graph_pb2, graph_pb2_grpc, sparse_pb2_grpc, vector_pb2_grpc

LEGS: dict[str, common_pb2.Leg.ValueType] = {
    "vector": common_pb2.LEG_VECTOR,
    "sparse": common_pb2.LEG_SPARSE,
    "graph": common_pb2.LEG_GRAPH,
}
_SERVICE_NAMES = {"vector": "VectorSearch", "sparse": "SparseSearch", "graph": "GraphSearch"}
_STUBS: dict[str, Callable[[grpc.aio.Channel], Any]] = {
    "vector": vector_pb2_grpc.VectorSearchStub,
    "sparse": sparse_pb2_grpc.SparseSearchStub,
    "graph": graph_pb2_grpc.GraphSearchStub,
}


def channel_options(service: str) -> list[tuple[str, Any]]:
    """Long-lived channel settings: keepalive, and retries of UNAVAILABLE by gRPC's own retry policy."""
    service_config = {
        # spread calls over every address a DNS name resolves to (k8s headless services)
        "loadBalancingConfig": [{"round_robin": {}}],
        "methodConfig": [
            {
                "name": [{"service": f"tribrid.v1.{service}"}],
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
        ("grpc.keepalive_time_ms", 30_000),
        ("grpc.keepalive_timeout_ms", 10_000),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.max_pings_without_data", 0),
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
    """One long-lived channel to one leg service."""

    def __init__(self, leg: str, address: str) -> None:
        self.leg = leg
        self.channel = grpc.aio.insecure_channel(
            address,
            options=channel_options(_SERVICE_NAMES[leg]),
            interceptors=telemetry.client_interceptors(),
        )
        self._stub = _STUBS[leg](self.channel)

    async def search(self, request: common_pb2.SearchRequest, budget_s: float) -> LegOutcome:
        outcome = LegOutcome(self.leg, fusion_pb2.LEG_STATUS_OK, budget_ms=budget_s * 1000)
        with telemetry.span(
            f"leg.{self.leg}", leg=self.leg, corpus=request.corpus_id, timeout_ms=budget_s * 1000
        ) as leg_span:
            started = time.perf_counter()
            try:
                response = await self._stub.Search(request, timeout=budget_s)
                outcome.matches = list(response.matches)
            except grpc.aio.AioRpcError as err:
                _failed(outcome, err)
            outcome.latency_ms = (time.perf_counter() - started) * 1000
            _record(leg_span, outcome)
        return outcome

    async def expand(self, request: graph_pb2.ExpandContextRequest, budget_s: float) -> LegOutcome:
        """GraphSearch/ExpandContext (graph leg's channel only)."""
        outcome = LegOutcome("expansion", fusion_pb2.LEG_STATUS_OK, budget_ms=budget_s * 1000)
        with telemetry.span(
            "leg.expansion", leg="expansion", corpus=request.corpus_id, timeout_ms=budget_s * 1000
        ) as leg_span:
            started = time.perf_counter()
            try:
                stub = graph_pb2_grpc.GraphSearchStub(self.channel)
                response = await stub.ExpandContext(request, timeout=budget_s)
                outcome.matches = list(response.matches)
            except grpc.aio.AioRpcError as err:
                _failed(outcome, err)
            outcome.latency_ms = (time.perf_counter() - started) * 1000
            _record(leg_span, outcome)
        return outcome

    async def close(self) -> None:
        await self.channel.close()


@dataclass(frozen=True, slots=True)
class FusionPlan:
    """The request's settings after applying overrides to the configured defaults."""

    enabled: dict[str, bool]
    weights: dict[str, float]
    method: str
    normalization: Normalization
    rrf_k: float
    leg_timeout_s: float
    max_chunks_per_file: int = 0
    enable_expansion: bool = False
    expansion_top_n: int = 5
    query_kind: str = "mixed"


def plan(cfg: TriBridConfig, request: common_pb2.SearchRequest) -> FusionPlan:
    ov, fcfg = request.overrides, cfg.fusion
    enabled = {leg: override(ov, f"enable_{leg}", True) for leg in LEGS}
    weights = {leg: override(ov, f"{leg}_weight", float(getattr(fcfg, f"{leg}_weight"))) for leg in LEGS}
    kind = classify_query(request.query)
    weights_set = any(ov.HasField(name) for name in ("vector_weight", "sparse_weight", "graph_weight"))
    if override(ov, "adaptive_weights", fcfg.adaptive_weights) and not weights_set:
        profile = fcfg.query_kind_weights.get(kind)
        if profile is not None:
            weights = {leg: float(getattr(profile, leg)) for leg in LEGS}
    if any(w < 0 for w in weights.values()):
        raise invalid(f"leg weights must be >= 0, got {weights}")
    if not any(enabled.values()):
        raise invalid("every leg is disabled: enable at least one of vector, sparse, graph")
    if sum(w for leg, w in weights.items() if enabled[leg]) <= 0:
        raise invalid("the enabled legs' weights sum to 0")
    method = override(ov, "fusion_method", str(fcfg.method))
    if method not in ("rrf", "weighted"):
        raise invalid(f"fusion_method must be 'rrf' or 'weighted', got {method!r}")
    normalization = override(ov, "normalization", str(fcfg.normalization))
    if normalization not in ("min_max", "z_score", "none"):
        raise invalid(f"normalization must be 'min_max', 'z_score' or 'none', got {normalization!r}")
    rrf_k = override(ov, "rrf_k", fcfg.rrf_k)
    if rrf_k <= 0:
        raise invalid(f"rrf_k must be > 0, got {rrf_k}")
    timeout_ms = override(ov, "leg_timeout_ms", fcfg.leg_timeout_ms)
    if timeout_ms <= 0:
        raise invalid("leg_timeout_ms must be > 0")
    expansion_top_n = override(ov, "expansion_top_n", fcfg.expansion_top_n)
    if expansion_top_n < 1:
        raise invalid("expansion_top_n must be >= 1")
    return FusionPlan(
        enabled,
        normalize_weights({leg: w for leg, w in weights.items() if enabled[leg]})
        | {leg: 0.0 for leg in LEGS if not enabled[leg]},
        method,
        normalization,  # type: ignore[arg-type]
        rrf_k,
        timeout_ms / 1000,
        max_chunks_per_file=override(ov, "max_chunks_per_file", fcfg.max_chunks_per_file),
        enable_expansion=override(ov, "enable_expansion", fcfg.enable_expansion),
        expansion_top_n=expansion_top_n,
        query_kind=kind,
    )


class Gateway:
    def __init__(self, cfg: TriBridConfig, legs: dict[str, LegClient]) -> None:
        self._cfg = cfg
        self._legs = legs

    @classmethod
    def connect(cls, cfg: TriBridConfig) -> Gateway:
        return cls(cfg, {leg: LegClient(leg, cfg.services.address(leg)) for leg in LEGS})  # type: ignore[arg-type]

    async def close(self) -> None:
        await asyncio.gather(*(c.close() for c in self._legs.values()))

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
        fcfg = self._cfg.fusion
        params = validate_search(request, fcfg.final_k, fcfg.max_top_k, fcfg.max_query_chars)
        fusion_plan = plan(self._cfg, request)
        budget_s = fusion_plan.leg_timeout_s
        if remaining_s is not None:
            budget_s = min(budget_s, remaining_s - fcfg.merge_reserve_ms / 1000)
            if budget_s <= 0:
                raise RequestError(grpc.StatusCode.DEADLINE_EXCEEDED, "deadline too short to query any leg")
        leg_request = common_pb2.SearchRequest()
        leg_request.CopyFrom(request)
        # Legs return more candidates than the fused answer needs: fusion works on their union.
        leg_request.top_k = max(
            params.top_k, self._cfg.vector.top_k, self._cfg.sparse.top_k, self._cfg.graph.top_k
        )
        leg_request.top_k = min(leg_request.top_k, fcfg.max_top_k)

        enabled = [leg for leg in LEGS if fusion_plan.enabled[leg]]
        outcomes = await asyncio.gather(*(self._legs[leg].search(leg_request, budget_s) for leg in enabled))
        by_leg = {o.leg: o for o in outcomes}
        for outcome in outcomes:
            if outcome.code == grpc.StatusCode.INVALID_ARGUMENT:  # the request is bad, not the leg
                raise invalid(outcome.error.split(": ", 1)[-1])
        answered = {o.leg: o for o in outcomes if o.status == fusion_pb2.LEG_STATUS_OK}
        reports = [self._report(leg, by_leg.get(leg)) for leg in LEGS]
        if not answered:
            reasons = "; ".join(f"{o.leg}: {o.error}" for o in outcomes)
            raise RequestError(grpc.StatusCode.UNAVAILABLE, f"no leg answered ({reasons})")

        merge_started = time.perf_counter()
        first_seen = _first_seen(answered)
        fused = self._fuse(fusion_plan, answered)
        fused = cap_per_file(fused, lambda cid: first_seen[cid].file_path, fusion_plan.max_chunks_per_file)
        matches = self._to_matches(fused[: params.top_k], answered, first_seen)
        telemetry.METRICS.fusion_time.observe(time.perf_counter() - merge_started)

        if fusion_plan.enable_expansion:
            elapsed_s = time.perf_counter() - started
            left_s = None if remaining_s is None else remaining_s - elapsed_s
            report, extra = await self._expand(request, fusion_plan, matches, left_s)
            reports.append(report)
            matches = _merge_expanded(matches, extra, fusion_plan.max_chunks_per_file)
        return fusion_pb2.FusionSearchResponse(
            matches=matches,
            legs=reports,
            partial=len(answered) < len(enabled),
            took_ms=(time.perf_counter() - started) * 1000,
            fusion_method=fusion_plan.method,
            query_kind=fusion_plan.query_kind,
            weights=fusion_plan.weights,
        )

    async def _expand(
        self,
        request: common_pb2.SearchRequest,
        fusion_plan: FusionPlan,
        matches: list[common_pb2.ChunkMatch],
        left_s: float | None,
    ) -> tuple[fusion_pb2.LegReport, list[common_pb2.ChunkMatch]]:
        """Graph expansion: neighbours of the top N fused chunks, scored below the Nth fused score."""
        fcfg = self._cfg.fusion
        budget_s = fcfg.expansion_timeout_ms / 1000
        report = fusion_pb2.LegReport(leg=common_pb2.LEG_EXPANSION, budget_ms=budget_s * 1000)
        top = matches[: fusion_plan.expansion_top_n]
        if not top:
            report.status = fusion_pb2.LEG_STATUS_OK
            return report, []
        if left_s is not None and left_s - fcfg.merge_reserve_ms / 1000 < budget_s:
            report.status = fusion_pb2.LEG_STATUS_TIMEOUT
            report.error = (
                f"skipped: {max(left_s, 0) * 1000:.0f} ms left of the deadline, "
                f"below the expansion budget of {budget_s * 1000:.0f} ms"
            )
            telemetry.METRICS.leg_requests.labels("expansion", "skipped").inc()
            return report, []
        if "graph" not in self._legs:
            report.status = fusion_pb2.LEG_STATUS_ERROR
            report.error = "no graph service configured"
            return report, []
        expand_request = graph_pb2.ExpandContextRequest(
            corpus_id=request.corpus_id,
            chunk_ids=[m.chunk_id for m in top],
            max_hops=fcfg.expansion_max_hops,
            top_k=fcfg.expansion_max_chunks + len(matches),
        )
        outcome = await self._legs["graph"].expand(expand_request, budget_s)
        report.status = outcome.status
        report.latency_ms = outcome.latency_ms
        report.error = outcome.error
        if outcome.status != fusion_pb2.LEG_STATUS_OK:
            return report, []
        present = {m.chunk_id for m in matches}
        neighbours = [m for m in _dedup(outcome.matches) if m.chunk_id not in present]
        neighbours = neighbours[: fcfg.expansion_max_chunks]
        report.hits = len(neighbours)
        ceiling = top[-1].score * fcfg.expansion_discount
        best = max((m.score for m in neighbours), default=0.0)
        extra = []
        for rank, neighbour in enumerate(neighbours, start=1):
            relative = neighbour.score / best if best > 0 else 1.0 / rank
            match = common_pb2.ChunkMatch()
            match.CopyFrom(neighbour)
            match.score = ceiling * min(max(relative, 0.0), 1.0)
            match.leg = common_pb2.LEG_EXPANSION
            match.expanded = True
            detail = neighbour.explain[0].detail if neighbour.explain else ""
            del match.explain[:]
            match.explain.append(
                common_pb2.LegExplain(
                    leg=common_pb2.LEG_EXPANSION,
                    rank=rank,
                    raw_score=neighbour.score,
                    normalized_score=relative,
                    contribution=match.score,
                    detail=detail,
                )
            )
            extra.append(match)
        return report, extra

    @staticmethod
    def _report(leg: str, outcome: LegOutcome | None) -> fusion_pb2.LegReport:
        if outcome is None:
            return fusion_pb2.LegReport(leg=LEGS[leg], status=fusion_pb2.LEG_STATUS_DISABLED)
        return fusion_pb2.LegReport(
            leg=LEGS[leg],
            status=outcome.status,
            latency_ms=outcome.latency_ms,
            hits=len(outcome.matches),
            error=outcome.error,
            budget_ms=outcome.budget_ms,
        )

    @staticmethod
    def _fuse(fusion_plan: FusionPlan, answered: dict[str, LegOutcome]) -> list[Fused]:
        ranked = {leg: [Ranked(m.chunk_id, m.score) for m in o.matches] for leg, o in answered.items()}
        weights = {leg: fusion_plan.weights[leg] for leg in answered}
        if sum(weights.values()) <= 0:  # only zero-weight legs answered: rank them equally
            weights = dict.fromkeys(answered, 1.0)
        if fusion_plan.method == "rrf":
            return rrf(ranked, weights, fusion_plan.rrf_k)
        return weighted(ranked, weights, fusion_plan.normalization)

    @staticmethod
    def _to_matches(
        fused: list[Fused],
        answered: dict[str, LegOutcome],
        first_seen: dict[str, common_pb2.ChunkMatch] | None = None,
    ) -> list[common_pb2.ChunkMatch]:
        first_seen = first_seen if first_seen is not None else _first_seen(answered)
        details: dict[tuple[str, str], str] = {}
        for leg, outcome in answered.items():
            for m in outcome.matches:
                details.setdefault((leg, m.chunk_id), m.explain[0].detail if m.explain else "")
        matches = []
        for item in fused:
            match = common_pb2.ChunkMatch()
            match.CopyFrom(first_seen[item.item_id])
            best_leg = min(
                (leg for leg, c in item.contributions.items() if c.rank),
                key=lambda leg: (item.contributions[leg].rank, list(LEGS).index(leg)),
            )
            match.score = item.score
            match.leg = LEGS[best_leg]
            match.expanded = False
            del match.explain[:]
            for leg in LEGS:
                c = item.contributions.get(leg)
                if c is None:
                    continue
                match.explain.append(
                    common_pb2.LegExplain(
                        leg=LEGS[leg],
                        rank=c.rank,
                        raw_score=c.raw_score,
                        normalized_score=c.normalized,
                        contribution=c.contribution,
                        detail=details.get((leg, item.item_id), ""),
                    )
                )
            matches.append(match)
        return matches


def _first_seen(answered: dict[str, LegOutcome]) -> dict[str, common_pb2.ChunkMatch]:
    """Each chunk's match as the first answering leg (in LEGS order) returned it."""
    first: dict[str, common_pb2.ChunkMatch] = {}
    for leg in LEGS:
        if leg in answered:
            for m in answered[leg].matches:
                first.setdefault(m.chunk_id, m)
    return first


def _dedup(matches: list[common_pb2.ChunkMatch]) -> list[common_pb2.ChunkMatch]:
    seen: set[str] = set()
    out = []
    for m in matches:
        if m.chunk_id not in seen:
            seen.add(m.chunk_id)
            out.append(m)
    return out


def _merge_expanded(
    matches: list[common_pb2.ChunkMatch], extra: list[common_pb2.ChunkMatch], max_per_file: int
) -> list[common_pb2.ChunkMatch]:
    """Fused matches first (expanded ones score below them), each file still capped."""
    if max_per_file > 0:
        per_file: dict[str, int] = {}
        for m in matches:
            per_file[m.file_path] = per_file.get(m.file_path, 0) + 1
        kept = []
        for m in extra:
            if per_file.get(m.file_path, 0) < max_per_file:
                per_file[m.file_path] = per_file.get(m.file_path, 0) + 1
                kept.append(m)
        extra = kept
    return [*matches, *sorted(extra, key=lambda m: (-m.score, m.explain[0].rank, m.chunk_id))]
