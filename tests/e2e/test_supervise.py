"""`tribrid serve NAME --background` under supervisord: a killed service is started again and
answers, and `tribrid stop` leaves no process behind."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

from bench.procstack import free_port
from tests import REPO_ROOT
from tribrid.config import TriBridConfig
from tribridctl.cli import _wait_healthy


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except FileNotFoundError:
        return []


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def _gone(pid: int, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


async def _cli(env: dict[str, str], *args: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tribridctl.cli", *args, cwd=REPO_ROOT, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await asyncio.wait_for(process.communicate(), timeout=180)
    return process.returncode or 0, out.decode()


async def _restarted(supervisor: int, killed: int, deadline_s: float) -> list[int]:
    """The supervisor's children once the killed one has been replaced (or as they are at the
    deadline)."""
    end = time.monotonic() + deadline_s
    children = _children(supervisor)
    while time.monotonic() < end and children in ([], [killed]):
        await asyncio.sleep(0.1)
        children = _children(supervisor)
    return children


async def test_a_killed_service_is_started_again_and_stop_leaves_no_process(
    config: TriBridConfig, tmp_path: Path
) -> None:
    port = free_port()
    env = {
        **os.environ,
        "TRIBRID_STATE_DIR": str(tmp_path),
        "TRIBRID_POSTGRES__PORT": str(config.postgres.port),
        "TRIBRID_POSTGRES__DATABASE": config.postgres.database,
        "TRIBRID_GRAPH_STORE__FALKORDB_PORT": str(config.graph_store.falkordb_port),
        "TRIBRID_SERVICES__SPARSE_PORT": str(port),
        "TRIBRID_TELEMETRY__METRICS_PORT": "0",
    }
    code, out = await _cli(env, "serve", "sparse", "--background")
    assert code == 0, out
    supervisor = int((tmp_path / "services.pid").read_text())
    try:
        (first,) = _children(supervisor)
        os.kill(first, signal.SIGKILL)
        (second,) = await _restarted(supervisor, first, deadline_s=60)
        assert second != first and await _wait_healthy(f"127.0.0.1:{port}", config, deadline_s=60)
        log = (tmp_path / "logs" / "services.log").read_text()
        assert '"service": "sparse"' in log  # one log, each line naming its service
    finally:
        code, out = await _cli(env, "stop")
    assert code == 0, out
    assert not _alive(supervisor) and not _alive(second) and not _alive(first)
    assert not (tmp_path / "services.pid").exists()


async def test_serving_with_an_embedded_store_down_names_it_and_starts_nothing(
    config: TriBridConfig, tmp_path: Path
) -> None:
    closed = free_port()  # nothing listens there
    env = {
        **os.environ,
        "TRIBRID_STATE_DIR": str(tmp_path),
        "TRIBRID_POSTGRES__PORT": str(closed),
        "TRIBRID_GRAPH_STORE__FALKORDB_PORT": str(config.graph_store.falkordb_port),
        "TRIBRID_SERVICES__SPARSE_PORT": str(free_port()),
        "TRIBRID_TELEMETRY__METRICS_PORT": "0",
    }
    code, out = await _cli(env, "serve", "sparse", "--background")
    pid_file = tmp_path / "services.pid"
    if pid_file.exists():  # started after all: stop its supervisor, then fail
        os.kill(int(pid_file.read_text()), signal.SIGTERM)
    assert not pid_file.exists()
    assert code == 1
    assert f"PostgreSQL does not answer on 127.0.0.1:{closed}" in out
    assert "FalkorDB" not in out  # it answers
    assert "tribrid up" in out


async def test_a_service_whose_database_does_not_answer_exits_with_one_line_saying_so(
    tmp_path: Path,
) -> None:
    # Run alone (as in a pod), it is not checked beforehand: it exits, and its supervisor (or
    # Kubernetes) starts it again, each time with one line in the log, not a traceback.
    closed = free_port()
    env = {
        **os.environ,
        "TRIBRID_STATE_DIR": str(tmp_path),
        "TRIBRID_POSTGRES__PORT": str(closed),
        "TRIBRID_SERVICES__SPARSE_PORT": str(free_port()),
        "TRIBRID_TELEMETRY__METRICS_PORT": "0",
    }
    code, out = await _cli(env, "serve", "sparse")
    assert code == 1
    lines = out.strip().splitlines()
    assert len(lines) == 1, out
    assert f"sparse cannot start: PostgreSQL at 127.0.0.1:{closed} does not answer" in lines[0]


async def test_stop_leaves_nothing_behind_when_the_supervisor_goes_before_its_services(
    tmp_path: Path,
) -> None:
    # A supervisor that dies on SIGTERM while its service ignores it (as one killed after the
    # stop's deadline would leave a service still in its grace period): the service is found in
    # the supervisor's session and killed.
    service = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
    supervisor = (
        "import subprocess, sys, time; "
        f"child = subprocess.Popen([sys.executable, '-c', {service!r}]); "
        "print(child.pid, flush=True); time.sleep(600)"
    )
    leader = await asyncio.create_subprocess_exec(
        sys.executable, "-c", supervisor, stdout=asyncio.subprocess.PIPE, start_new_session=True
    )
    assert leader.stdout is not None
    child = int(await asyncio.wait_for(leader.stdout.readline(), timeout=30))
    (tmp_path / "services.pid").write_text(str(leader.pid))
    env = {**os.environ, "TRIBRID_STATE_DIR": str(tmp_path), "TRIBRID_TELEMETRY__METRICS_PORT": "0"}
    try:
        code, out = await _cli(env, "stop")
        await asyncio.wait_for(leader.wait(), timeout=30)
        assert code == 0, out
        assert "killed 1 process(es) it left behind" in " ".join(out.split())
        assert _gone(child, within_s=10)
    finally:
        if _alive(child):
            os.kill(child, signal.SIGKILL)
