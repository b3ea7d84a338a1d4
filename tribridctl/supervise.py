"""One process per service for `tribrid serve ... --background` (make serve), under supervisord
(the `supervisor` package): a service that exits is started again, `tribrid stop` stops them all
together, and they write one log (state_dir/logs/services.log), each line naming its service. No
control socket: `tribrid stop` signals supervisord, which stops the services first.

Each process has its own interpreter lock, pools and caches, as on Kubernetes, where each service
is a Deployment and no supervisor runs.
"""

from __future__ import annotations

import compileall
import getpass
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from tribrid.config import TriBridConfig
from tribrid.legs import LEG_NAMES

# Seconds a service may take to start before a quick exit counts as a failed start (which
# supervisord retries with a back-off): the vector leg loads its model first.
START_SECONDS = 1
# Seconds past a service's own drain and grace periods before supervisord kills it on stop.
STOP_MARGIN_S = 10
# A leg's replica N (`serve all --replicas`) listens this many ports x (N - 1) above the leg's port.
REPLICA_PORT_STEP = 100
MAX_REPLICAS = 4


def config_path(cfg: TriBridConfig) -> Path:
    return cfg.state_dir / "supervisord.conf"


def log_path(cfg: TriBridConfig) -> Path:
    return cfg.state_dir / "logs" / "services.log"


def stop_wait_s(cfg: TriBridConfig) -> float:
    """How long a service takes to stop at most: its drain, its grace, and the margin."""
    return cfg.services.drain_delay_s + cfg.services.shutdown_grace_s + STOP_MARGIN_S


def supervisor_stop_s(cfg: TriBridConfig) -> float:
    """How long supervisord may take to stop: its programs one after another (each has a priority
    of its own), each within `stop_wait_s`, as its written configuration lists them."""
    conf = config_path(cfg)
    programs = conf.read_text().count("[program:") if conf.is_file() else 1
    return max(1, programs) * stop_wait_s(cfg)


def session_members(session: int) -> list[int]:
    """The live processes of a session (supervisord leads the one its services run in), but its
    leader, from /proc."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        pid = int(stat.parent.name)
        # fields: state, ppid, pgrp, session, ...; a zombie has already exited
        if int(fields[3]) == session and pid != session and fields[0] != "Z":
            members.append(pid)
    return sorted(members)


def _quoted(value: str) -> str:
    # supervisord expands %(name)s in its values: a literal % is written %%
    return value.replace("%", "%%")


def _programs(
    cfg: TriBridConfig, names: Sequence[str], replicas: int
) -> list[tuple[str, str, dict[str, str]]]:
    """(program, service, environment) in start order: each leg `replicas` times, on its own port
    for each; the gateway and the bridge call every replica of a leg (services.<leg>_address)."""
    services = cfg.services
    ports = {
        leg: [getattr(services, f"{leg}_port") + REPLICA_PORT_STEP * i for i in range(replicas)]
        for leg in LEG_NAMES
    }
    targets = {
        f"TRIBRID_SERVICES__{leg.upper()}_ADDRESS": "ipv4:"
        + ",".join(f"{services.bind_host}:{p}" for p in ports[leg])
        for leg in LEG_NAMES
        if replicas > 1
    }
    programs: list[tuple[str, str, dict[str, str]]] = []
    for name in names:
        if name in LEG_NAMES:
            for i, port in enumerate(ports[name]):
                env = {f"TRIBRID_SERVICES__{name.upper()}_PORT": str(port)} if i else {}
                programs.append((f"{name}-{i + 1}" if i else name, name, env))
        else:
            programs.append((name, name, targets if name in ("fusion", "bridge") else {}))
    return programs


def render(cfg: TriBridConfig, names: Sequence[str], python: str, directory: Path, replicas: int = 1) -> str:
    """supervisord's configuration: one program per service (per replica of a leg), in start order."""
    state = cfg.state_dir
    sections = [
        "[supervisord]",
        "nodaemon=true",
        f"logfile={_quoted(str(state / 'logs' / 'supervisord.log'))}",
        "logfile_maxbytes=10MB",
        "loglevel=warn",
        f"pidfile={_quoted(str(state / 'supervisord.pid'))}",
        f"childlogdir={_quoted(str(state / 'logs'))}",
        # the services run as whoever started them (said, so that running as root is not warned of)
        f"user={_quoted(getpass.getuser())}",
    ]
    metrics = cfg.telemetry.metrics_port
    programs = _programs(cfg, names, replicas)
    # the bridge's console reads each leg's latency from the gateway's /metrics, one port of these
    gateway_metrics = ""
    if metrics and "fusion" in names and not cfg.telemetry.gateway_metrics_url:
        fusion = [program for program, _, _ in programs].index("fusion")
        gateway_metrics = f"http://127.0.0.1:{metrics + fusion}/metrics"
    for priority, (program, name, env) in enumerate(programs):
        # one /metrics port per process: the configured one for the first, the next ones after it
        port = metrics + priority if metrics else 0
        environment = f'TRIBRID_TELEMETRY__METRICS_PORT="{port}"'
        if name == "bridge" and gateway_metrics:
            environment += f',TRIBRID_TELEMETRY__GATEWAY_METRICS_URL="{gateway_metrics}"'
        environment += "".join(f',{key}="{value}"' for key, value in env.items())
        sections += [
            "",
            f"[program:{program}]",
            f"command={_quoted(python)} -m tribridctl.cli serve {name}",
            f"directory={_quoted(str(directory))}",
            f"priority={priority + 1}",
            "autorestart=true",
            f"startsecs={START_SECONDS}",
            "startretries=20",
            "stopsignal=TERM",
            f"stopwaitsecs={int(stop_wait_s(cfg))}",
            "killasgroup=true",
            "stopasgroup=true",
            "redirect_stderr=true",
            # into supervisord's own stdout, which is the services' log
            "stdout_logfile=/dev/stdout",
            "stdout_logfile_maxbytes=0",
            f"environment={environment}",
        ]
    return "\n".join(sections) + "\n"


def write_config(cfg: TriBridConfig, names: Sequence[str], replicas: int = 1) -> Path:
    conf = config_path(cfg)
    log_path(cfg).parent.mkdir(parents=True, exist_ok=True)  # supervisord's own log goes there too
    conf.write_text(render(cfg, names, sys.executable, Path.cwd(), replicas))
    return conf


# Where the packages a service process imports live, and their names.
SOURCE_ROOT = Path(__file__).resolve().parent.parent
_PACKAGES = ("tribrid", "services", "tribridctl")


def compile_bytecode(root: Path = SOURCE_ROOT) -> None:
    """Writes the missing or stale bytecode of the packages the services import, so that a
    service started again after a crash reads it instead of compiling every module: 0.4 s of the
    graph leg's 1.4 s of CPU to SERVING. Where PYTHONDONTWRITEBYTECODE is set, as in many shells
    and containers, imports never write it; pip compiled an installed wheel's at install, and a
    read-only one is left as it is."""
    for package in _PACKAGES:
        compileall.compile_dir(root / package, quiet=2)


def command(cfg: TriBridConfig) -> list[str]:
    return [sys.executable, "-m", "supervisor.supervisord", "-c", str(config_path(cfg))]


def start(cfg: TriBridConfig, names: Sequence[str], replicas: int = 1) -> subprocess.Popen[bytes]:
    """supervisord running `names`, detached from this terminal; its pid is the services' pid."""
    write_config(cfg, names, replicas)
    compile_bytecode()
    with log_path(cfg).open("ab") as log_file:
        return subprocess.Popen(
            command(cfg),
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
