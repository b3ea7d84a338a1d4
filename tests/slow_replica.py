"""A slow replica of a leg: a real gRPC server that forwards each `Search` to the leg after a delay
(or never answers). The fault injected on purpose for the hedging tests and bench: the gateway
sees two endpoints of one leg, one of them slow."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import grpc


@dataclass
class SlowReplica:
    delay_s: float
    hang: bool = False
    calls: int = 0
    cancelled: int = 0
    address: str = ""
    release: asyncio.Event = field(default_factory=asyncio.Event)
    # set at each cancellation: a caller's cancel reaches this server some time after its answer
    _cancel_seen: asyncio.Event = field(default_factory=asyncio.Event)

    def note_cancelled(self) -> None:
        self.cancelled += 1
        self._cancel_seen.set()

    async def cancelled_at_least(self, count: int, timeout_s: float = 10.0) -> int:
        """`cancelled` once it reaches `count`, or as it is after `timeout_s`."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                while self.cancelled < count:
                    self._cancel_seen.clear()
                    await self._cancel_seen.wait()
        return self.cancelled


@contextlib.asynccontextmanager
async def slow_replica(service: str, target: str, delay_s: float) -> AsyncIterator[SlowReplica]:
    """A replica of `service` ("tribrid.v1.VectorSearch") at 127.0.0.1:<free port> that forwards to
    `target` after `delay_s` (or, with `.hang`, waits for `.release`)."""
    replica = SlowReplica(delay_s)
    async with grpc.aio.insecure_channel(target) as channel:
        forward: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(f"/{service}/Search")

        async def search(request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
            replica.calls += 1
            try:
                if replica.hang:
                    await replica.release.wait()
                await asyncio.sleep(replica.delay_s)
                token = [(k, v) for k, v in context.invocation_metadata() or () if k == "authorization"]
                answer: bytes = await forward(request, metadata=token)
                return answer
            except asyncio.CancelledError:
                replica.note_cancelled()
                raise

        handler = grpc.method_handlers_generic_handler(
            service, {"Search": grpc.unary_unary_rpc_method_handler(search)}
        )
        server = grpc.aio.server()
        server.add_generic_rpc_handlers((handler,))
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        replica.address = f"127.0.0.1:{port}"
        try:
            yield replica
        finally:
            replica.release.set()
            await server.stop(0)
