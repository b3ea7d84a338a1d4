"""gRPC server bootstrap shared by every service: health, reflection, tracing, graceful stop."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import logging
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn, Protocol, TypeVar, cast

import asyncpg
import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from pydantic import ValidationError

from tribrid import auth, telemetry
from tribrid.config import AuthConfig, describe_errors
from tribrid.method_wrapping import Handler, WrapsMethods
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
    # Work done once the service answers, in the background (loading what its first questions
    # would otherwise wait for); cancelled when it stops.
    warm_up: Callable[[], Coroutine[Any, Any, object]] | None = None
    # The largest request it takes (gRPC's default, 4 MiB, unless it needs more: a graph import).
    max_request_bytes: int = 4 * 1024 * 1024


@dataclass
class RunningServer:
    server: grpc.aio.Server
    port: int
    health: health.aio.HealthServicer
    specs: Sequence[ServiceSpec] = field(default_factory=list)
    warming: list[asyncio.Task[object]] = field(default_factory=list)

    async def drain(self) -> None:
        """Report NOT_SERVING (every service name) while still serving: traffic should go elsewhere."""
        await self.health.enter_graceful_shutdown()

    async def stop(self, grace_s: float) -> None:
        await self.drain()
        for task in self.warming:
            task.cancel()
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


# A store that is down, refused or dropped the connection, or did not answer in time (asyncpg's
# statement timeout): the caller may retry, which UNKNOWN would not tell it. Not every OSError: a
# file the indexer cannot read is no store's failure.
STORE_FAILURES = (ConnectionError, TimeoutError, asyncpg.InterfaceError, asyncpg.PostgresConnectionError)


async def _answer(context: grpc.aio.ServicerContext[Any, Any], error: Exception) -> NoReturn:
    if isinstance(error, RequestError):
        await context.abort(error.code, _bounded(error.message))
    if isinstance(error, STORE_FAILURES):
        reason = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        log.warning("a store did not answer: the call is answered UNAVAILABLE", exc_info=error)
        await context.abort(grpc.StatusCode.UNAVAILABLE, _bounded(f"a store did not answer ({reason})"))
    assert isinstance(error, ValidationError)
    await context.abort(grpc.StatusCode.INVALID_ARGUMENT, _bounded("; ".join(describe_errors(error))))


_Req = TypeVar("_Req")
_Resp = TypeVar("_Resp")


class CallPolicy(WrapsMethods):
    """What every call of a service's RPCs goes through, in one wrapper per method (grpc.aio runs
    each interceptor, and each wrapper layer, on every call: on an empty `Search` three of them
    added 0.13-0.17 ms of server CPU per call to a bare server's 0.41-0.47 ms, this one about
    0.05 ms):

    - counted and timed (`telemetry.METRICS`), health and reflection aside;
    - admitted, health and reflection aside: with `auth_cfg` enabled, UNAUTHENTICATED without a
      known bearer token and PERMISSION_DENIED without the RPC's scope or the request's corpus
      (the caller is then `auth.CALLER` for the servicer and its outgoing calls); with
      `max_in_flight`, RESOURCE_EXHAUSTED at once beyond that many calls served (a caller
      retries or goes elsewhere: a queue would only grow every answer's latency);
    - what a caller must fix, raised anywhere in the call, answered with its status and message:
      `RequestError` with its own code, a pydantic `ValidationError` as INVALID_ARGUMENT naming
      the field and the allowed range. Servicers raise; none of them catches to abort;
    - a store that failed (`STORE_FAILURES`): UNAVAILABLE, naming what it raised.
    """

    def __init__(self, auth_cfg: AuthConfig | None = None, max_in_flight: int = 0) -> None:
        super().__init__()
        self.tokens = auth.TokenTable(auth_cfg) if auth_cfg is not None and auth_cfg.enabled else None
        self.limit = max_in_flight  # 0: none
        self.in_flight = 0

    def wrap(self, method: str, handler: Handler) -> Handler:
        if handler.request_streaming:  # none in the contract; health and reflection only
            return handler
        admitted = not auth.is_open(method) and (self.tokens is not None or self.limit > 0)
        record = None if auth.is_open(method) else telemetry.call_recorder(method)
        if not admitted and record is None:  # health and reflection: nothing to raise either
            return handler
        if handler.unary_unary is not None:
            unary = cast("telemetry.AioUnaryUnary[Any, Any]", handler.unary_unary)

            async def call_unary(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
                started = time.perf_counter()
                err: BaseException | None = None
                try:
                    token = self._admit(method, request, context) if admitted else None
                    try:
                        return await unary(request, context)
                    finally:
                        if admitted:
                            self._release(token)
                except (RequestError, ValidationError, *STORE_FAILURES) as error:
                    err = error
                    await _answer(context, error)
                except BaseException as error:
                    err = error
                    raise
                finally:
                    if record is not None:
                        record(context, started, err)

            return grpc.unary_unary_rpc_method_handler(
                call_unary, handler.request_deserializer, handler.response_serializer
            )
        if telemetry.yields_messages(handler):
            stream = cast("telemetry.AioUnaryStream[Any, Any]", handler.unary_stream)

            async def call_stream(
                request: Any, context: grpc.aio.ServicerContext[Any, Any]
            ) -> AsyncIterator[Any]:
                started = time.perf_counter()
                err: BaseException | None = None
                try:
                    token = self._admit(method, request, context) if admitted else None
                    try:
                        async for item in stream(request, context):
                            yield item
                    finally:
                        if admitted:
                            self._release(token)
                except (RequestError, ValidationError, *STORE_FAILURES) as error:
                    err = error
                    await _answer(context, error)
                except BaseException as error:
                    err = error
                    raise
                finally:
                    if record is not None:
                        record(context, started, err)

            return grpc.unary_stream_rpc_method_handler(
                call_stream, handler.request_deserializer, handler.response_serializer
            )
        return handler  # a Watch that writes its messages (health: open, not counted)

    def _admit(
        self, method: str, request: Any, context: grpc.aio.ServicerContext[Any, Any]
    ) -> contextvars.Token[auth.Caller | None] | None:
        """Raises RequestError for a call refused; counts it in flight. The caller's token in
        `auth.CALLER` to reset after the call (None without auth)."""
        token = None
        if self.tokens is not None:
            caller = self.tokens.authorize(method, tuple(context.invocation_metadata() or ()), request)
            token = auth.CALLER.set(caller)
        if self.limit > 0:
            if self.in_flight >= self.limit:
                if token is not None:
                    auth.CALLER.reset(token)
                telemetry.METRICS.shed.labels(method).inc()
                raise RequestError(
                    grpc.StatusCode.RESOURCE_EXHAUSTED,
                    f"{self.limit} requests in flight (services.max_in_flight): retry later",
                )
            self.in_flight += 1
        return token

    def _release(self, token: contextvars.Token[auth.Caller | None] | None) -> None:
        if self.limit > 0:
            self.in_flight -= 1
        if token is not None:
            auth.CALLER.reset(token)


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
    server = grpc.aio.server(
        interceptors=[*telemetry.server_interceptors(), CallPolicy(auth_cfg, max_in_flight)],
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
    warming: list[asyncio.Task[object]] = [
        asyncio.create_task(spec.warm_up(), name=f"warm-up {spec.full_name}")
        for spec in specs
        if spec.warm_up is not None
    ]
    return RunningServer(server=server, port=bound, health=health_servicer, specs=specs, warming=warming)


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


async def freeze_when_warm(servers: Iterable[RunningServer]) -> None:
    """Freeze what the servers' warm-ups loaded (a graph leg's snapshots and question NER), once
    they are done: left in the collector's oldest generation, a 10k-chunk graph leg's full passes
    took 28-35 ms, every 20 s or so under load; frozen, about 1 ms. Meanwhile no full pass runs
    (young ones do): with the oldest generation just frozen, every tenth pass was a full one over
    what the warm-up had loaded so far, 12 of 24-56 ms in a graph leg's 2.4 s warm-up. A warm-up
    still running after `WARM_UP_UNFROZEN_S` is not waited for: full passes resume, with what it
    loaded by then frozen."""
    warming = [task for server in servers for task in server.warming]
    young, middle, oldest = gc.get_threshold()
    gc.set_threshold(young, middle, _NO_FULL_PASSES)
    try:
        if warming:
            done, _ = await asyncio.wait(warming, timeout=WARM_UP_UNFROZEN_S)
            for task in done:
                if not task.cancelled() and (error := task.exception()) is not None:
                    log.warning("%s failed: %r", task.get_name(), error)
    finally:
        gc.set_threshold(young, middle, oldest)
    freeze_long_lived_objects()


# A threshold for the oldest generation that no warm-up reaches (passes of the middle generation).
_NO_FULL_PASSES = 1_000_000
# The longest a process goes without full passes while its warm-ups run (a 100k-chunk graph loads
# in about 50 s): a warm-up that hangs must not stop the collector for good.
WARM_UP_UNFROZEN_S = 120.0


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
