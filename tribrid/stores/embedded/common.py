"""What the embedded PostgreSQL and FalkorDB managers share: errors, status, the state-dir lock,
running helper commands, pid files, ports.

Liveness is decided from pid files plus /proc (Linux), never from `ps`: a killed server can linger as a
zombie when PID 1 does not reap, and a stale pid file can name a recycled pid.
"""

from __future__ import annotations

import fcntl
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from tribrid.config import TriBridConfig

Log = Callable[[str], None]

START_TIMEOUT_S = 60.0  # server start, including WAL recovery / RDB load
STOP_TIMEOUT_S = 60.0  # clean shutdown writes a checkpoint (postgres) or the RDB (falkordb)
COMMAND_TIMEOUT_S = 30.0  # short helper commands: psql, useradd, setpriv test
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


def state_dir_of(cfg: TriBridConfig) -> Path:
    return cfg.state_dir.expanduser().resolve()


def show_path(path: Path) -> str:
    """A path as users want to read it: relative to the working directory when inside it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


@contextmanager
def state_lock(state_dir: Path) -> Iterator[None]:
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


def run_command(
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


def one_line(text: str, max_lines: int = LOG_TAIL_LINES) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[-max_lines:]) or "(no output)"


def log_tail(path: Path) -> str:
    try:
        return one_line(path.read_text(errors="replace"))
    except OSError:
        return f"(no log at {path})"


def process_alive(pid: int, command_name: str) -> bool:
    """True if `pid` is a live (not zombie) process named `command_name` (from /proc/PID/stat)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    name = stat[stat.find("(") + 1 : stat.rfind(")")]
    state = stat[stat.rfind(")") + 1 :].split()[0]
    return name == command_name and state not in ("Z", "X")


def read_pid(pidfile: Path) -> int | None:
    try:
        first = pidfile.read_text().split("\n", 1)[0].strip()
    except OSError:
        return None
    return int(first) if first.isdigit() else None


def remove_stale_pidfile(name: str, pidfile: Path, log: Log) -> None:
    if pidfile.exists():
        pid = read_pid(pidfile)
        pidfile.unlink(missing_ok=True)
        log(f"{name}: removed stale pid file {show_path(pidfile)} (pid {pid} not running)")


def port_free(host: str, port: int) -> bool:
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


def require_port_free(host: str, port: int, env_var: str) -> None:
    if not port_free(host, port):
        raise StoreError(f"port {port} on {host} is in use by another process; set {env_var} or stop it")


def wait_until(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(POLL_S)
    return True


def tcp_reachable(host: str, port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def stopped_detail(data_dir: Path, pidfile_name: str, host: str, port: int) -> str:
    notes = [f"stopped, data {show_path(data_dir)}"]
    if (data_dir / pidfile_name).exists():
        notes.append("stale pid file")
    if not port_free(host, port):
        notes.append("port in use by another process")
    return "; ".join(notes)


def external_status(name: str, url: str, default_port: int, detail: str) -> StoreStatus:
    """Report an external server by probing its TCP port; never shows credentials."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port or default_port
    except ValueError:
        host, port = None, default_port
    if not host:
        return StoreStatus(name, False, None, "(not a URL)", f"{detail}; not probed")
    reachable = tcp_reachable(host, port)
    return StoreStatus(
        name, reachable, None, f"{host}:{port}", f"{detail}; {'reachable' if reachable else 'unreachable'}"
    )
