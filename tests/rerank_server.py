"""A real HTTP server speaking the common /rerank API with scripted scores: the stand-in for a
reranker (none can run here). The gateway's real HTTP client talks to it over a socket."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from tests.chat_server import serve_app

Behaviour = Literal["score", "hang", "status", "partial"]


def reverse(query: str, documents: list[str]) -> list[float]:
    """The last document first: scores that reverse the order they came in."""
    return [float(i) for i in range(len(documents))]


@dataclass
class ScriptedReranker:
    """Scores by `score` (query, documents -> one per document), or a failure by `behaviour`."""

    score: Callable[[str, list[str]], list[float]] = reverse
    behaviour: Behaviour = "score"
    # (authorization header, request body) per call
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    release: asyncio.Event = field(default_factory=asyncio.Event)  # ends every hanging answer
    url: str = ""

    async def _rerank(self, request: Request) -> Response:
        body = await request.json()
        self.calls.append((request.headers.get("authorization", ""), body))
        if self.behaviour == "hang":
            await self.release.wait()
            return PlainTextResponse("released", status_code=503)
        if self.behaviour == "status":
            return JSONResponse({"error": "scripted failure"}, status_code=500)
        scores = self.score(body["query"], body["documents"])
        results = [{"index": i, "relevance_score": s} for i, s in enumerate(scores)]
        results.sort(key=lambda r: -r["relevance_score"])
        if self.behaviour == "partial":
            results = results[:-1]
        return JSONResponse({"model": body.get("model", ""), "results": results[: body.get("top_n")]})


@contextlib.asynccontextmanager
async def rerank_server() -> AsyncIterator[ScriptedReranker]:
    """A ScriptedReranker on 127.0.0.1 at a free port; `url` is its base URL (POST url + /rerank)."""
    reranker = ScriptedReranker()
    app = Starlette(routes=[Route("/v1/rerank", reranker._rerank, methods=["POST"])])
    async with serve_app(app) as port:
        reranker.url = f"http://127.0.0.1:{port}/v1"
        try:
            yield reranker
        finally:
            reranker.release.set()
