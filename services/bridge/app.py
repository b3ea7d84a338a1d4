"""The HTTP/JSON bridge: JSON in, gRPC to the gateway (search) or the indexer (index, corpora), JSON out.

No retrieval logic lives here. Bodies are the proto messages in JSON (google.protobuf.json_format:
lowerCamelCase or original field names, unknown fields rejected); gRPC status codes map to HTTP
statuses; error bodies are {"code": "INVALID_ARGUMENT", "message": "..."}. A caller deadline comes from
a `grpc-timeout` header (e.g. "500m", "2S") or `X-Request-Timeout-Ms`.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import grpc
from google.protobuf import json_format
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2, health_pb2_grpc
from opentelemetry import trace
from opentelemetry.propagate import extract
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tribrid import telemetry
from tribrid.v1 import common_pb2, fusion_pb2_grpc, indexer_pb2, indexer_pb2_grpc

HTTP_STATUS = {
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.DEADLINE_EXCEEDED: 504,
    grpc.StatusCode.UNAVAILABLE: 503,
}
_GRPC_TIMEOUT_RE = re.compile(r"^(\d{1,8})([HMSmun])$")
_GRPC_TIMEOUT_UNITS = {"H": 3600.0, "M": 60.0, "S": 1.0, "m": 1e-3, "u": 1e-6, "n": 1e-9}
NDJSON = "application/x-ndjson"

M = TypeVar("M", bound=Message)


class BridgeError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def error_response(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"code": code, "message": message}, status_code=status)


def grpc_error(err: grpc.aio.AioRpcError) -> BridgeError:
    code = err.code()
    return BridgeError(HTTP_STATUS.get(code, 500), code.name, err.details() or code.name)


def to_json(message: Message) -> dict[str, Any]:
    return json_format.MessageToDict(message, always_print_fields_with_no_presence=True)


def caller_timeout(request: Request, default_s: float | None) -> float | None:
    """The caller's deadline in seconds: `grpc-timeout`, else `X-Request-Timeout-Ms`, else the default."""
    raw = request.headers.get("grpc-timeout")
    if raw is not None:
        match = _GRPC_TIMEOUT_RE.match(raw.strip())
        if match is None:
            raise BridgeError(
                400, "INVALID_ARGUMENT", f"bad grpc-timeout header {raw!r}, e.g. '500m' or '2S'"
            )
        return int(match.group(1)) * _GRPC_TIMEOUT_UNITS[match.group(2)]
    raw = request.headers.get("x-request-timeout-ms")
    if raw is not None:
        try:
            ms = float(raw)
        except ValueError:
            ms = -1
        if ms <= 0:
            raise BridgeError(
                400, "INVALID_ARGUMENT", f"X-Request-Timeout-Ms must be a positive number, got {raw!r}"
            )
        return ms / 1000
    return default_s


async def parse_body(request: Request, message: M) -> M:
    body = await request.body()
    try:
        text = body.decode("utf-8") if body else "{}"
        if not isinstance(json.loads(text), dict):
            raise BridgeError(400, "INVALID_ARGUMENT", "the request body must be a JSON object")
        json_format.Parse(text, message, ignore_unknown_fields=False)
    except (UnicodeDecodeError, json.JSONDecodeError, json_format.ParseError) as err:
        raise BridgeError(400, "INVALID_ARGUMENT", f"malformed JSON body: {err}") from None
    return message


class Backend:
    """Long-lived channels to the gateway and the indexer, opened on first use (inside the event loop)."""

    def __init__(self, fusion_address: str, indexer_address: str) -> None:
        self.fusion_address = fusion_address
        self.indexer_address = indexer_address
        self._channels: dict[str, grpc.aio.Channel] = {}

    def channel(self, address: str) -> grpc.aio.Channel:
        if address not in self._channels:
            self._channels[address] = grpc.aio.insecure_channel(
                address, interceptors=telemetry.client_interceptors()
            )
        return self._channels[address]

    def fusion(self) -> fusion_pb2_grpc.FusionStub:
        return fusion_pb2_grpc.FusionStub(self.channel(self.fusion_address))

    def indexer(self) -> indexer_pb2_grpc.IndexerStub:
        return indexer_pb2_grpc.IndexerStub(self.channel(self.indexer_address))

    def health(self) -> health_pb2_grpc.HealthStub:
        return health_pb2_grpc.HealthStub(self.channel(self.fusion_address))

    async def close(self) -> None:
        for channel in self._channels.values():
            await channel.close()
        self._channels.clear()


Handler = Callable[[Request], Awaitable[Response]]


def _observed(route: str, handler: Handler) -> Handler:
    """Server span (continuing a W3C traceparent if sent), metrics and error mapping for one route."""

    async def wrapped(request: Request) -> Response:
        started = time.perf_counter()
        with telemetry.tracer.start_as_current_span(
            f"{request.method} {route}", context=extract(dict(request.headers)), kind=trace.SpanKind.SERVER
        ) as span:
            span.set_attribute("http.request.method", request.method)
            span.set_attribute("http.route", route)
            try:
                response = await handler(request)
            except BridgeError as err:
                response = error_response(err.status, err.code, err.message)
            span.set_attribute("http.response.status_code", response.status_code)
        telemetry.METRICS.http_requests.labels(route, str(response.status_code)).inc()
        telemetry.METRICS.http_latency.labels(route).observe(time.perf_counter() - started)
        return response

    return wrapped


def create_app(
    fusion_address: str,
    indexer_address: str,
    search_timeout_s: float | None = 5.0,
    index_timeout_s: float | None = None,
) -> Starlette:
    """The bridge app; `search_timeout_s` is the deadline when the caller sends none."""
    backend = Backend(fusion_address, indexer_address)

    async def search(request: Request) -> Response:
        timeout = caller_timeout(request, search_timeout_s)
        message = await parse_body(request, common_pb2.SearchRequest())
        try:
            reply = await backend.fusion().Search(message, timeout=timeout)
        except grpc.aio.AioRpcError as err:
            raise grpc_error(err) from None
        return JSONResponse(to_json(reply))

    async def index(request: Request) -> Response:
        timeout = caller_timeout(request, index_timeout_s)
        message = await parse_body(request, indexer_pb2.IndexCorpusRequest())
        stream = backend.indexer().IndexCorpus(message, timeout=timeout)
        wants_stream = request.query_params.get("stream") in ("1", "true") or NDJSON in request.headers.get(
            "accept", ""
        )
        if not wants_stream:
            last = indexer_pb2.IndexProgress()
            try:
                async for event in stream:
                    last = event
            except grpc.aio.AioRpcError as err:
                raise grpc_error(err) from None
            return JSONResponse(to_json(last))
        try:  # the first event decides the HTTP status; later errors become an error line
            first = await stream.read()
        except grpc.aio.AioRpcError as err:
            raise grpc_error(err) from None

        async def lines() -> AsyncIterator[bytes]:
            if first is not grpc.aio.EOF:
                yield json.dumps(to_json(first)).encode() + b"\n"
            try:
                async for event in stream:
                    yield json.dumps(to_json(event)).encode() + b"\n"
            except grpc.aio.AioRpcError as err:
                body = {"code": err.code().name, "message": err.details() or ""}
                yield json.dumps({"error": body}).encode() + b"\n"

        return StreamingResponse(lines(), media_type=NDJSON)

    async def corpora(request: Request) -> Response:
        timeout = caller_timeout(request, search_timeout_s)
        try:
            reply = await backend.indexer().ListCorpora(indexer_pb2.ListCorporaRequest(), timeout=timeout)
        except grpc.aio.AioRpcError as err:
            raise grpc_error(err) from None
        return JSONResponse(to_json(reply))

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> Response:
        check = health_pb2.HealthCheckRequest(service="tribrid.v1.Fusion")
        try:
            reply = await backend.health().Check(check, timeout=1.0)
        except grpc.aio.AioRpcError as err:
            return error_response(503, err.code().name, f"gateway not reachable: {err.details()}")
        status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
        if reply.status != health_pb2.HealthCheckResponse.SERVING:
            return error_response(503, "UNAVAILABLE", f"gateway is {status}")
        return JSONResponse({"status": status})

    async def openapi(request: Request) -> Response:
        return JSONResponse(OPENAPI)

    async def not_found(request: Request, exc: Exception) -> Response:
        return error_response(404, "NOT_FOUND", f"no route {request.method} {request.url.path}")

    async def method_not_allowed(request: Request, exc: Exception) -> Response:
        return error_response(
            405, "METHOD_NOT_ALLOWED", f"{request.method} not allowed on {request.url.path}"
        )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await backend.close()

    routes = [
        Route("/v1/search", _observed("/v1/search", search), methods=["POST"]),
        Route("/v1/index", _observed("/v1/index", index), methods=["POST"]),
        Route("/v1/corpora", _observed("/v1/corpora", corpora), methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", _observed("/readyz", readyz), methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
    ]
    app = Starlette(
        routes=routes, lifespan=lifespan, exception_handlers={404: not_found, 405: method_not_allowed}
    )
    app.state.backend = backend
    return app


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json_body(schema: str) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": _ref(schema)}}}


def _ok(schema: str, description: str = "OK") -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": _ref(schema)}}}


_ERRORS = {
    "400": {
        "description": "Malformed JSON or invalid argument",
        "content": {"application/json": {"schema": _ref("Error")}},
    },
    "404": {"description": "Not found", "content": {"application/json": {"schema": _ref("Error")}}},
    "500": {"description": "Internal error", "content": {"application/json": {"schema": _ref("Error")}}},
    "503": {
        "description": "Gateway or legs unavailable",
        "content": {"application/json": {"schema": _ref("Error")}},
    },
    "504": {"description": "Deadline exceeded", "content": {"application/json": {"schema": _ref("Error")}}},
}
_TIMEOUT_HEADERS = [
    {
        "name": "X-Request-Timeout-Ms",
        "in": "header",
        "required": False,
        "schema": {"type": "number", "exclusiveMinimum": 0},
        "description": "Caller deadline in milliseconds, propagated as the gRPC deadline.",
    },
    {
        "name": "grpc-timeout",
        "in": "header",
        "required": False,
        "schema": {"type": "string", "pattern": "^[0-9]{1,8}[HMSmun]$"},
        "description": "Caller deadline in gRPC wire format (500m = 500 ms); wins over X-Request-Timeout-Ms.",
    },
]
_OBJ = {"type": "object", "additionalProperties": True}

OPENAPI: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {
        "title": "TriBridRAG HTTP/JSON bridge",
        "version": "1.0.0",
        "description": "tribrid.v1 protobuf messages as JSON (lowerCamelCase or proto names).",
    },
    "paths": {
        "/v1/search": {
            "post": {
                "summary": "Fused tri-brid search (tribrid.v1.Fusion/Search)",
                "parameters": _TIMEOUT_HEADERS,
                "requestBody": _json_body("SearchRequest"),
                "responses": {"200": _ok("FusionSearchResponse"), **_ERRORS},
            }
        },
        "/v1/index": {
            "post": {
                "summary": "Index a corpus (tribrid.v1.Indexer/IndexCorpus)",
                "parameters": [
                    *_TIMEOUT_HEADERS,
                    {
                        "name": "stream",
                        "in": "query",
                        "required": False,
                        "schema": {"type": "boolean"},
                        "description": "Stream progress events as NDJSON (or Accept: application/x-ndjson).",
                    },
                ],
                "requestBody": _json_body("IndexCorpusRequest"),
                "responses": {
                    "200": {
                        "description": "The final progress event, or NDJSON progress events when streaming",
                        "content": {
                            "application/json": {"schema": _ref("IndexProgress")},
                            NDJSON: {"schema": _ref("IndexProgress")},
                        },
                    },
                    **_ERRORS,
                },
            }
        },
        "/v1/corpora": {
            "get": {
                "summary": "Indexed corpora (tribrid.v1.Indexer/ListCorpora)",
                "responses": {"200": _ok("ListCorporaResponse"), **_ERRORS},
            }
        },
        "/healthz": {
            "get": {
                "summary": "Liveness: the bridge process is up",
                "responses": {
                    "200": {"description": "up", "content": {"application/json": {"schema": _OBJ}}}
                },
            }
        },
        "/readyz": {
            "get": {
                "summary": "Readiness: the gateway's gRPC health check is SERVING",
                "responses": {
                    "200": {"description": "ready", "content": {"application/json": {"schema": _OBJ}}},
                    "503": _ERRORS["503"],
                },
            }
        },
        "/openapi.json": {
            "get": {
                "summary": "This document",
                "responses": {
                    "200": {
                        "description": "OpenAPI 3 document",
                        "content": {"application/json": {"schema": _OBJ}},
                    }
                },
            }
        },
    },
    "components": {
        "schemas": {
            "Error": {
                "type": "object",
                "required": ["code", "message"],
                "properties": {
                    "code": {"type": "string", "example": "INVALID_ARGUMENT"},
                    "message": {"type": "string"},
                },
            },
            "SearchRequest": {
                "type": "object",
                "required": ["corpusId", "query"],
                "properties": {
                    "corpusId": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"},
                    "query": {"type": "string"},
                    "topK": {"type": "integer", "minimum": 1},
                    "filters": {
                        "type": "object",
                        "properties": {
                            "pathGlob": {"type": "string"},
                            "languages": {"type": "array", "items": {"type": "string"}},
                        },
                    },
                    "overrides": {
                        "type": "object",
                        "description": "tribrid.v1.SearchOverrides; unset fields keep the defaults.",
                        "additionalProperties": True,
                    },
                },
            },
            "FusionSearchResponse": {
                "type": "object",
                "properties": {
                    "matches": {"type": "array", "items": _OBJ},
                    "legs": {"type": "array", "items": _OBJ},
                    "partial": {"type": "boolean"},
                    "tookMs": {"type": "number"},
                    "fusionMethod": {"type": "string"},
                },
            },
            "IndexCorpusRequest": {
                "type": "object",
                "required": ["corpusId", "path"],
                "properties": {"corpusId": {"type": "string"}, "path": {"type": "string"}},
            },
            "IndexProgress": {
                "type": "object",
                "properties": {
                    "phase": {"type": "string"},
                    "done": {"type": "boolean"},
                    "chunksTotal": {"type": "integer"},
                    "filesSeen": {"type": "integer"},
                    "message": {"type": "string"},
                },
                "additionalProperties": True,
            },
            "ListCorporaResponse": {
                "type": "object",
                "properties": {"corpora": {"type": "array", "items": _OBJ}},
            },
        }
    },
}
