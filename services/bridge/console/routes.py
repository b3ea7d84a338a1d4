"""The web console at /console: server-rendered pages and static files; the pages call the bridge's
own JSON API from the browser with the bearer token the user typed (kept in sessionStorage).

No retrieval logic lives here. The server side renders the pages (which carry no secret and load
without a token), serves our JS/CSS and the vendored cytoscape.js (`make install` puts it in
static/vendor/), and answers two small authenticated JSON routes: who the caller is (to show
read-only pages to a `search` token) and the services' health with each leg's latency quantiles
computed from the gateway's Prometheus histogram.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import httpx
import prometheus_client
from grpc_health.v1 import health_pb2, health_pb2_grpc
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from services.bridge.backend import Backend
from tribrid import auth
from tribrid.config import TECHNIQUE_NAMES
from tribrid.legs import LEG_NAMES

HERE = Path(__file__).resolve().parent
PREFIX = "/console"
STATIC_PREFIX = f"{PREFIX}/static/"
# page name -> (path, title); the first is where /console leads
PAGES: dict[str, tuple[str, str]] = {
    "search": (f"{PREFIX}/search", "Search"),
    "graph": (f"{PREFIX}/graph", "Graph"),
    "corpora": (f"{PREFIX}/corpora", "Corpora"),
    "health": (f"{PREFIX}/health", "Health"),
}
_OPEN = frozenset({PREFIX, *(path for path, _ in PAGES.values())})
# The gRPC services whose health the console shows, as named in `services.<name>_address`.
SERVICES: tuple[str, ...] = ("fusion", *LEG_NAMES, "indexer")
LEG_HISTOGRAM = "tribrid_leg_duration_seconds"
# Quantiles are taken over the bucket counts added within this window (the page polls).
WINDOW_S = 300.0
_ALL_SCOPES = ("search", "index", "admin")


def is_open(path: str) -> bool:
    """Whether `path` is a console page or static file: those load without a token (they carry no
    secret); the console's JSON routes and every API route stay behind BearerAuth."""
    return path in _OPEN or (path.startswith(STATIC_PREFIX) and ".." not in path)


# --- latency quantiles from a Prometheus histogram --------------------------------------------------

Buckets = dict[float, float]  # upper bound (le) -> cumulative count


def leg_buckets(families: Iterable[Metric]) -> dict[str, Buckets]:
    """The gateway's per-leg latency histogram, summed over statuses: leg -> cumulative buckets."""
    legs: dict[str, Buckets] = {}
    for family in families:
        if family.name != LEG_HISTOGRAM:
            continue
        for sample in family.samples:
            if sample.name == f"{LEG_HISTOGRAM}_bucket":
                buckets = legs.setdefault(sample.labels["leg"], {})
                le = float(sample.labels["le"])
                buckets[le] = buckets.get(le, 0.0) + sample.value
    return legs


def quantile(q: float, buckets: Buckets) -> float | None:
    """histogram_quantile as Prometheus computes it: linear within the bucket the rank falls in;
    the highest finite bound when it falls in +Inf. None without observations."""
    bounds = sorted(buckets)
    total = buckets[bounds[-1]] if bounds else 0.0
    if total <= 0:
        return None
    rank = q * total
    lower, below = 0.0, 0.0
    for le in bounds:
        count = buckets[le]
        if count >= rank:
            if math.isinf(le):
                return lower
            return lower + (le - lower) * ((rank - below) / (count - below) if count > below else 0.0)
        lower, below = le, count
    return lower


@dataclass
class LatencyWindow:
    """Snapshots of the cumulative buckets, so that the quantiles are of recent calls, not of every
    call since the gateway started."""

    snapshots: deque[tuple[float, dict[str, Buckets]]] = field(default_factory=deque)

    def add(self, now: float, legs: dict[str, Buckets]) -> tuple[dict[str, Buckets], float | None]:
        """The counts added since the oldest snapshot of the window and its age in seconds; the
        totals and None (since the start) when there is no older snapshot or it saw no new call,
        or the counts went down (the gateway restarted)."""
        while self.snapshots and now - self.snapshots[0][0] > WINDOW_S:
            self.snapshots.popleft()
        self.snapshots.append((now, legs))
        then, old = self.snapshots[0]
        if then == now:
            return legs, None
        delta: dict[str, Buckets] = {}
        for leg, buckets in legs.items():
            before = old.get(leg, {})
            delta[leg] = {le: count - before.get(le, 0.0) for le, count in buckets.items()}
        if any(c < 0 for b in delta.values() for c in b.values()):
            self.snapshots.clear()
            self.snapshots.append((now, legs))
            return legs, None
        if not any(b and max(b.values()) > 0 for b in delta.values()):
            return legs, None
        return delta, now - then


def leg_latencies(legs: Mapping[str, Buckets]) -> list[dict[str, Any]]:
    rows = []
    for leg in sorted(legs):
        buckets = legs[leg]
        p50, p99 = quantile(0.5, buckets), quantile(0.99, buckets)
        rows.append(
            {
                "leg": leg,
                "calls": int(max(buckets.values(), default=0)),
                "p50Ms": None if p50 is None else round(p50 * 1000, 2),
                "p99Ms": None if p99 is None else round(p99 * 1000, 2),
            }
        )
    return rows


# --- the routes ---------------------------------------------------------------------------------------


def routes(backend: Backend, gateway_metrics_url: str = "") -> list[BaseRoute]:
    """The console's routes, for the bridge to add to its own. `gateway_metrics_url`: where the
    gateway serves /metrics (its per-leg latency histogram); empty = this process's registry, which
    holds it when the gateway runs in this process (`--single-process`, the tests)."""
    templates = Jinja2Templates(directory=HERE / "templates")
    window = LatencyWindow()
    page_context = {
        "pages": PAGES,
        "legs": LEG_NAMES,
        "techniques": TECHNIQUE_NAMES,
        # a path, not url_for's absolute URL: right behind a proxy that rewrites the host or scheme
        "static": STATIC_PREFIX,
    }

    def page(name: str) -> Route:
        async def render(request: Request) -> Response:
            return templates.TemplateResponse(request, f"{name}.html", {**page_context, "active": name})

        return Route(PAGES[name][0], render, methods=["GET"])

    async def home(request: Request) -> Response:
        return RedirectResponse(PAGES["search"][0])

    async def whoami(request: Request) -> Response:
        caller = auth.CALLER.get()
        if caller is None:  # auth is off: anyone may do anything
            return JSONResponse({"auth": False, "name": "", "scopes": list(_ALL_SCOPES), "corpora": ["*"]})
        scopes = _ALL_SCOPES if "admin" in caller.scopes else sorted(caller.scopes)
        return JSONResponse(
            {"auth": True, "name": caller.name, "scopes": list(scopes), "corpora": sorted(caller.corpora)}
        )

    async def service_status(name: str) -> dict[str, str]:
        address = backend.services.address(name)
        stub = health_pb2_grpc.HealthStub(backend.channel(address))
        try:
            reply = await stub.Check(health_pb2.HealthCheckRequest(), timeout=1.0)
        except grpc.aio.AioRpcError as err:
            return {
                "service": name,
                "address": address,
                "status": err.code().name,
                "error": err.details() or "",
            }
        status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
        return {"service": name, "address": address, "status": status, "error": ""}

    async def gateway_families(request: Request) -> tuple[list[Metric], str]:
        if not gateway_metrics_url:
            return list(prometheus_client.REGISTRY.collect()), "this process"
        # the caller's token goes along: /metrics may be behind an admin token (metrics_auth)
        headers = {k: v for k, v in request.headers.items() if k == "authorization"}
        async with httpx.AsyncClient(timeout=2.0) as http:
            reply = await http.get(gateway_metrics_url, headers=headers)
        reply.raise_for_status()
        return list(text_string_to_metric_families(reply.text)), gateway_metrics_url

    async def health(request: Request) -> Response:
        statuses = await asyncio.gather(*(service_status(name) for name in SERVICES))
        body: dict[str, Any] = {"services": statuses, "legs": [], "windowS": None, "metricsError": ""}
        try:
            families, body["metricsSource"] = await gateway_families(request)
        except (httpx.HTTPError, ValueError) as err:
            body["metricsSource"] = gateway_metrics_url
            body["metricsError"] = f"{type(err).__name__}: {err}"
            return JSONResponse(body)
        legs, age = window.add(time.monotonic(), leg_buckets(families))
        body["legs"], body["windowS"] = leg_latencies(legs), age
        return JSONResponse(body)

    return [
        Route(PREFIX, home, methods=["GET"]),
        *(page(name) for name in PAGES),
        Route(f"{PREFIX}/api/whoami", whoami, methods=["GET"]),
        Route(f"{PREFIX}/api/health", health, methods=["GET"]),
        Mount(STATIC_PREFIX.rstrip("/"), StaticFiles(directory=HERE / "static"), name="console-static"),
    ]
