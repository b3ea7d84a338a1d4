"""A real HTTP server speaking the OpenAI chat completions API with scripted answers: the stand-in
for a generation model (none can run here). It stands in for the model, not for our code: the
gateway's real HTTP client talks to it over a socket."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route


@dataclass(frozen=True)
class Reply:
    """One scripted answer: `text` as a chat completion, or a failure of the given kind."""

    kind: Literal["text", "status", "empty", "malformed", "hang"] = "text"
    text: str = ""
    status: int = 500


@dataclass
class ScriptedChat:
    """What the server answers (`respond`, by prompt) and what it was asked."""

    respond: Callable[[str], Reply] = lambda prompt: Reply("empty")
    # (authorization header, request body) per call
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    release: asyncio.Event = field(default_factory=asyncio.Event)  # ends every hanging answer
    url: str = ""

    def prompts(self) -> list[str]:
        return [str(body["messages"][-1]["content"]) for _, body in self.calls]

    async def _completions(self, request: Request) -> Response:
        body = await request.json()
        self.calls.append((request.headers.get("authorization", ""), body))
        reply = self.respond(str(body["messages"][-1]["content"]))
        if reply.kind == "hang":
            await self.release.wait()
            return PlainTextResponse("released", status_code=503)
        if reply.kind == "status":
            return JSONResponse({"error": {"message": "scripted failure"}}, status_code=reply.status)
        if reply.kind == "malformed":
            return PlainTextResponse(
                '{"choices": [{"message": {"content": "trunc', media_type="application/json"
            )
        content = reply.text if reply.kind == "text" else ""
        return JSONResponse(
            {
                "id": f"chatcmpl-{len(self.calls)}",
                "object": "chat.completion",
                "model": body.get("model", ""),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        )


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:  # the test process keeps its signal handlers
        yield


@contextlib.asynccontextmanager
async def serve_app(app: Starlette) -> AsyncIterator[int]:
    """`app` served on 127.0.0.1 at a free port (yielded) until the block ends."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = _Server(uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            await task
            raise RuntimeError("the stand-in server stopped during start-up")
        await asyncio.sleep(0.01)
    try:
        yield int(sock.getsockname()[1])
    finally:
        server.should_exit = True
        await task


@contextlib.asynccontextmanager
async def chat_server() -> AsyncIterator[ScriptedChat]:
    """A ScriptedChat served on 127.0.0.1 at a free port; `url` is its OpenAI base URL (…/v1)."""
    chat = ScriptedChat()
    app = Starlette(routes=[Route("/v1/chat/completions", chat._completions, methods=["POST"])])
    async with serve_app(app) as port:
        chat.url = f"http://127.0.0.1:{port}/v1"
        try:
            yield chat
        finally:
            chat.release.set()
