"""Hedged leg calls (Dean and Barroso, "The Tail at Scale", 2013): when a leg has not answered by the
recent p95 of its fastest endpoint, the same request goes to another endpoint of that leg; the
first answer wins and the other call is cancelled.

A leg's endpoints are the addresses its target names: a list ("ipv4:127.0.0.1:50061,127.0.0.1:50161",
as `tribrid serve all --replicas N` writes it), or a DNS name whose records are the pods behind a
headless Kubernetes Service, resolved again every `refresh_s`. Each endpoint has its own channel
and its own window of recent latencies: a slow replica does not raise the bar for hedging away
from it, which one window per leg would (with half the calls slow, a leg's p95 is the slow one's).
A leg with one endpoint is never hedged.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import grpc
import numpy as np

from tribrid import auth
from tribrid.config import HedgingConfig
from tribrid.v1 import common_pb2

# A channel to one address: the gateway's own channel settings (TLS, keepalive, interceptors).
ChannelFactory = Callable[[str], grpc.aio.Channel]
SearchCall = grpc.aio.UnaryUnaryMultiCallable[common_pb2.SearchRequest, common_pb2.SearchResponse]


def listed_addresses(target: str) -> list[str] | None:
    """The addresses a target lists ("ipv4:a:1,b:2" -> ["a:1", "b:2"]); None for a name to resolve."""
    for scheme in ("ipv4:", "ipv6:"):
        if target.startswith(scheme):
            return [a.strip() for a in target.removeprefix(scheme).split(",") if a.strip()]
    if target.startswith("unix:"):
        return [target]
    return None


def name_and_port(target: str) -> tuple[str, int]:
    """("tribrid-vector", 50061) from "tribrid-vector:50061" or "dns:///tribrid-vector:50061"."""
    if target.startswith("dns:"):
        target = target.split("/")[-1]
    host, _, port = target.rpartition(":")
    return host.strip("[]"), int(port)


async def resolve(target: str) -> list[str]:
    """Every address `target` stands for, sorted (one per IP a name resolves to; IPv4 ones when it
    has any, as "localhost" resolves to ::1 too, where a service bound to 127.0.0.1 is not)."""
    listed = listed_addresses(target)
    if listed is not None:
        return listed
    host, port = name_and_port(target)
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    ipv4 = [info for info in infos if info[0] == socket.AF_INET]
    ips = sorted({str(info[4][0]) for info in ipv4 or infos})
    return [f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}" for ip in ips]


@dataclass(slots=True)
class Endpoint:
    address: str
    channel: grpc.aio.Channel
    search: SearchCall
    latencies: deque[float] = field(default_factory=deque)

    def quantile(self, cfg: HedgingConfig) -> float | None:
        """Its recent latency at cfg.percentile, in seconds; None until it has cfg.min_samples."""
        if len(self.latencies) < cfg.min_samples:
            return None
        return float(np.percentile(np.fromiter(self.latencies, float), cfg.percentile))


class HedgedLeg:
    """One leg's endpoints, each with its own channel and latency window."""

    def __init__(self, service: str, target: str, cfg: HedgingConfig, make_channel: ChannelFactory) -> None:
        self._method = f"/{service}/Search"
        self._target = target
        self._cfg = cfg
        self._make_channel = make_channel
        self._endpoints: dict[str, Endpoint] = {}
        self._resolved_at = -float("inf")
        self._next = 0  # round robin over the endpoints for the first call
        self.hedges = 0  # second calls sent

    async def _current(self) -> list[Endpoint]:
        if time.monotonic() - self._resolved_at >= self._cfg.refresh_s:
            self._resolved_at = time.monotonic()
            try:
                addresses = await resolve(self._target)
            except (OSError, ValueError):
                addresses = list(self._endpoints)  # keep what worked until the name resolves again
            for gone in set(self._endpoints) - set(addresses):
                await self._endpoints.pop(gone).channel.close()
            for address in addresses:
                if address not in self._endpoints:
                    channel = self._make_channel(address)
                    search: SearchCall = channel.unary_unary(
                        self._method,
                        request_serializer=common_pb2.SearchRequest.SerializeToString,
                        response_deserializer=common_pb2.SearchResponse.FromString,
                    )
                    self._endpoints[address] = Endpoint(
                        address, channel, search, deque(maxlen=self._cfg.window)
                    )
        return [self._endpoints[a] for a in sorted(self._endpoints)]

    async def _timed(
        self, endpoint: Endpoint, request: common_pb2.SearchRequest, timeout_s: float
    ) -> common_pb2.SearchResponse:
        started = time.perf_counter()
        response = await endpoint.search(request, timeout=timeout_s, metadata=auth.outgoing_metadata())
        endpoint.latencies.append(time.perf_counter() - started)
        return response

    async def search(
        self, request: common_pb2.SearchRequest, budget_s: float
    ) -> tuple[common_pb2.SearchResponse, bool]:
        """The leg's answer, and whether a second endpoint was asked. Raises AioRpcError when the
        call(s) failed (the last error)."""
        endpoints = await self._current()
        if not endpoints:
            raise grpc.aio.AioRpcError(
                grpc.StatusCode.UNAVAILABLE,
                grpc.aio.Metadata(),
                grpc.aio.Metadata(),
                f"{self._target}: no address",
            )
        first = endpoints[self._next % len(endpoints)]
        self._next += 1
        started = time.perf_counter()
        primary = asyncio.ensure_future(self._timed(first, request, budget_s))
        known = [q for q in (e.quantile(self._cfg) for e in endpoints) if q is not None]
        others = [e for e in endpoints if e is not first]
        delay = max(min(known), self._cfg.min_delay_ms / 1000) if known and others else None
        if delay is None or delay >= budget_s:
            return await primary, False
        done, _ = await asyncio.wait({primary}, timeout=delay)
        if done:
            return primary.result(), False
        # the other endpoint that has been fastest lately (one without a window yet counts as fast)
        second = min(others, key=lambda e: e.quantile(self._cfg) or 0.0)
        self.hedges += 1
        left_s = budget_s - (time.perf_counter() - started)
        backup = asyncio.ensure_future(self._timed(second, request, left_s))
        pending = {primary, backup}
        error: BaseException | None = None
        try:
            while pending:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    if task.exception() is None:
                        return task.result(), True
                    error = task.exception()
            assert error is not None
            raise error
        finally:
            for task in pending:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, grpc.aio.AioRpcError):
                    await task

    async def close(self) -> None:
        for endpoint in self._endpoints.values():
            await endpoint.channel.close()
        self._endpoints.clear()
