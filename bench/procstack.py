"""A whole TriBridRAG stack of its own for the fault and overload benchmarks: embedded PostgreSQL
and FalkorDB on free ports under a private state dir, and each service in its own process
(`tribrid serve NAME`), so one can be killed, stopped and restarted while the others run.

Nothing here touches the default `.state` or the default ports: other stacks may be using them.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from evaluation import REPO_ROOT
from tribrid.config import TriBridConfig, load_config
from tribrid.resources import Resources
from tribrid.server import RunningServer
from tribrid.stores import embedded
from tribrid.v1 import indexer_pb2, indexer_pb2_grpc
from tribridctl import supervise
from tribridctl.compose import ALL_SERVICES, start_services

SERVICE_NAMES = ("vector", "sparse", "graph", "indexer", "fusion")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stack_config(state_dir: Path, database: str, graph_prefix: str) -> TriBridConfig:
    """Stores and services on free ports under `state_dir`."""
    return load_config(
        state_dir=state_dir,
        postgres={"port": free_port(), "database": database},
        graph_store={"falkordb_port": free_port(), "graph_prefix": graph_prefix},
        services={f"{name}_port": free_port() for name in SERVICE_NAMES},
        telemetry={"metrics_port": 0},
    )


def service_env(cfg: TriBridConfig, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment that points a `tribrid` process at this stack's stores and services."""
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO_ROOT),
        "TRIBRID_STATE_DIR": str(cfg.state_dir),
        "TRIBRID_POSTGRES__PORT": str(cfg.postgres.port),
        "TRIBRID_POSTGRES__DATABASE": cfg.postgres.database,
        "TRIBRID_GRAPH_STORE__FALKORDB_PORT": str(cfg.graph_store.falkordb_port),
        "TRIBRID_GRAPH_STORE__GRAPH_PREFIX": cfg.graph_store.graph_prefix,
        "TRIBRID_TELEMETRY__METRICS_PORT": "0",
        "TRIBRID_TELEMETRY__LOG_LEVEL": "WARNING",
        "TRIBRID_EMBEDDING__NUM_THREADS": "1",
    }
    for name in SERVICE_NAMES:
        env[f"TRIBRID_SERVICES__{name.upper()}_PORT"] = str(getattr(cfg.services, f"{name}_port"))
    env.update(extra or {})
    return env


async def wait_serving(address: str, timeout_s: float, proc: subprocess.Popen[bytes] | None = None) -> None:
    """Until the health service at `address` says SERVING; raises if the process exits first."""
    end = time.monotonic() + timeout_s
    # Reconnect attempts 0.1 s apart (gRPC's default backoff grows to seconds while nothing listens):
    # the time to SERVING is the process's, not the channel's.
    fast_reconnect = [
        ("grpc.initial_reconnect_backoff_ms", 100),
        ("grpc.min_reconnect_backoff_ms", 100),
        ("grpc.max_reconnect_backoff_ms", 100),
    ]
    async with grpc.aio.insecure_channel(address, options=fast_reconnect) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < end:
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(f"the service at {address} exited with {proc.returncode} during start-up")
            try:
                reply = await stub.Check(health_pb2.HealthCheckRequest(), timeout=1)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.aio.AioRpcError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError(f"{address} not serving within {timeout_s:.0f} s")


@dataclass
class ProcessStack:
    """The stores and one process per service; `env` is added to every service's environment."""

    cfg: TriBridConfig
    env: dict[str, str] = field(default_factory=dict)
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def address(self, name: str) -> str:
        return self.cfg.services.address(name)

    def stores_up(self) -> None:
        embedded.up(self.cfg, log=lambda _: None)

    def stores_down(self) -> None:
        embedded.down(self.cfg, log=lambda _: None)

    def __post_init__(self) -> None:
        supervise.compile_bytecode()  # a restart measures the service, not the compiler

    def start(self, name: str) -> subprocess.Popen[bytes]:
        log_path = self.cfg.state_dir / "logs" / f"{name}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with log_path.open("ab") as log_file:
            proc = subprocess.Popen(
                [sys.executable, "-m", "tribridctl.cli", "serve", name],
                env=service_env(self.cfg, self.env),
                cwd=REPO_ROOT,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.procs[name] = proc
        return proc

    async def start_serving(self, name: str, timeout_s: float = 180) -> None:
        await wait_serving(self.address(name), timeout_s, self.start(name))

    async def start_all(self, names: tuple[str, ...] = SERVICE_NAMES) -> None:
        """Start every service at once (they load their models side by side), then wait for each."""
        for name in names:
            self.start(name)
        for name in names:
            await wait_serving(self.address(name), 240, self.procs[name])

    def kill(self, name: str) -> None:
        """SIGKILL: a crash, nothing drained."""
        proc = self.procs.pop(name)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)

    def stop(self, name: str, timeout_s: float = 30) -> None:
        """SIGTERM, then SIGKILL if it is still there after `timeout_s`."""
        proc = self.procs.pop(name)
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)

    def stop_all(self) -> None:
        for name in list(self.procs):
            if self.procs[name].poll() is None:
                self.stop(name)
            else:
                del self.procs[name]

    async def index(self, corpus_id: str, path: Path) -> indexer_pb2.IndexProgress:
        """Index `path` as `corpus_id` unless the corpus is there already."""
        async with grpc.aio.insecure_channel(self.address("indexer")) as channel:
            stub = indexer_pb2_grpc.IndexerStub(channel)
            listed = await stub.ListCorpora(indexer_pb2.ListCorporaRequest())
            last = indexer_pb2.IndexProgress()
            if any(c.corpus_id == corpus_id for c in listed.corpora):
                return last
            async for event in stub.IndexCorpus(
                indexer_pb2.IndexCorpusRequest(corpus_id=corpus_id, path=str(path))
            ):
                last = event
            return last


def process_rss_mb(pid: int) -> float:
    """Resident set size of a process in MiB (VmRSS of /proc/PID/status, in kB there)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def vm_hwm_mb(pid: int) -> float:
    """Peak resident set size of a live process in MiB (VmHWM of /proc/PID/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM for pid {pid}")


@contextlib.asynccontextmanager
async def in_process_stack(
    state_dir: Path, database: str, graph_prefix: str
) -> AsyncIterator[tuple[TriBridConfig, Resources, dict[str, RunningServer]]]:
    """Embedded stores on free ports under `state_dir` and every gRPC service in this process on
    ephemeral ports; all stopped when the block ends."""
    cfg = load_config(
        state_dir=state_dir,
        postgres={"port": free_port(), "database": database},
        graph_store={"falkordb_port": free_port(), "graph_prefix": graph_prefix},
        embedding={"num_threads": 2},
        services={f"{name}_port": 0 for name in ("fusion", "vector", "sparse", "graph", "indexer")},
        telemetry={"metrics_port": 0},
    )
    embedded.up(cfg)
    resources = Resources(cfg)
    servers = {
        str(name): server for name, server in (await start_services(cfg, ALL_SERVICES, resources)).items()
    }
    try:
        yield cfg, resources, servers
    finally:
        for server in servers.values():
            await server.stop(0)
        await resources.close()
        embedded.down(cfg)
