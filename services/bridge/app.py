"""The HTTP/JSON bridge: one route per `google.api.http` rule of the contract, each a gRPC call.

No retrieval logic lives here, and no list of routes: they come from the services' descriptors
(services.bridge.contract). A `body: "*"` route reads the request message from the JSON body
(google.protobuf.json_format: lowerCamelCase or proto field names, unknown fields rejected); a GET
or DELETE route reads it from the path parameters and the query string (`?limit=5&filters.pathGlob=x`,
scalar fields only, unknown parameters rejected). Answers are the response messages in proto3
JSON; gRPC status codes map to HTTP statuses as grpc-gateway maps them; error bodies are
{"code": "INVALID_ARGUMENT", "message": "..."}. A caller deadline comes from a `grpc-timeout`
header (e.g. "500m", "2S") or `X-Request-Timeout-Ms`. A server-streaming RPC answers its last
message, or every message as NDJSON with `?stream=true` or `Accept: application/x-ndjson`.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2
from opentelemetry import trace
from opentelemetry.propagate import extract
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from services.bridge import mcp, openapi
from services.bridge.backend import READY_SERVICE, Backend
from services.bridge.console import routes as console
from services.bridge.contract import (
    HTTP_STATUS,
    HTTP_STATUS_OTHER,
    NDJSON,
    NO_BODY_VERBS,
    STREAM_PARAM,
    HttpRoute,
    http_routes,
    resolve_scalar,
    starlette_param,
    to_json,
)
from services.bridge.proto_json import dumps
from services.bridge.request_shape import shape_error
from tribrid import auth, telemetry
from tribrid.config import AuthConfig, ServicesConfig
from tribrid.options import RequestError

log = logging.getLogger(__name__)

_GRPC_TIMEOUT_RE = re.compile(r"^(\d{1,8})([HMSmun])$")
_GRPC_TIMEOUT_UNITS = {"H": 3600.0, "M": 60.0, "S": 1.0, "m": 1e-3, "u": 1e-6, "n": 1e-9}
_TRUE = ("1", "true")


class BridgeError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def error_response(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"code": code, "message": message}, status_code=status)


def invalid(message: str) -> BridgeError:
    return BridgeError(400, "INVALID_ARGUMENT", message)


def grpc_error(err: grpc.aio.AioRpcError) -> BridgeError:
    code = err.code()
    return BridgeError(HTTP_STATUS.get(code, HTTP_STATUS_OTHER), code.name, err.details() or code.name)


def caller_timeout(request: Request, default_s: float | None) -> float | None:
    """The caller's deadline in seconds: `grpc-timeout`, else `X-Request-Timeout-Ms`, else the default."""
    raw = request.headers.get("grpc-timeout")
    if raw is not None:
        match = _GRPC_TIMEOUT_RE.match(raw.strip())
        if match is None:
            raise invalid(f"bad grpc-timeout header {raw!r}, e.g. '500m' or '2S'")
        return int(match.group(1)) * _GRPC_TIMEOUT_UNITS[match.group(2)]
    raw = request.headers.get("x-request-timeout-ms")
    if raw is not None:
        try:
            ms = float(raw)
        except ValueError:
            ms = -1
        if ms <= 0:
            raise invalid(f"X-Request-Timeout-Ms must be a positive number, got {raw!r}")
        return ms / 1000
    return default_s


async def parse_body(request: Request, message: Message) -> None:
    body = await request.body()
    try:
        text = body.decode("utf-8") if body else "{}"
        parsed = json.loads(text)
        if not isinstance(parsed, dict):
            raise invalid("the request body must be a JSON object")
        if error := shape_error(parsed, message.DESCRIPTOR):
            raise invalid(f"malformed JSON body: {error}")
        json_format.Parse(text, message, ignore_unknown_fields=False)
    except (UnicodeDecodeError, json.JSONDecodeError, json_format.ParseError) as err:
        raise invalid(f"malformed JSON body: {err}") from None


def _query_value(field: FieldDescriptor, raw: str) -> Any:
    """A query-string value as json_format reads it (which takes numbers and enums as strings)."""
    if field.type != FieldDescriptor.TYPE_BOOL:
        return raw
    if raw.lower() in ("true", "1"):
        return True
    if raw.lower() in ("false", "0"):
        return False
    return raw  # json_format names the field in its error


def _set_path(tree: dict[str, Any], chain: tuple[FieldDescriptor, ...], value: Any) -> None:
    for field in chain[:-1]:
        tree = tree.setdefault(field.name, {})
    tree[chain[-1].name] = value


def parse_params(request: Request, route: HttpRoute, message: Message) -> None:
    """Path parameters, and for GET/DELETE the query string, onto the request message."""
    tree: dict[str, Any] = {}
    for field_path in route.path_fields:
        chain = resolve_scalar(route.method.input_type, field_path)
        assert chain is not None  # checked when the route was read
        _set_path(tree, chain, _query_value(chain[-1], request.path_params[starlette_param(field_path)]))
    for name in dict.fromkeys(request.query_params.keys()):
        if route.server_streaming and name == STREAM_PARAM:
            continue
        values = request.query_params.getlist(name)
        chain = resolve_scalar(route.method.input_type, name) if route.verb in NO_BODY_VERBS else None
        if chain is None:
            raise invalid(f"unknown query parameter {name!r} for {route.verb} {route.template}")
        proto_path = ".".join(f.name for f in chain)
        if proto_path in route.path_fields:
            raise invalid(f"query parameter {name!r} is set by the path {route.template}")
        field = chain[-1]
        if not field.is_repeated and len(values) > 1:
            raise invalid(f"query parameter {name!r} is given {len(values)} times")
        converted = [_query_value(field, v) for v in values]
        _set_path(tree, chain, converted if field.is_repeated else converted[0])
    try:
        json_format.ParseDict(tree, message, ignore_unknown_fields=False)
    except json_format.ParseError as err:
        raise invalid(f"bad path or query parameter: {err}") from None


Handler = Callable[[Request], Awaitable[Response]]
# Paths anyone may read: probes and the contract.
OPEN_PATHS = frozenset({"/healthz", "/readyz", "/openapi.json"})


class BearerAuth:
    """401 for a request without a known bearer token; otherwise the caller is `auth.CALLER` and
    its token goes with every gRPC call (the services answer a scope or corpus it lacks: 403)."""

    def __init__(self, app: ASGIApp, cfg: AuthConfig) -> None:
        self.app = app
        self.tokens = auth.TokenTable(cfg)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # the console's pages and static files carry no secret; its JSON routes stay behind the token
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS or console.is_open(scope["path"]):
            await self.app(scope, receive, send)
            return
        try:
            caller = self.tokens.authenticate(Request(scope).headers.get("authorization"))
        except RequestError as err:
            response = error_response(401, err.code.name, err.message)
            response.headers["WWW-Authenticate"] = "Bearer"
            await response(scope, receive, send)
            return
        token = auth.CALLER.set(caller)
        try:
            await self.app(scope, receive, send)
        finally:
            auth.CALLER.reset(token)


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


def _wants_stream(request: Request) -> bool:
    """Every message as NDJSON: `?stream=true` (or 1), or `Accept: application/x-ndjson`."""
    asked = request.query_params.get(STREAM_PARAM, "").lower() in _TRUE
    return asked or NDJSON in request.headers.get("accept", "")


def default_timeout(route: HttpRoute, timeout_s: float | None) -> float | None:
    """The deadline of a call whose caller sends none: `timeout_s` for a unary read or search; none
    for a server-streaming call (indexing) or a DELETE (a delete cut short is worse than a slow one)."""
    return None if route.server_streaming or route.verb == "DELETE" else timeout_s


def json_reply(message: Message) -> Response:
    return Response(dumps(to_json(message)), media_type="application/json")


def rpc_handler(route: HttpRoute, backend: Backend, timeout_s: float | None) -> Handler:
    """One http rule: the request message from the body or the path and query, one gRPC call."""
    fallback_timeout = default_timeout(route, timeout_s)

    async def request_message(request: Request) -> tuple[Message, float | None]:
        timeout = caller_timeout(request, fallback_timeout)
        message = route.request_class()
        if route.body == "*":
            await parse_body(request, message)
        parse_params(request, route, message)
        return message, timeout

    async def unary(request: Request) -> Response:
        message, timeout = await request_message(request)
        try:
            reply = await backend.unary(route)(message, timeout=timeout, metadata=auth.outgoing_metadata())
        except grpc.aio.AioRpcError as err:
            raise grpc_error(err) from None
        return json_reply(reply)

    async def streaming(request: Request) -> Response:
        message, timeout = await request_message(request)
        stream = backend.streaming(route)(message, timeout=timeout, metadata=auth.outgoing_metadata())
        if not _wants_stream(request):
            last = route.response_class()
            try:
                async for event in stream:
                    last = event
            except grpc.aio.AioRpcError as err:
                raise grpc_error(err) from None
            return json_reply(last)
        try:  # the first message decides the HTTP status; later errors become an error line
            first = await stream.read()
        except grpc.aio.AioRpcError as err:
            raise grpc_error(err) from None

        async def lines() -> AsyncIterator[bytes]:
            if isinstance(first, Message):  # else grpc.aio.EOF: a stream without messages
                yield dumps(to_json(first)) + b"\n"
            try:
                async for event in stream:
                    yield dumps(to_json(event)) + b"\n"
            except grpc.aio.AioRpcError as err:
                body = {"code": err.code().name, "message": err.details() or ""}
                yield dumps({"error": body}) + b"\n"

        return StreamingResponse(lines(), media_type=NDJSON)

    return streaming if route.server_streaming else unary


def load_openapi(path: Path | None) -> bytes:
    """The document `make protos` wrote, else one built now (without the .proto comments)."""
    if path is not None and path.is_file():
        return path.read_bytes()
    log.warning("no %s: serving an OpenAPI document without descriptions", path)
    return json.dumps(openapi.build_document()).encode()


def create_app(
    addresses: Mapping[str, str],
    timeout_s: float | None = 5.0,
    openapi_path: Path | None = openapi.DEFAULT_PATH,
    auth_cfg: AuthConfig | None = None,
    services: ServicesConfig | None = None,
    gateway_metrics_url: str = "",
) -> Starlette:
    """The bridge app. `addresses`: by service full name ("tribrid.v1.GraphSearch"), one for every
    public service; `timeout_s`: see default_timeout; `openapi_path`: the document `make protos`
    wrote (built here when absent); `auth_cfg` (when enabled): bearer tokens (BearerAuth);
    `services`: its TLS settings for the calls to the services (`tls_ca_file`);
    `gateway_metrics_url`: where the console's health page reads the legs' latency (console.routes)."""
    routes_read = http_routes()
    missing = sorted({r.service.full_name for r in routes_read} - set(addresses))
    if missing or READY_SERVICE not in addresses:
        raise ValueError(f"no address for {', '.join(missing or [READY_SERVICE])}")
    backend = Backend(addresses, services)
    document = load_openapi(openapi_path)
    mcp_http = mcp.HttpEndpoint(backend, timeout_s)

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> Response:
        if request.app.state.draining:
            return error_response(503, "UNAVAILABLE", "the bridge is shutting down")
        check = health_pb2.HealthCheckRequest(service=READY_SERVICE)
        try:
            reply = await backend.health().Check(check, timeout=1.0)
        except grpc.aio.AioRpcError as err:
            return error_response(503, err.code().name, f"gateway not reachable: {err.details()}")
        status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
        if reply.status != health_pb2.HealthCheckResponse.SERVING:
            return error_response(503, "UNAVAILABLE", f"gateway is {status}")
        return JSONResponse({"status": status})

    async def openapi_json(request: Request) -> Response:
        return Response(document, media_type="application/json")

    async def not_found(request: Request, exc: Exception) -> Response:
        return error_response(404, "NOT_FOUND", f"no route {request.method} {request.url.path}")

    async def method_not_allowed(request: Request, exc: Exception) -> Response:
        return error_response(
            405, "METHOD_NOT_ALLOWED", f"{request.method} not allowed on {request.url.path}"
        )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with mcp_http.running():
            yield
        await backend.close()

    # A literal path wins over a template that also matches it.
    ordered = sorted(routes_read, key=lambda r: len(r.path_fields))
    routes = [
        Route(r.starlette_path, _observed(r.template, rpc_handler(r, backend, timeout_s)), methods=[r.verb])
        for r in ordered
    ]
    routes += [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", _observed("/readyz", readyz), methods=["GET"]),
        Route("/openapi.json", openapi_json, methods=["GET"]),
        mcp_http.route,
    ]
    middleware = [Middleware(BearerAuth, cfg=auth_cfg)] if auth_cfg is not None and auth_cfg.enabled else []
    app = Starlette(
        routes=[*routes, *console.routes(backend, gateway_metrics_url)],
        lifespan=lifespan,
        exception_handlers={404: not_found, 405: method_not_allowed},
        middleware=middleware,
    )
    app.state.backend = backend
    app.state.draining = False  # set on SIGTERM (BridgeServer.drain): /readyz answers 503
    return app
