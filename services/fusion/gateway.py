"""The gateway's fan-out: every enabled leg in parallel, each under its own deadline, then fusion."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import grpc

from services.fusion.fuse import Fused, Normalization, Ranked, rrf, weighted
from tribrid import telemetry
from tribrid.config import TriBridConfig
from tribrid.search_common import RequestError, invalid, override, validate_search
from tribrid.v1 import common_pb2, fusion_pb2, graph_pb2_grpc, sparse_pb2_grpc, vector_pb2_grpc

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
        started = time.perf_counter()
        outcome = LegOutcome(self.leg, fusion_pb2.LEG_STATUS_OK, budget_ms=budget_s * 1000)
        try:
            response = await self._stub.Search(request, timeout=budget_s)
            outcome.matches = list(response.matches)
        except grpc.aio.AioRpcError as err:
            outcome.code = err.code()
            timed_out = err.code() == grpc.StatusCode.DEADLINE_EXCEEDED
            outcome.status = fusion_pb2.LEG_STATUS_TIMEOUT if timed_out else fusion_pb2.LEG_STATUS_ERROR
            outcome.error = f"{err.code().name}: {err.details()}"
        outcome.latency_ms = (time.perf_counter() - started) * 1000
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


def plan(cfg: TriBridConfig, request: common_pb2.SearchRequest) -> FusionPlan:
    ov, fcfg = request.overrides, cfg.fusion
    enabled = {leg: override(ov, f"enable_{leg}", True) for leg in LEGS}
    weights = {leg: override(ov, f"{leg}_weight", float(getattr(fcfg, f"{leg}_weight"))) for leg in LEGS}
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
    return FusionPlan(enabled, weights, method, normalization, rrf_k, timeout_ms / 1000)  # type: ignore[arg-type]


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

        fused = self._fuse(fusion_plan, answered)[: params.top_k]
        return fusion_pb2.FusionSearchResponse(
            matches=self._to_matches(fused, answered),
            legs=reports,
            partial=len(answered) < len(enabled),
            took_ms=(time.perf_counter() - started) * 1000,
            fusion_method=fusion_plan.method,
        )

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
    def _to_matches(fused: list[Fused], answered: dict[str, LegOutcome]) -> list[common_pb2.ChunkMatch]:
        first_seen: dict[str, common_pb2.ChunkMatch] = {}
        details: dict[tuple[str, str], str] = {}
        for leg, outcome in answered.items():
            for m in outcome.matches:
                first_seen.setdefault(m.chunk_id, m)
                details[(leg, m.chunk_id)] = m.explain[0].detail if m.explain else ""
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
                        detail=details.get((leg, item.item_id), ""),
                    )
                )
            matches.append(match)
        return matches
