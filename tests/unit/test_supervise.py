"""supervisord's configuration for `tribrid serve all`: one program per service, restarted when it
exits, stopped within its drain and grace periods, each with its own /metrics port."""

from __future__ import annotations

import configparser
from pathlib import Path

from tribrid.config import TriBridConfig
from tribridctl import supervise
from tribridctl.compose import PROCESS_ALL


def _parsed(cfg: TriBridConfig, python: str = "/venv/bin/python") -> configparser.RawConfigParser:
    parser = configparser.RawConfigParser()
    parser.read_string(supervise.render(cfg, PROCESS_ALL, python, Path("/work/repo")))
    return parser


def test_every_service_is_a_program_restarted_when_it_exits_in_start_order() -> None:
    parsed = _parsed(TriBridConfig(state_dir=Path("/tmp/state")))
    programs = [s.removeprefix("program:") for s in parsed.sections() if s.startswith("program:")]
    assert programs == list(PROCESS_ALL)
    for name in programs:
        section = parsed[f"program:{name}"]
        assert section["command"] == f"/venv/bin/python -m tribridctl.cli serve {name}"
        assert section["autorestart"] == "true" and section["directory"] == "/work/repo"
        assert section["stdout_logfile"] == "/dev/stdout"  # one log: supervisord's output
    assert [int(parsed[f"program:{n}"]["priority"]) for n in programs] == list(range(1, len(programs) + 1))
    assert parsed["supervisord"]["nodaemon"] == "true"


def test_a_service_is_killed_only_after_its_drain_and_grace() -> None:
    cfg = TriBridConfig(state_dir=Path("/tmp/state"), services={"drain_delay_s": 3, "shutdown_grace_s": 7})
    for name in PROCESS_ALL:
        assert int(_parsed(cfg)[f"program:{name}"]["stopwaitsecs"]) >= 3 + 7


def test_each_process_serves_metrics_on_its_own_port_or_none() -> None:
    on = _parsed(TriBridConfig(state_dir=Path("/tmp/s"), telemetry={"metrics_port": 9464}))
    ports = [on[f"program:{n}"]["environment"].split(",")[0] for n in PROCESS_ALL]
    assert ports == [f'TRIBRID_TELEMETRY__METRICS_PORT="{9464 + i}"' for i in range(len(PROCESS_ALL))]
    # the bridge's console is told where the gateway's metrics are
    gateway_port = 9464 + PROCESS_ALL.index("fusion")
    assert on["program:bridge"]["environment"].split(",")[1] == (
        f'TRIBRID_TELEMETRY__GATEWAY_METRICS_URL="http://127.0.0.1:{gateway_port}/metrics"'
    )
    off = _parsed(TriBridConfig(state_dir=Path("/tmp/s"), telemetry={"metrics_port": 0}))
    assert {off[f"program:{n}"]["environment"] for n in PROCESS_ALL} == {
        'TRIBRID_TELEMETRY__METRICS_PORT="0"'
    }


def test_a_percent_sign_in_a_path_is_kept_literally() -> None:
    parsed = _parsed(TriBridConfig(state_dir=Path("/tmp/100%state")), python="/opt/py%3/python")
    # supervisord reads %% as one %: the file holds the escaped form
    assert parsed["supervisord"]["pidfile"] == "/tmp/100%%state/supervisord.pid"
    assert parsed["program:vector"]["command"].startswith("/opt/py%%3/python ")


def test_the_configuration_is_written_with_the_folder_supervisord_logs_into(tmp_path: Path) -> None:
    cfg = TriBridConfig(state_dir=tmp_path / "state")
    conf = supervise.write_config(cfg, ("sparse",))
    assert conf == tmp_path / "state" / "supervisord.conf" and conf.is_file()
    assert (tmp_path / "state" / "logs").is_dir()  # supervisord refuses to start without it
    assert supervise.command(cfg)[-2:] == ["-c", str(conf)]


def test_replicas_of_each_leg_on_their_own_ports_called_by_the_gateway_and_the_bridge() -> None:
    cfg = TriBridConfig()
    parser = configparser.RawConfigParser()
    parser.read_string(supervise.render(cfg, PROCESS_ALL, "/venv/bin/python", Path("/work/repo"), replicas=2))
    programs = [s.removeprefix("program:") for s in parser.sections() if s.startswith("program:")]
    assert programs == [
        "vector",
        "vector-2",
        "sparse",
        "sparse-2",
        "graph",
        "graph-2",
        "indexer",
        "fusion",
        "bridge",
    ]
    second = parser["program:vector-2"]
    assert second["command"].endswith("serve vector")
    port = cfg.services.vector_port + supervise.REPLICA_PORT_STEP
    assert f'TRIBRID_SERVICES__VECTOR_PORT="{port}"' in second["environment"]
    expected = (
        f'TRIBRID_SERVICES__VECTOR_ADDRESS="ipv4:127.0.0.1:{cfg.services.vector_port},127.0.0.1:{port}"'
    )
    for caller in ("fusion", "bridge"):
        assert expected in parser[f"program:{caller}"]["environment"]
    assert "ADDRESS" not in parser["program:indexer"]["environment"]  # it calls no leg
    # one /metrics port per process, none shared
    metrics = [
        parser[f"program:{p}"]["environment"].split('METRICS_PORT="')[1].split('"')[0] for p in programs
    ]
    assert len(set(metrics)) == len(programs)


def test_bytecode_is_written_for_missing_and_stale_modules_only(tmp_path: Path) -> None:
    import importlib.util
    import os

    (tmp_path / "services").mkdir()
    fresh, stale = tmp_path / "services" / "fresh.py", tmp_path / "services" / "stale.py"
    fresh.write_text("X = 1\n")
    stale.write_text("X = 1\n")
    supervise.compile_bytecode(tmp_path)  # no tribrid/ or tribridctl/ here: skipped
    compiled = {p: Path(importlib.util.cache_from_source(str(p))) for p in (fresh, stale)}
    assert all(pyc.is_file() for pyc in compiled.values())
    fresh_written = compiled[fresh].stat().st_mtime_ns
    stale.write_text("X = 2\n")
    os.utime(stale, ns=(fresh_written + 10**9, fresh_written + 10**9))  # edited after compiling
    before = compiled[stale].read_bytes()
    supervise.compile_bytecode(tmp_path)
    assert compiled[fresh].stat().st_mtime_ns == fresh_written  # up to date: left alone
    assert compiled[stale].read_bytes() != before


def test_stop_waits_for_every_program_in_turn(tmp_path: Path) -> None:
    # supervisord stops the programs one after another (each has a priority of its own)
    cfg = TriBridConfig(state_dir=tmp_path, services={"drain_delay_s": 3, "shutdown_grace_s": 7})
    supervise.write_config(cfg, PROCESS_ALL, replicas=2)
    programs = len(supervise._programs(cfg, PROCESS_ALL, 2))
    assert programs == len(PROCESS_ALL) + 3  # a second replica of each leg
    assert supervise.supervisor_stop_s(cfg) == programs * supervise.stop_wait_s(cfg)
