"""Structured logging, OpenTelemetry tracing and Prometheus metrics, set up once per process.

Tracing: every gRPC server and client carries OpenTelemetry interceptors, so a gateway call's leg
spans are children of the gateway's server span; asyncpg queries get database spans
(opentelemetry-instrumentation-asyncpg) and graph-store calls get hand-made spans (`graph_span`,
`traced_graph_store`). Metrics: `METRICS` below, served on `TelemetryConfig.metrics_port`.
"""

from __future__ import annotations

import functools
import hmac
import inspect
import json
import logging
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from socketserver import ThreadingMixIn
from typing import Any, TypeVar, cast
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import grpc
import prometheus_client
from opentelemetry import trace

from tribrid import auth
from tribrid.config import AuthConfig, TelemetryConfig
from tribrid.options import RequestError

_STANDARD_RECORD_KEYS = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """One JSON object per line; `extra={...}` fields become top-level keys."""

    def __init__(self, service: str = "") -> None:
        super().__init__()
        self._service = service

    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if self._service:
            payload["service"] = self._service
        payload.update({k: v for k, v in record.__dict__.items() if k not in _STANDARD_RECORD_KEYS})
        if record.exc_info:
            payload["exc"] = self.formatException(record.exc_info)
        return json.dumps(payload, default=str)


def setup_logging(cfg: TelemetryConfig, service: str = "") -> None:
    """Log to stderr; each line names `service` (the processes of `tribrid serve` share one log)."""
    handler = logging.StreamHandler(sys.stderr)
    if cfg.log_json:
        handler.setFormatter(JsonFormatter(service))
    else:
        prefix = f"[{service}] " if service else ""
        handler.setFormatter(logging.Formatter(prefix + "%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(cfg.log_level)


_tracing_ready = False


def setup_tracing(cfg: TelemetryConfig, service_name: str | None = None) -> None:
    """Install a tracer provider exporting to OTLP and/or the console, if configured."""
    global _tracing_ready
    if _tracing_ready:
        return
    _tracing_ready = True
    if not cfg.otlp_endpoint and not cfg.console_exporter:
        return  # the API's no-op tracer; the gRPC tracing interceptors stand aside (tracing_on)
    # the SDK and the gRPC instrumentation are imported only where tracing is on: about 60 ms of a
    # service's start
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    provider = TracerProvider(resource=Resource.create({"service.name": service_name or cfg.service_name}))
    if cfg.otlp_endpoint:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (  # type: ignore[import-not-found]
            OTLPSpanExporter,
        )

        exporter = OTLPSpanExporter(endpoint=cfg.otlp_endpoint, insecure=cfg.otlp_insecure)
        provider.add_span_processor(BatchSpanProcessor(exporter))
    if cfg.console_exporter:
        provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
    trace.set_tracer_provider(provider)
    if cfg.instrument_asyncpg:
        instrument_asyncpg()


def instrument_asyncpg() -> None:
    """Database spans (db.system=postgresql, db.statement) for every asyncpg query in this process."""
    from opentelemetry.instrumentation.asyncpg import AsyncPGInstrumentor

    instrumentor = AsyncPGInstrumentor()  # type: ignore[no-untyped-call]
    if not instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.instrument()


def tracing_on() -> bool:
    """Spans are recorded in this process: a recording tracer provider is installed (setup_tracing
    with an exporter, or a test's). Otherwise the API's no-op tracer is in place."""
    sdk = sys.modules.get("opentelemetry.sdk.trace")  # no SDK imported: no recording provider
    return sdk is not None and isinstance(trace.get_tracer_provider(), sdk.TracerProvider)


def server_interceptors() -> Sequence[grpc.aio.ServerInterceptor]:
    """OpenTelemetry's while tracing is on (`client_interceptors`); the metrics are counted in
    `tribrid.server.CallPolicy` (`call_recorder`)."""
    if not tracing_on():
        return []
    # Health checks are not traced: they are noise, and the tracing interceptor iterates a
    # streaming handler, which health's Watch (a coroutine writing its messages) is not.
    from opentelemetry.instrumentation.grpc import aio_server_interceptor, filters

    untraced = filters.negate(filters.health_check())  # type: ignore[no-untyped-call]
    return [aio_server_interceptor(filter_=untraced)]  # type: ignore[no-untyped-call]


def client_interceptors() -> Sequence[grpc.aio.ClientInterceptor]:
    """OpenTelemetry's, when tracing is on as the channel is made (setup_tracing runs first).

    Its interceptors work the same under the no-op tracer: every call, its context and its no-op
    span wrapped, about 1 ms of the services' CPU per fused answer (5 %). Without an exporter there
    is nothing to send a span to, so none are installed, and no trace context is read or passed on."""
    if not tracing_on():
        return []
    from opentelemetry.instrumentation.grpc import aio_client_interceptors

    return list(aio_client_interceptors())  # type: ignore[no-untyped-call]


tracer = trace.get_tracer("tribrid")


# --- hand-made spans ------------------------------------------------------------------------------


@contextmanager
def span(name: str, **attributes: Any) -> Iterator[trace.Span]:
    """A child span of the current one; None-valued attributes are left out."""
    with tracer.start_as_current_span(name) as current:
        for key, value in attributes.items():
            if value is not None:
                current.set_attribute(f"tribrid.{key}", value)
        yield current


@contextmanager
def graph_span(operation: str, corpus: str | None = None, **attributes: Any) -> Iterator[trace.Span]:
    """A database span around one graph-store call (FalkorDB/Neo4j have no OpenTelemetry plugin)."""
    with tracer.start_as_current_span(f"graphstore.{operation}", kind=trace.SpanKind.CLIENT) as current:
        current.set_attribute("db.system", "graph")
        current.set_attribute("db.operation", operation)
        if corpus is not None:
            current.set_attribute("tribrid.corpus", corpus)
        for key, value in attributes.items():
            if value is not None:
                current.set_attribute(f"tribrid.{key}", value)
        yield current


T = TypeVar("T")


def traced_graph_store(store: T, backend: str) -> T:
    """`store` with every public coroutine method wrapped in a `graph_span` (a transparent proxy)."""
    return cast(T, _TracedGraphStore(store, backend))


class _TracedGraphStore:
    def __init__(self, inner: Any, backend: str) -> None:
        self._inner = inner
        self._backend = backend

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name.startswith("_") or not inspect.iscoroutinefunction(attr):
            return attr

        @functools.wraps(attr)
        async def call(*args: Any, **kwargs: Any) -> Any:
            corpus = kwargs.get("corpus_id", args[0] if args and isinstance(args[0], str) else None)
            with graph_span(name, corpus, backend=self._backend) as current:
                result = await attr(*args, **kwargs)
                if isinstance(result, list | tuple):
                    current.set_attribute("tribrid.hits", len(result))
                return result

        return call


# --- Prometheus metrics ---------------------------------------------------------------------------

_LATENCY_BUCKETS = (0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    """Every metric this project exports (one registry per process)."""

    def __init__(self, registry: prometheus_client.CollectorRegistry) -> None:
        self.registry = registry
        self.requests = prometheus_client.Counter(
            "tribrid_grpc_requests_total",
            "gRPC requests served, by method and status code",
            ["method", "code"],
            registry=registry,
        )
        self.request_latency = prometheus_client.Histogram(
            "tribrid_grpc_request_duration_seconds",
            "gRPC request latency as served, by method",
            ["method"],
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        self.leg_latency = prometheus_client.Histogram(
            "tribrid_leg_duration_seconds",
            "Gateway-observed latency of each leg call, by leg and status",
            ["leg", "status"],
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        self.leg_requests = prometheus_client.Counter(
            "tribrid_leg_requests_total",
            "Gateway leg calls, by leg and status (ok, timeout, error)",
            ["leg", "status"],
            registry=registry,
        )
        self.leg_timeouts = prometheus_client.Counter(
            "tribrid_leg_timeouts_total", "Leg calls dropped at their deadline", ["leg"], registry=registry
        )
        self.leg_hedges = prometheus_client.Counter(
            "tribrid_leg_hedges_total",
            "Leg calls that also asked a second endpoint of the leg (hedging)",
            ["leg"],
            registry=registry,
        )
        self.technique_latency = prometheus_client.Histogram(
            "tribrid_technique_duration_seconds",
            "Query techniques (model call and their leg calls), by technique and status",
            ["technique", "status"],
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        self.partial = prometheus_client.Counter(
            "tribrid_fusion_partial_responses_total",
            "Fused answers missing at least one enabled leg",
            registry=registry,
        )
        self.fusion_time = prometheus_client.Histogram(
            "tribrid_fusion_merge_duration_seconds",
            "Time spent fusing the legs' answers (after the fan-out)",
            buckets=(0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1),
            registry=registry,
        )
        self.gateway_latency = prometheus_client.Histogram(
            "tribrid_fusion_search_duration_seconds",
            "End-to-end gateway search time, by status code",
            ["code"],
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        self.shed = prometheus_client.Counter(
            "tribrid_shed_requests_total",
            "Calls answered RESOURCE_EXHAUSTED because services.max_in_flight were in flight, by method",
            ["method"],
            registry=registry,
        )
        self.http_requests = prometheus_client.Counter(
            "tribrid_http_requests_total",
            "HTTP bridge requests, by route and HTTP status",
            ["route", "status"],
            registry=registry,
        )
        self.http_latency = prometheus_client.Histogram(
            "tribrid_http_request_duration_seconds",
            "HTTP bridge latency, by route",
            ["route"],
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )


METRICS = Metrics(prometheus_client.REGISTRY)
_metrics_port: int | None = None

# Who may read /metrics: True for an `Authorization` header value that may (None: none was sent).
MetricsGuard = Callable[[str | None], bool]


def metrics_guard(cfg: TelemetryConfig, auth_cfg: AuthConfig) -> MetricsGuard | None:
    """None when /metrics is open (telemetry.metrics_auth off); else whether a header carries the
    dedicated metrics token or an admin token of `auth`."""
    if not cfg.metrics_auth:
        return None
    tokens = auth.TokenTable(auth_cfg)
    dedicated = cfg.metrics_token_sha256
    if dedicated is None and not tokens.has_scope("admin"):
        raise ValueError(
            "telemetry.metrics_auth needs telemetry.metrics_token_sha256"
            " or an auth token with the admin scope"
        )

    def allowed(authorization: str | None) -> bool:
        scheme, _, token = (authorization or "").strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return False
        if dedicated is not None and hmac.compare_digest(dedicated, auth.hash_token(token.strip())):
            return True
        try:
            return "admin" in tokens.authenticate(authorization).scopes
        except RequestError:
            return False

    return allowed


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # a scrape every few seconds: no log
        pass


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


def serve_metrics(port: int, host: str, guard: MetricsGuard | None) -> WSGIServer:
    """The Prometheus exposition of this process's registry on host:port, in a daemon thread; with
    a guard, a scrape it refuses gets 401 (no token or an unknown one: one answer for both)."""
    metrics_app = prometheus_client.make_wsgi_app()

    def app(environ: dict[str, Any], start_response: Any) -> Any:
        if guard is not None and not guard(environ.get("HTTP_AUTHORIZATION")):
            start_response(
                "401 Unauthorized",
                [("WWW-Authenticate", 'Bearer realm="metrics"'), ("Content-Type", "text/plain")],
            )
            return [b"/metrics needs 'Authorization: Bearer <token>' (the metrics token or an admin one)\n"]
        return metrics_app(environ, start_response)

    server = make_server(host, port, app, _ThreadingWSGIServer, handler_class=_QuietHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def start_metrics_server(cfg: TelemetryConfig, auth_cfg: AuthConfig, host: str = "0.0.0.0") -> int | None:
    """Serve /metrics on cfg.metrics_port (0 = off); once per process. Returns the port."""
    global _metrics_port
    if cfg.metrics_port == 0 or _metrics_port is not None:
        return _metrics_port
    guard = metrics_guard(cfg, auth_cfg)
    try:
        serve_metrics(cfg.metrics_port, host, guard)
    except OSError as err:  # e.g. two services started separately on one host: keep serving
        logging.getLogger(__name__).warning(
            "metrics port unavailable", extra={"port": cfg.metrics_port, "error": str(err)}
        )
        return None
    _metrics_port = cfg.metrics_port
    return _metrics_port


_Req = TypeVar("_Req")
_Resp = TypeVar("_Resp")


# What a grpc.aio server's method handler holds in `unary_unary` and `unary_stream`: a coroutine
# function and an async generator function, both taking the aio context. The grpc stubs type
# `grpc.RpcMethodHandler`'s behaviours for the sync server only, so interceptors cast to these.
def yields_messages(handler: grpc.RpcMethodHandler[Any, Any]) -> bool:
    """A server-streaming handler that yields its messages, which an interceptor can wrap; the
    other kind (grpc_health's Watch) is a coroutine writing them with `context.write`."""
    return handler.unary_stream is not None and inspect.isasyncgenfunction(handler.unary_stream)


AioUnaryUnary = Callable[[_Req, grpc.aio.ServicerContext[_Req, _Resp]], Awaitable[_Resp]]
AioUnaryStream = Callable[[_Req, grpc.aio.ServicerContext[_Req, _Resp]], AsyncIterator[_Resp]]


def _code_of(context: grpc.aio.ServicerContext[Any, Any], err: BaseException | None) -> str:
    code = context.code()
    if isinstance(code, grpc.StatusCode):
        return str(code.name)
    if isinstance(code, int):  # some grpcio versions report the raw integer
        return str(next((c.name for c in grpc.StatusCode if c.value[0] == code), "UNKNOWN"))
    return "OK" if err is None else "UNKNOWN"


def call_recorder(
    method: str,
) -> Callable[[grpc.aio.ServicerContext[Any, Any], float, BaseException | None], None]:
    """What counts and times one call of `method` (`tribrid.server.CallPolicy`), given its
    context, its start (`time.perf_counter`) and what it raised."""
    latency = METRICS.request_latency.labels(method)

    def record(
        context: grpc.aio.ServicerContext[Any, Any], started: float, err: BaseException | None
    ) -> None:
        METRICS.requests.labels(method, _code_of(context, err)).inc()
        latency.observe(time.perf_counter() - started)

    return record
