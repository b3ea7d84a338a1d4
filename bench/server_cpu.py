"""CPU time of the server side: the services process, the embedded PostgreSQL and FalkorDB, with
their child processes (PostgreSQL's backends), read from /proc. The load generator's own CPU is
not in it, so "CPU per request" is what serving a request costs, whatever the client spends."""

from __future__ import annotations

import os
from pathlib import Path

from tribrid.config import TriBridConfig
from tribrid.stores import embedded

_TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, user + system CPU seconds) of a live process."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = text[text.rindex(")") + 2 :].split()  # after "pid (comm) "
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / _TICKS


def server_roots(cfg: TriBridConfig) -> list[int]:
    """The services process (`tribrid serve`) and the embedded stores' main processes."""
    roots = [s.pid for s in embedded.status(cfg) if s.running and s.pid]
    services = cfg.state_dir / "services.pid"
    if services.is_file():
        roots.append(int(services.read_text().split()[0]))
    return roots


def cpu_seconds(roots: list[int]) -> float:
    """CPU seconds used so far by `roots` and every live descendant of theirs."""
    stats = {
        int(p.name): s for p in Path("/proc").iterdir() if p.name.isdigit() and (s := _stat(int(p.name)))
    }
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in stats.items():
        children.setdefault(parent, []).append(pid)
    total, todo = 0.0, [r for r in roots if r in stats]
    while todo:
        pid = todo.pop()
        total += stats[pid][1]
        todo.extend(children.get(pid, []))
    return total
