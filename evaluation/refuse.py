"""The legs' own ranked lists, fetched once as the gateway would see them, and fused offline the way
the gateway fuses them, under any fusion config (bench/fusion_lab.py, evaluation/tune.py).

`fetch_lists` reads the question as the gateway does (`tribrid.question.read` with the corpus's
profile) and asks each enabled leg's Search for `depth` candidates with that reading, as the gateway
passes it down. `gateway_order` then runs the gateway's own steps over those lists: the plan
(`services.fusion.gateway.plan`), the leg floors, the entity weights, the confidence scaling,
`Gateway._fuse`, the document context, the lead leg's order, the per-file cap, the module-head
filter and `min_score`.
Techniques, MMR, rerank and expansion are left out: they call models or stores again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass

import grpc

from services.fusion.fuse import cap_per_file, keep_leg_order
from services.fusion.gateway import (
    DEFINITION_INTENTS,
    Gateway,
    LegOutcome,
    _above_floors,
    _first_seen,
    confident_weights,
    entity_plan,
    in_document_context,
    is_module_head,
    plan,
)
from tribrid import auth, tls
from tribrid.config import FusionConfig, TriBridConfig
from tribrid.corpus_profile import CorpusProfile, CorpusProfiles
from tribrid.legs import BY_NAME, search_method
from tribrid.question import Reading, read
from tribrid.question.contract import to_proto
from tribrid.stores.postgres import create_pool
from tribrid.v1 import common_pb2, fusion_pb2


async def corpus_profiles(cfg: TriBridConfig, corpora: Iterable[str]) -> dict[str, CorpusProfile | None]:
    """What each corpus holds, as the gateway reads it from PostgreSQL (None: nothing committed)."""
    pool = await create_pool(cfg.postgres, cfg.embedding.dim, cfg.vector)
    try:
        known = CorpusProfiles(pool)
        return {corpus: await known.get(corpus) for corpus in sorted(set(corpora))}
    finally:
        await pool.close()


@dataclass(frozen=True)
class LegLists:
    """One question's leg answers, as the gateway would have them before fusing."""

    corpus: str
    query: str
    reading: Reading
    profile: CorpusProfile | None
    answered: dict[str, LegOutcome]
    # legs that failed: name -> error (the gateway fuses without them, and so does gateway_order)
    failed: dict[str, str]
    depth: int

    def request(self) -> common_pb2.SearchRequest:
        return common_pb2.SearchRequest(corpus_id=self.corpus, query=self.query)


class LegSearch:
    """Channels to the legs (TLS and the caller's token as the CLI uses them)."""

    def __init__(self, cfg: TriBridConfig, timeout_s: float) -> None:
        self._timeout_s = timeout_s
        self._channels = {
            name: tls.channel(
                cfg.services.address(name), cfg.services, interceptors=auth.client_interceptors()
            )
            for name in BY_NAME
        }

    async def fetch(
        self, fusion: FusionConfig, corpus: str, query: str, profile: CorpusProfile | None, depth: int
    ) -> LegLists:
        """Each leg the config enables, asked once for `depth` candidates with the gateway's reading."""
        query = query.strip()  # as validate_search gives it to the gateway's reader
        reading = read(query, profile)
        request = common_pb2.SearchRequest(corpus_id=corpus, query=query)
        enabled = [leg for leg, on in plan(fusion, request, profile, reading).enabled.items() if on]
        leg_request = common_pb2.SearchRequest(
            corpus_id=corpus, query=query, top_k=depth, reading=to_proto(reading)
        )

        async def one(leg: str) -> LegOutcome | str:
            try:
                reply = await search_method(self._channels[leg], BY_NAME[leg])(
                    leg_request, timeout=self._timeout_s
                )
            except grpc.aio.AioRpcError as err:
                return f"{err.code().name}: {err.details()}"
            return LegOutcome(
                leg, fusion_pb2.LEG_STATUS_OK, matches=list(reply.matches), coverage=reply.coverage
            )

        outcomes = await asyncio.gather(*(one(leg) for leg in enabled))
        answered = {o.leg: o for o in outcomes if isinstance(o, LegOutcome)}
        failed = {leg: o for leg, o in zip(enabled, outcomes, strict=True) if isinstance(o, str)}
        return LegLists(corpus, query, reading, profile, answered, failed, depth)

    async def close(self) -> None:
        await asyncio.gather(*(channel.close() for channel in self._channels.values()))


def gateway_order(cfg: FusionConfig, lists: LegLists) -> list[common_pb2.ChunkMatch]:
    """The fused answer the gateway gives for these leg answers under `cfg` (whole, not a page):
    each chunk's match as the first leg listed it, in fused order."""
    fusion_plan = plan(cfg, lists.request(), lists.profile, lists.reading)
    fcfg = fusion_plan.cfg
    answered = {leg: o for leg, o in lists.answered.items() if fusion_plan.enabled[leg]}
    if not answered:
        return []
    answered, _ = _above_floors(fcfg, answered, [])
    first_seen = _first_seen(answered)
    graph = answered.get("graph")
    fusion_plan = entity_plan(fusion_plan, graph.matches if graph is not None else None)
    weights, _ = confident_weights(
        fusion_plan,
        {leg: [m.score for m in o.matches] for leg, o in answered.items()},
        lists.depth,
        {leg: o.coverage for leg, o in answered.items()},
    )
    fused = Gateway._fuse(fusion_plan.cfg, weights, answered)
    fused = in_document_context(fcfg, fused, first_seen, lists.profile)
    if fusion_plan.lead_leg in answered:
        fused = keep_leg_order(fused, fusion_plan.lead_leg)
    fused = cap_per_file(fused, lambda cid: first_seen[cid].file_path, fcfg.max_chunks_per_file)
    if lists.reading.structural_intent in DEFINITION_INTENTS:
        fused = [item for item in fused if not is_module_head(first_seen[item.item_id])]
    if fcfg.min_score is not None:
        fused = [item for item in fused if item.score >= fcfg.min_score]
    return [first_seen[item.item_id] for item in fused]
