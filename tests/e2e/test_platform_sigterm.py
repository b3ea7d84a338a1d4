"""A service process (`tribrid serve sparse`) stops gracefully on SIGTERM, logging as JSON."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from bench.procstack import free_port
from tribrid.config import TriBridConfig


def test_service_process_stops_gracefully_on_sigterm(config: TriBridConfig) -> None:
    port = free_port()
    env = {
        **os.environ,
        "TRIBRID_STATE_DIR": str(config.state_dir),
        "TRIBRID_POSTGRES__PORT": str(config.postgres.port),
        "TRIBRID_POSTGRES__DATABASE": config.postgres.database,
        "TRIBRID_SERVICES__SPARSE_PORT": str(port),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "tribridctl.cli", "serve", "sparse"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            grpc.channel_ready_future(channel).result(timeout=60)
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
        time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, output
    assert '"msg": "shutting down"' in output  # structured (JSON) logs
