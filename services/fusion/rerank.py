"""The rerank stage after fusion: the top fused matches reordered by a reranker's relevance scores.

The reranker is any endpoint speaking the common /rerank shape: `{model, query, documents, top_n}`
answered by `{"results": [{index, relevance_score}]}` (Cohere, Jina, Hugging Face TEI, vLLM,
Infinity), or a cross-encoder in a local directory run through sentence-transformers. The stage
runs under its own budget inside the caller's deadline; whatever goes wrong (an HTTP error, a
timeout, an answer that does not score every document) it reports why and the fused order stands.
The API key goes into the client's headers only: no log, span or error holds it.
"""

from __future__ import annotations

import asyncio
import math
import time
from typing import Any, Protocol

import httpx

from tribrid import telemetry
from tribrid.config import RerankConfig
from tribrid.model_endpoint import endpoint_client
from tribrid.v1 import common_pb2, fusion_pb2, legs_pb2


class RerankError(Exception):
    """The reranker failed, or its answer does not score each document once."""


def relevance_scores(body: Any, count: int) -> list[float]:
    """Each document's score, by its index, from a /rerank answer (`results`, or the bare list some
    servers answer; `relevance_score`, or TEI's `score`)."""
    results = body.get("results") if isinstance(body, dict) else body
    if not isinstance(results, list):
        raise RerankError("malformed answer: no results list")
    scores: dict[int, float] = {}
    for item in results:
        if not isinstance(item, dict):
            raise RerankError("malformed answer: a result is not an object")
        index, score = item.get("index"), item.get("relevance_score", item.get("score"))
        if not isinstance(index, int) or not 0 <= index < count or index in scores:
            raise RerankError(f"malformed answer: index {index!r} is not one of the {count} documents, once")
        if not isinstance(score, int | float) or not math.isfinite(score):
            raise RerankError(f"malformed answer: document {index} has no finite relevance_score")
        scores[index] = float(score)
    if len(scores) != count:
        raise RerankError(f"the reranker scored {len(scores)} of the {count} documents")
    return [scores[i] for i in range(count)]


class Reranker(Protocol):
    model: str
    max_chars: int

    async def scores(self, query: str, documents: list[str]) -> list[float]: ...

    async def close(self) -> None: ...


def reranker(cfg: RerankConfig) -> Reranker | None:
    """The configured reranker (None: none is); a local model is loaded now."""
    if cfg.model_path is not None:
        return LocalReranker(cfg)
    return RerankClient(cfg) if cfg.base_url else None


class LocalReranker:
    """A cross-encoder from a local directory through sentence-transformers, nothing downloaded.
    Predictions run in a worker thread, one at a time: a timed-out one still finishes there."""

    def __init__(self, cfg: RerankConfig) -> None:
        assert cfg.model_path is not None
        try:
            from sentence_transformers import CrossEncoder
        except ImportError:
            raise ValueError(
                "rerank.model_path runs a cross-encoder through sentence-transformers: "
                "install tribrid[vector]"
            ) from None
        self.model = cfg.model or cfg.model_path.name
        self.max_chars = cfg.max_chars
        self._encoder = CrossEncoder(str(cfg.model_path), device="cpu", local_files_only=True)
        self._lock = asyncio.Lock()

    async def scores(self, query: str, documents: list[str]) -> list[float]:
        pairs = [(query, document) for document in documents]
        async with self._lock:
            values = await asyncio.to_thread(self._encoder.predict, pairs, show_progress_bar=False)
        return [float(v) for v in values]

    async def close(self) -> None:
        return None


class RerankClient:
    def __init__(self, cfg: RerankConfig) -> None:
        if not cfg.base_url:
            raise ValueError("rerank.base_url is not set")
        self.model = cfg.model
        self.max_chars = cfg.max_chars
        self._client = endpoint_client(cfg)

    def __repr__(self) -> str:
        return f"RerankClient(base_url={str(self._client.base_url)!r}, model={self.model!r})"

    async def scores(self, query: str, documents: list[str]) -> list[float]:
        """One relevance score per document, in their order. Raises RerankError."""
        body = {"model": self.model, "query": query, "documents": documents, "top_n": len(documents)}
        try:
            response = await self._client.post("rerank", json=body)
        except httpx.HTTPError as err:
            raise RerankError(f"{type(err).__name__}: {err}") from None
        if response.status_code >= 400:
            raise RerankError(f"the reranker answered HTTP {response.status_code}")
        try:
            answer = response.json()
        except ValueError:
            raise RerankError("malformed answer: not JSON") from None
        return relevance_scores(answer, len(documents))

    async def close(self) -> None:
        await self._client.aclose()


def document_text(match: common_pb2.ChunkMatch, max_chars: int) -> str:
    """What the reranker reads of a match: where it is (the section, or the file and symbol), then
    its content, cut to `max_chars`."""
    head = match.section or match.document_title or " ".join(filter(None, (match.file_path, match.symbol)))
    return f"{head}\n{match.content}"[:max_chars]


def reorder(matches: list[common_pb2.ChunkMatch], scores: list[float]) -> list[common_pb2.ChunkMatch]:
    """The matches by relevance (the fused order breaks ties), each scored by its relevance and
    explained by a rerank entry holding its reranked and its fused rank."""
    order = sorted(range(len(matches)), key=lambda i: (-scores[i], i))
    reranked = []
    for rank, i in enumerate(order, start=1):
        match = matches[i]
        match.score = scores[i]
        match.explain.append(
            common_pb2.LegExplain(
                leg=legs_pb2.LEG_RERANK,
                rank=rank,
                raw_score=scores[i],
                normalized_score=scores[i],
                contribution=scores[i],
                fused_rank=i + 1,
            )
        )
        reranked.append(match)
    return reranked


async def rerank(
    client: Reranker, query: str, matches: list[common_pb2.ChunkMatch], budget_s: float
) -> tuple[fusion_pb2.LegReport, list[common_pb2.ChunkMatch]]:
    """The stage's report and the matches, reranked when the reranker answered within `budget_s`
    (their content must be filled); otherwise the matches as they came."""
    report = fusion_pb2.LegReport(leg=legs_pb2.LEG_RERANK, budget_ms=max(budget_s, 0) * 1000)
    started = time.perf_counter()
    with telemetry.span("fusion.rerank", candidates=len(matches), model=client.model) as span:
        if budget_s <= 0:
            report.status = fusion_pb2.LEG_STATUS_TIMEOUT
            report.error = "skipped: no time left of the caller's deadline"
        elif not matches:
            report.status = fusion_pb2.LEG_STATUS_OK
        else:
            documents = [document_text(m, client.max_chars) for m in matches]
            try:
                async with asyncio.timeout(budget_s):
                    scores = await client.scores(query, documents)
            except TimeoutError:
                report.status = fusion_pb2.LEG_STATUS_TIMEOUT
                report.error = f"the reranker did not answer within the stage's {budget_s * 1000:.0f} ms"
            except RerankError as err:
                report.status = fusion_pb2.LEG_STATUS_ERROR
                report.error = str(err)
            else:
                report.status = fusion_pb2.LEG_STATUS_OK
                report.hits = len(matches)
                matches = reorder(matches, scores)
        report.latency_ms = (time.perf_counter() - started) * 1000
        status = fusion_pb2.LegStatus.Name(report.status).removeprefix("LEG_STATUS_").lower()
        span.set_attribute("tribrid.status", status)
        if report.error:
            span.set_attribute("tribrid.error", report.error)
    telemetry.METRICS.leg_requests.labels("rerank", status).inc()
    telemetry.METRICS.leg_latency.labels("rerank", status).observe(report.latency_ms / 1000)
    return report, matches
