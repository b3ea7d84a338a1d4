"""What every service shares: configuration, health, reflection, graceful shutdown."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

from bench.procstack import free_port
from tests.conftest import Stack
from tribrid.config import ConfigError, TriBridConfig, load_config
from tribrid.text import query_terms, tokenize


def test_config_defaults_follow_the_design() -> None:
    cfg = load_config()
    assert cfg.fusion.rrf_k == 60
    assert {leg: s.weight for leg, s in cfg.fusion.legs.items()} == {
        "vector": 0.4,
        "sparse": 0.3,
        "graph": 0.3,
    }
    assert cfg.graph.max_hops == 2 and cfg.graph.top_k == 30
    assert (cfg.sparse.bm25_k1, cfg.sparse.bm25_b) == (1.2, 0.6)
    assert cfg.graph.entity_types == ["function", "class", "module", "variable", "import"]
    assert cfg.graph.relationship_types == ["calls", "imports", "inherits", "contains", "references"]


def test_config_keeps_the_weights_as_written() -> None:
    """Weights are normalized where they are used, not overwritten in the config."""
    cfg = load_config(fusion={"legs": {"vector": {"weight": 2}, "sparse": {"weight": 1}}})
    assert {leg: s.weight for leg, s in cfg.fusion.legs.items()} == {"vector": 2, "sparse": 1}
    assert cfg.fusion.leg("graph").weight == 1.0 and cfg.fusion.leg("graph").enabled


@pytest.mark.parametrize(
    ("fusion", "message"),
    [
        (
            {"legs": {"vectr": {"weight": 1}}},
            "fusion.legs: unknown legs ['vectr']; the legs are vector, sparse, graph",
        ),
        (
            {"legs": {leg: {"enabled": False} for leg in ("vector", "sparse", "graph")}},
            "every leg is disabled",
        ),
        ({"legs": {"vector": {"weight": 0}, "sparse": {"weight": 0}, "graph": {"weight": 0}}}, "sum to 0"),
        ({"query_kind_weights": {"natural": {"sparse": -1}}}, "greater than or equal to 0"),
    ],
)
def test_bad_fusion_config_names_the_field(fusion: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as excinfo:
        load_config(fusion=fusion)
    assert message in str(excinfo.value)


def test_invalid_config_names_field_and_range(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIBRID_GRAPH__MAX_HOPS", "9")
    with pytest.raises(ConfigError) as excinfo:
        load_config()
    assert "graph.max_hops" in str(excinfo.value)
    assert "le=5" in str(excinfo.value)


def test_config_from_toml_file(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    path = os.path.join(str(tmp_path), "tribrid.toml")
    with open(path, "w") as f:
        f.write("[fusion]\nrrf_k = 30\n[graph]\nmax_hops = 3\n")
    monkeypatch.setenv("TRIBRID_CONFIG", path)
    monkeypatch.setenv("TRIBRID_GRAPH__MAX_HOPS", "4")  # the environment wins over the file
    cfg = TriBridConfig()
    assert cfg.fusion.rrf_k == 30
    assert cfg.graph.max_hops == 4


def test_code_aware_tokens() -> None:
    for form in ("parseConfigFile", "parse_config_file", "parse-config-file"):
        assert tokenize(form) == ["parse", "config", "file", "parseconfigfile"]
    assert tokenize("HTTPServer") == ["http", "server", "httpserver"]
    assert query_terms("how does the parser work") == ["parser", "work"]
    assert query_terms("the of and") == []
    assert query_terms("?!") == []


async def test_every_service_serves_health_and_reflection(stack: Stack) -> None:
    expected = {
        "fusion": "tribrid.v1.Fusion",
        "vector": "tribrid.v1.VectorSearch",
        "sparse": "tribrid.v1.SparseSearch",
        "graph": "tribrid.v1.GraphSearch",
        "indexer": "tribrid.v1.Indexer",
    }
    for name, full_name in expected.items():
        async with stack.channel(name) as channel:
            reply = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=full_name), timeout=5
            )
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
        # Reflection, as grpcurl uses it. The descriptor database client is synchronous, so it runs
        # in a thread: blocking this loop would starve the servers that share it.
        services, service_names = await asyncio.to_thread(_reflect, stack.servers[name].port, full_name)
        assert full_name in services
        assert full_name.rsplit(".", 1)[1] in service_names


def _reflect(port: int, full_name: str) -> tuple[list[str], list[str]]:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as sync_channel:
        db = ProtoReflectionDescriptorDatabase(sync_channel)
        file_proto = db.FindFileContainingSymbol(full_name)
        return list(db.get_services()), [s.name for s in file_proto.service]


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
