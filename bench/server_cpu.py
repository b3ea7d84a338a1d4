"""CPU time of the server side: the services process, the embedded PostgreSQL and FalkorDB, with
their child processes (PostgreSQL's backends), read from /proc. The load generator's own CPU is
not in it, so "CPU per request" is what serving a request costs, whatever the client spends."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import asyncpg

from tribrid.config import TriBridConfig
from tribrid.stores import embedded

_TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds) of a live process: its own user and system time, and that of its
    children it has waited for (cutime, cstime). A process that ends between two readings (a
    backend whose pool closed it, an autovacuum worker) then moves its time to its parent's
    instead of taking it out of the sum: before, a difference of two readings lost it, and once
    read a store's CPU as less than nothing."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = text[text.rindex(")") + 2 :].split()  # after "pid (comm) "
    return int(fields[1]), sum(int(f) for f in fields[11:15]) / _TICKS


def server_roots(cfg: TriBridConfig) -> list[int]:
    """The services process (`tribrid serve`) and the embedded stores' main processes."""
    roots = [s.pid for s in embedded.status(cfg) if s.running and s.pid]
    services = cfg.state_dir / "services.pid"
    if services.is_file():
        roots.append(int(services.read_text().split()[0]))
    return roots


def cpu_seconds(roots: list[int]) -> float:
    """CPU seconds used so far by `roots` and every live descendant of theirs."""
    return sum(cpu_by_process(roots).values())


def cpu_by_process(roots: list[int]) -> dict[str, float]:
    """`cpu_seconds` by what each process is: a service ("vector", "fusion", ... by its
    `serve <name>` command line), "postgresql" (the server and its backends), "falkordb", or
    "other" (the supervisor)."""
    stats = {
        int(p.name): s for p in Path("/proc").iterdir() if p.name.isdigit() and (s := _stat(int(p.name)))
    }
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in stats.items():
        children.setdefault(parent, []).append(pid)
    totals: dict[str, float] = {}
    todo = [(r, _kind(r)) for r in roots if r in stats]
    while todo:
        pid, kind = todo.pop()
        if kind == "other":  # the supervisor's children are the services
            kind = _kind(pid)
        totals[kind] = totals.get(kind, 0.0) + stats[pid][1]
        todo.extend((child, kind) for child in children.get(pid, []))
    return totals


# PostgreSQL settings that add work to every statement, as (setting, values that do not): a dev
# server left logging every statement (2026-12-02) cost 0.35-0.45 ms of its CPU per fused answer.
_STATEMENT_COSTS = {
    "log_statement": ("none",),
    "log_min_duration_statement": ("-1",),
    "log_duration": ("off",),
}


async def statement_costs(cfg: TriBridConfig) -> list[str]:
    """The PostgreSQL settings that make every statement cost more than serving it does (statement
    logging), as "name=value": a benchmark names them next to its CPU figures."""
    conn = await asyncpg.connect(cfg.postgres.effective_dsn(), timeout=10)
    try:
        rows = await conn.fetch(
            "SELECT name, setting FROM pg_settings WHERE name = ANY($1::text[]) ORDER BY name",
            list(_STATEMENT_COSTS),
        )
    finally:
        await conn.close()
    return [
        f"{row['name']}={row['setting']}"
        for row in rows
        if row["setting"] not in _STATEMENT_COSTS[row["name"]]
    ]


def statement_costs_note(costs: list[str]) -> str:
    """A warning line for a benchmark's output, empty when nothing adds to a statement's cost."""
    if not costs:
        return ""
    return (
        f"PostgreSQL is set to {', '.join(costs)}: its CPU figures include that work"
        " (ALTER SYSTEM RESET each, then SELECT pg_reload_conf())"
    )


def machine_notes(result: Mapping[str, Any]) -> list[str]:
    """What a benchmark's CPU figures are to be read against, as sentences: the machine's speed
    then (its `reference_ms`) and the PostgreSQL settings that add work to every statement
    (its `postgresql_statement_costs`)."""
    notes = []
    if "reference_ms" in result:
        notes.append(
            f"The machine's speed then: {result['reference_ms']:.0f} ms of CPU for bench-quick's"
            " reference loop (`reference_ms`; fewer is faster): compare CPU per answer over it between runs."
        )
    if costs := statement_costs_note(result.get("postgresql_statement_costs", [])):
        notes.append(f"{costs}.")
    return notes


def reference_ms(repeats: int = 3, size: int = 1_000_000) -> float:
    """How fast the machine is at the moment: CPU ms of a fixed pure-Python loop (the services are
    Python), the best of `repeats` (a moment's interruption slows one try, not the best). Read next
    to a CPU figure, it says whether two runs can be compared."""
    best = float("inf")
    for _ in range(repeats):
        started = time.process_time()
        total = 0
        for i in range(size):
            total += i * i
        best = min(best, (time.process_time() - started) * 1000)
    return best


def service_of(pid: int) -> str | None:
    """The service a process runs (its `serve <name>` command line), None for any other."""
    words = _argv(pid)
    return words[words.index("serve") + 1] if "serve" in words[:-1] else None


def _kind(pid: int) -> str:
    service = service_of(pid)
    if service is not None:
        return service
    command = " ".join(_argv(pid)[:2])
    if "postgres" in command:
        return "postgresql"
    if "redis-server" in command or "falkordb" in command:
        return "falkordb"
    return "other"


def _argv(pid: int) -> list[str]:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (FileNotFoundError, ProcessLookupError):
        return []
    return [a.decode(errors="replace") for a in argv if a]
