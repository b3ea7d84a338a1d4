"""gRPC server bootstrap shared by every service: health, reflection, tracing, graceful stop."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn, Protocol, TypeVar, cast

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from pydantic import ValidationError

from tribrid import auth, telemetry
from tribrid.config import AuthConfig, describe_errors
from tribrid.options import RequestError
from tribrid.tls import SERVER_KEEPALIVE

log = logging.getLogger(__name__)


@dataclass
class ServiceSpec:
    """One gRPC service to host: its full name and how to add its servicer to a server."""

    # Taken from the generated _pb2 descriptor, which also loads the .proto file that reflection serves.
    full_name: str  # e.g. "tribrid.v1.VectorSearch"
    register: Callable[[grpc.aio.Server], None]
    on_stop: Callable[[], Awaitable[None]] | None = None
    # The largest request it takes (gRPC's default, 4 MiB, unless it needs more: a graph import).
    max_request_bytes: int = 4 * 1024 * 1024


@dataclass
class RunningServer:
    server: grpc.aio.Server
    port: int
    health: health.aio.HealthServicer
    specs: Sequence[ServiceSpec] = field(default_factory=list)

    async def drain(self) -> None:
        """Report NOT_SERVING (every service name) while still serving: traffic should go elsewhere."""
        await self.health.enter_graceful_shutdown()

    async def stop(self, grace_s: float) -> None:
        await self.drain()
        await self.server.stop(grace_s)
        for spec in self.specs:
            if spec.on_stop is not None:
                await spec.on_stop()


# Messages echo the caller's values; the status message travels percent-encoded in a trailer that
# clients may drop beyond 8 KiB of metadata (answering RESOURCE_EXHAUSTED "Stream removed" instead
# of the rejection). 500 characters stay under it even at 12 encoded bytes per character.
MAX_ERROR_MESSAGE_CHARS = 500


def _bounded(message: str) -> str:
    if len(message) <= MAX_ERROR_MESSAGE_CHARS:
        return message
    return message[: MAX_ERROR_MESSAGE_CHARS - 1] + "…"


async def _answer(context: grpc.aio.ServicerContext[Any, Any], error: Exception) -> NoReturn:
    if isinstance(error, RequestError):
        await context.abort(error.code, _bounded(error.message))
    assert isinstance(error, ValidationError)
    await context.abort(grpc.StatusCode.INVALID_ARGUMENT, _bounded("; ".join(describe_errors(error))))


_Req = TypeVar("_Req")
_Resp = TypeVar("_Resp")
# What one call of an RPC runs inside, given its request and context: it may refuse the call by
# raising, or answer what the call raised by aborting; it never swallows an exception.
Around = Callable[[Any, "grpc.aio.ServicerContext[Any, Any]"], "contextlib.AbstractAsyncContextManager[None]"]


def _around(
    handler: grpc.RpcMethodHandler[_Req, _Resp], around: Around
) -> grpc.RpcMethodHandler[_Req, _Resp]:
    """`handler` with every call run inside `around(request, context)`."""
    if handler.unary_unary is not None:
        unary = cast("telemetry.AioUnaryUnary[_Req, _Resp]", handler.unary_unary)

        async def call_unary(request: _Req, context: grpc.aio.ServicerContext[_Req, _Resp]) -> _Resp:
            async with around(request, context):
                return await unary(request, context)
            raise AssertionError("an Around swallowed an exception")  # none does: see Around

        return grpc.unary_unary_rpc_method_handler(
            call_unary, handler.request_deserializer, handler.response_serializer
        )
    if telemetry.yields_messages(handler):
        stream = cast("telemetry.AioUnaryStream[_Req, _Resp]", handler.unary_stream)

        async def call_stream(
            request: _Req, context: grpc.aio.ServicerContext[_Req, _Resp]
        ) -> AsyncIterator[_Resp]:
            async with around(request, context):
                async for item in stream(request, context):
                    yield item

        return grpc.unary_stream_rpc_method_handler(
            call_stream, handler.request_deserializer, handler.response_serializer
        )
    return handler  # streaming requests, and a Watch that writes its messages (open services only)


@contextlib.asynccontextmanager
async def _answering(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> AsyncIterator[None]:
    try:
        yield
    except (RequestError, ValidationError) as err:
        await _answer(context, err)


class RequestErrors(grpc.aio.ServerInterceptor):
    """Answers what a caller must fix, raised anywhere in an RPC, with its status and message:
    `RequestError` with its own code, a pydantic `ValidationError` as INVALID_ARGUMENT naming
    the field and the allowed range. Servicers raise; none of them catches to abort."""

    async def intercept_service(
        self,
        continuation: Callable[
            [grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[_Req, _Resp] | None]
        ],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[_Req, _Resp] | None:
        handler = await continuation(details)
        return None if handler is None else _around(handler, _answering)


class _Admitting(grpc.aio.ServerInterceptor):
    """Runs every call of the contract's RPCs (health and reflection aside) inside `admit`."""

    async def intercept_service(
        self,
        continuation: Callable[
            [grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[_Req, _Resp] | None]
        ],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[_Req, _Resp] | None:
        handler = await continuation(details)
        method: str = details.method  # type: ignore[attr-defined]
        if handler is None or auth.is_open(method):
            return handler
        return _around(handler, lambda request, context: self.admit(method, request, context))

    def admit(
        self, method: str, request: Any, context: grpc.aio.ServicerContext[Any, Any]
    ) -> contextlib.AbstractAsyncContextManager[None]:
        raise NotImplementedError


class BearerTokens(_Admitting):
    """UNAUTHENTICATED without a known bearer token, PERMISSION_DENIED without the RPC's scope or
    the request's corpus; the caller is then `auth.CALLER` for the servicer and its outgoing calls."""

    def __init__(self, cfg: AuthConfig) -> None:
        self.tokens = auth.TokenTable(cfg)

    @contextlib.asynccontextmanager
    async def admit(
        self, method: str, request: Any, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[None]:
        caller = self.tokens.authorize(method, tuple(context.invocation_metadata() or ()), request)
        token = auth.CALLER.set(caller)
        try:
            yield
        finally:
            auth.CALLER.reset(token)


class InFlightLimit(_Admitting):
    """At most `limit` calls served at once; the next is answered RESOURCE_EXHAUSTED right away
    (a caller retries or goes elsewhere: a queue would only grow every answer's latency)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.in_flight = 0

    @contextlib.asynccontextmanager
    async def admit(
        self, method: str, request: Any, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[None]:
        if self.in_flight >= self.limit:
            telemetry.METRICS.shed.labels(method).inc()
            raise RequestError(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"{self.limit} requests in flight (services.max_in_flight): retry later",
            )
        self.in_flight += 1
        try:
            yield
        finally:
            self.in_flight -= 1


async def start_server(
    specs: Sequence[ServiceSpec],
    host: str,
    port: int,
    *,
    auth_cfg: AuthConfig | None = None,
    max_in_flight: int = 0,
    tls: grpc.ServerCredentials | None = None,
) -> RunningServer:
    """Start a grpc.aio server hosting `specs` plus health and reflection; port 0 picks a free one.
    `auth_cfg` (when enabled): bearer tokens on every RPC but health and reflection;
    `max_in_flight` (0 = none): the bound on calls served at once; `tls`: serve TLS only."""
    admission: list[grpc.aio.ServerInterceptor] = []
    if auth_cfg is not None and auth_cfg.enabled:
        admission.append(BearerTokens(auth_cfg))
    if max_in_flight > 0:
        admission.append(InFlightLimit(max_in_flight))
    server = grpc.aio.server(
        interceptors=[*telemetry.server_interceptors(), RequestErrors(), *admission],
        options=[
            *SERVER_KEEPALIVE,
            (
                "grpc.max_receive_message_length",
                max((spec.max_request_bytes for spec in specs), default=4 * 1024 * 1024),
            ),
        ],
    )
    for spec in specs:
        spec.register(server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    names = [spec.full_name for spec in specs]
    reflection.enable_server_reflection([*names, health.SERVICE_NAME, reflection.SERVICE_NAME], server)
    address = f"{host}:{port}"
    bound = server.add_insecure_port(address) if tls is None else server.add_secure_port(address, tls)
    if bound == 0:
        raise RuntimeError(f"cannot bind {host}:{port}")
    await server.start()
    serving = health_pb2.HealthCheckResponse.SERVING
    for name in ["", *names]:
        await health_servicer.set(name, serving)
    log.info("serving", extra={"services": names, "address": f"{host}:{bound}"})
    return RunningServer(server=server, port=bound, health=health_servicer, specs=specs)


class Stoppable(Protocol):
    """Anything the runner stops on a signal: gRPC servers and the HTTP bridge."""

    port: int

    async def drain(self) -> None: ...

    async def stop(self, grace_s: float) -> None: ...


def freeze_long_lived_objects() -> None:
    """Keep the objects alive now out of the garbage collector's full passes.

    A process holds millions of long-lived objects (the model, grammars, protobuf classes, the
    indexer's kept parses). Each full pass walked them all: under load it stalled every request in
    flight for 150-300 ms, every second or two. Frozen objects are still freed by reference
    counting when dropped; only reference cycles among them would wait for an unfreeze.
    """
    gc.collect()
    gc.freeze()


async def serve_until_signal(
    servers: Sequence[Stoppable], grace_s: float, drain_delay_s: float = 0.0
) -> None:
    """Block until SIGTERM/SIGINT; then report not ready and keep serving for `drain_delay_s`
    (services.drain_delay_s), then stop every server, finishing calls in flight within `grace_s`."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("draining", extra={"drain_delay_s": drain_delay_s, "grace_s": grace_s})
    await asyncio.gather(*(s.drain() for s in servers))
    await asyncio.sleep(drain_delay_s)
    log.info("shutting down", extra={"grace_s": grace_s})
    await asyncio.gather(*(s.stop(grace_s) for s in servers))
