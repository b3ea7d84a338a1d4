"""`tribrid` command line: manage the embedded stores and services, index, search, demo."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, TypeVar

import grpc
import typer
from google.protobuf import json_format
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2, health_pb2_grpc
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from tribrid import auth, tls
from tribrid.config import ConfigError, TriBridConfig, load_config
from tribrid.legs import LEG_NAMES, LEGS, source_name
from tribrid.options import RequestError, set_option, spelling
from tribrid.stores import embedded
from tribrid.stores.embedded.common import tcp_reachable
from tribrid.v1 import (
    common_pb2,
    fusion_options_pb2,
    fusion_pb2,
    fusion_pb2_grpc,
    graph_pb2,
    graph_pb2_grpc,
    indexer_pb2,
    indexer_pb2_grpc,
    legs_pb2,
    reading_pb2,
)
from tribridctl import supervise
from tribridctl.compose import ALL_SERVICES, PROCESS_ALL, ServiceName

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)
# Wide enough for a result table even when stdout is not a terminal (make demo, CI logs).
console = Console(width=max(Console().width, 150))
err_console = Console(stderr=True)


ALL = "all"
# `tribrid serve WHICH`: every service in one process, or one of them (the legs from the leg table)
SERVE_CHOICES = (ALL, *PROCESS_ALL)


def _config() -> TriBridConfig:
    try:
        return load_config()
    except ConfigError as exc:
        err_console.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from None


def _pid_file(cfg: TriBridConfig) -> Path:
    return cfg.state_dir / "services.pid"


def _running_pid(cfg: TriBridConfig) -> int | None:
    try:
        pid = int(_pid_file(cfg).read_text().strip())
        os.kill(pid, 0)
    except (FileNotFoundError, ValueError, ProcessLookupError):
        return None
    return pid


def _grpc_error(err: grpc.aio.AioRpcError) -> typer.Exit:
    err_console.print(f"[red]{err.code().name}[/red]: {err.details()}")
    return typer.Exit(1)


@app.command()
def up() -> None:
    """Start the embedded PostgreSQL and FalkorDB (no-op when already running) and migrate the schema."""
    cfg = _config()
    try:
        embedded.up(cfg, log=console.print)
    except embedded.StoreError as exc:
        err_console.print(f"[red]{exc}[/red]")
        raise typer.Exit(1) from None
    asyncio.run(_migrate(cfg))


async def _migrate(cfg: TriBridConfig) -> None:
    from tribrid.stores.postgres import create_pool

    pool = await create_pool(cfg.postgres, cfg.embedding.dim, cfg.vector)
    await pool.close()


@app.command("token-hash")
def token_hash(token: str = typer.Argument(..., help="the bearer token callers will send")) -> None:
    """Print the SHA-256 to store for a token in `auth.tokens` (the token itself is never stored)."""
    console.print(auth.hash_token(token))


@app.command()
def certs(
    directory: Annotated[Path | None, typer.Option("--dir", help="default: <state_dir>/certs")] = None,
    hosts: Annotated[
        list[str] | None,
        typer.Option(
            "--host", help="a name or IP the certificate is for (repeat; default localhost, 127.0.0.1)"
        ),
    ] = None,
) -> None:
    """Write a local CA and a server certificate for localhost/127.0.0.1 (or --host ...), to try TLS out."""
    from tribrid.certs import make_certs

    target = directory or _config().state_dir / "certs"
    files = make_certs(target, tuple(hosts)) if hosts else make_certs(target)
    console.print(f"CA {files.ca_file}\ncertificate {files.cert_file}\nkey {files.key_file}")
    console.print(
        "serve TLS with TRIBRID_SERVICES__TLS_CERT_FILE / TLS_KEY_FILE; clients verify with"
        " TRIBRID_SERVICES__TLS_CA_FILE"
    )


@app.command()
def down() -> None:
    """Stop the embedded stores (no-op when not running)."""
    embedded.down(_config(), log=console.print)


@app.command()
def serve(
    which: Annotated[str, typer.Argument(help=f"which service(s) to run: {', '.join(SERVE_CHOICES)}")] = ALL,
    background: Annotated[bool, typer.Option(help="detach, and wait until every service is healthy")] = False,
    single_process: Annotated[
        bool, typer.Option(help="every service in this one process (debugging); else one process each")
    ] = False,
    replicas: Annotated[
        int,
        typer.Option(
            min=1,
            max=supervise.MAX_REPLICAS,
            help="processes per leg (all, supervised): the gateway calls each, and hedges between them",
        ),
    ] = 1,
) -> None:
    """Run services: one (as on Kubernetes), or all of them, the gRPC services and the HTTP bridge,
    one process each under a supervisor that restarts a service that exits."""
    if which not in SERVE_CHOICES:
        raise typer.BadParameter(f"{which!r} is not one of {', '.join(SERVE_CHOICES)}", param_hint="WHICH")
    if replicas > 1 and (which != ALL or single_process):
        raise typer.BadParameter("replicas need `serve all`, one process each", param_hint="--replicas")
    cfg = _config()
    if which == ALL or background:  # run here, beside the stores (a pod alone reports its own)
        _require_stores(cfg)
    if background:
        _serve_background(cfg, which, single_process, replicas)
        return
    if which == ALL and not single_process:
        # supervisord in the foreground, in place of this process: Ctrl-C or SIGTERM stops them all
        supervise.write_config(cfg, _services(which), replicas)
        supervise.compile_bytecode()
        os.execv(sys.executable, supervise.command(cfg))
    from tribrid import telemetry
    from tribridctl.compose import run

    telemetry.setup_logging(cfg.telemetry, which)
    telemetry.setup_tracing(cfg.telemetry, f"tribrid-{which}")
    import uvloop  # a service's loop: about a quarter less CPU per gRPC call than asyncio's

    from tribrid.stores.postgres import StoreUnavailable

    try:
        uvloop.run(run(cfg, _services(which)))
    except StoreUnavailable as exc:  # one line, not a traceback: the supervisor starts it again
        logging.getLogger("tribridctl").error("%s cannot start: %s", which, exc)
        raise typer.Exit(1) from None


def _require_stores(cfg: TriBridConfig) -> None:
    """Every service needs the stores: name an embedded one that does not answer, and how to start
    it, rather than start services that can only exit and be restarted until it comes up. External
    stores are left to the services (in a container they may come up later)."""
    gs = cfg.graph_store
    managed = [
        ("PostgreSQL", cfg.postgres.embedded, cfg.postgres.host, cfg.postgres.port),
        ("FalkorDB", gs.backend == "falkordb", gs.falkordb_host, gs.falkordb_port),
    ]
    down = [(name, host, port) for name, on, host, port in managed if on and not tcp_reachable(host, port)]
    for name, host, port in down:
        err_console.print(f"[red]{name} does not answer on {host}:{port}[/red]")
    if down:
        err_console.print("start the stores with `tribrid up` (`make up`), then serve again")
        raise typer.Exit(1)


def _services(which: str) -> tuple[ServiceName, ...]:
    return PROCESS_ALL if which == ALL else (which,)


def _serve_background(cfg: TriBridConfig, which: str, single_process: bool, replicas: int = 1) -> None:
    if (pid := _running_pid(cfg)) is not None:
        console.print(f"services: already running (pid {pid})")
        return
    log_path = supervise.log_path(cfg)
    if single_process:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with log_path.open("ab") as log_file:
            proc = subprocess.Popen(
                [sys.executable, "-m", "tribridctl.cli", "serve", which, "--single-process"],
                stdout=log_file,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
    else:
        proc = supervise.start(cfg, _services(which), replicas)
    _pid_file(cfg).write_text(str(proc.pid))
    started = time.monotonic()
    for name in _services(which):
        address = cfg.services.address(name)
        wait = (
            _wait_http(address, deadline_s=120)
            if name == "bridge"
            else _wait_healthy(address, cfg, deadline_s=120)
        )
        if not asyncio.run(wait) or proc.poll() is not None:
            err_console.print(f"[red]services: {name} did not become healthy; see {log_path}[/red]")
            raise typer.Exit(1)
    names = ", ".join(_services(which))
    how = "in one process" if single_process else "one process each, supervised"
    took = time.monotonic() - started
    console.print(f"services: {names} healthy in {took:.1f}s ({how}, pid {proc.pid}); log {log_path}")


async def _wait_healthy(address: str, cfg: TriBridConfig, deadline_s: float) -> bool:
    end = time.monotonic() + deadline_s
    async with tls.channel(address, cfg.services, interceptors=auth.client_interceptors()) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < end:
            try:
                reply = await stub.Check(health_pb2.HealthCheckRequest(), timeout=1)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return True
            except grpc.aio.AioRpcError:
                pass
            await asyncio.sleep(0.2)
    return False


async def _wait_http(address: str, deadline_s: float) -> bool:
    import httpx

    end = time.monotonic() + deadline_s
    async with httpx.AsyncClient(timeout=1.0) as client:
        while time.monotonic() < end:
            try:
                if (await client.get(f"http://{address}/healthz")).status_code == 200:
                    return True
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.2)
    return False


@app.command()
def stop() -> None:
    """Stop services started with `serve --background`."""
    cfg = _config()
    pid = _running_pid(cfg)
    if pid is None:
        console.print("services: not running")
        _pid_file(cfg).unlink(missing_ok=True)
        return
    os.kill(pid, signal.SIGTERM)
    # the supervisor stops every service first, one after another, each within its drain and
    # grace periods
    deadline = time.monotonic() + supervise.supervisor_stop_s(cfg) + 5
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(pid, signal.SIGKILL)
    # a service the supervisor left behind (it was killed, or died first) still holds its port
    left = supervise.session_members(pid)
    for member in left:
        try:
            os.kill(member, signal.SIGKILL)
        except ProcessLookupError:
            pass
    _pid_file(cfg).unlink(missing_ok=True)
    killed = f"; killed {len(left)} process(es) it left behind" if left else ""
    console.print(f"services: stopped (pid {pid}){killed}")


@app.command()
def status() -> None:
    """Show the stores, the services and the indexed corpora."""
    cfg = _config()
    table = Table("component", "state", "address", "detail")
    for store in embedded.status(cfg):
        table.add_row(store.name, "running" if store.running else "stopped", store.address, store.detail)
    for name in ALL_SERVICES:
        address = cfg.services.address(name)
        healthy = asyncio.run(_wait_healthy(address, cfg, deadline_s=0.5))
        table.add_row(f"service {name}", "serving" if healthy else "down", address, "")
    console.print(table)
    try:
        corpora = asyncio.run(_list_corpora(cfg))
    except grpc.aio.AioRpcError as err:
        console.print(f"corpora: indexer unavailable ({err.code().name})")
        return
    ctable = Table("corpus", "files", "chunks", "generation", "updated", "root")
    for c in corpora:
        ctable.add_row(c.corpus_id, str(c.files), str(c.chunks), str(c.generation), c.updated_at, c.root_path)
    console.print(ctable)


async def _list_corpora(cfg: TriBridConfig) -> list[indexer_pb2.CorpusInfo]:
    async with tls.channel(
        cfg.services.address("indexer"), cfg.services, interceptors=auth.client_interceptors()
    ) as channel:
        reply = await indexer_pb2_grpc.IndexerStub(channel).ListCorpora(
            indexer_pb2.ListCorporaRequest(), timeout=5
        )
    return list(reply.corpora)


@app.command()
def index(
    path: Annotated[Path, typer.Argument(help="directory to index")],
    corpus: Annotated[str, typer.Option("--corpus", help="corpus name")],
) -> None:
    """Index (or re-index) a directory into a corpus, with a progress bar."""
    cfg = _config()
    try:
        last = asyncio.run(_index(cfg, path.resolve(), corpus))
    except grpc.aio.AioRpcError as err:
        raise _grpc_error(err) from None
    skipped = ", ".join(f"{k}={v}" for k, v in sorted(last.skipped_by_reason.items())) or "none"
    console.print(
        f"indexed [bold]{corpus}[/bold]: {last.files_seen} files ({last.files_changed} changed, "
        f"{last.files_deleted} deleted, skipped: {skipped}), {last.chunks_total} chunks "
        f"({last.chunks_embedded} embedded), {last.entities} entities, {last.relationships} relationships, "
        f"generation {last.generation}, {last.elapsed_s:.1f}s"
    )
    if last.named_entities:
        console.print(
            f"named entities: {last.named_entities}"
            f" ({last.named_entities_merged} names merged into a longer one)"
        )


async def _index(cfg: TriBridConfig, path: Path, corpus: str) -> indexer_pb2.IndexProgress:
    last = indexer_pb2.IndexProgress()
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    async with tls.channel(
        cfg.services.address("indexer"), cfg.services, interceptors=auth.client_interceptors()
    ) as channel:
        stub = indexer_pb2_grpc.IndexerStub(channel)
        with Progress(*columns, console=console, transient=True) as bar:
            task = bar.add_task("walking", total=None)
            async for event in stub.IndexCorpus(
                indexer_pb2.IndexCorpusRequest(corpus_id=corpus, path=str(path))
            ):
                last = event
                total = event.chunks_to_embed or None
                bar.update(task, description=event.phase, completed=event.chunks_embedded, total=total)
    return last


@app.command()
def delete(corpus: Annotated[str, typer.Option("--corpus", help="corpus name")]) -> None:
    """Delete a corpus from both stores."""
    cfg = _config()

    async def call() -> indexer_pb2.DeleteCorpusResponse:
        async with tls.channel(
            cfg.services.address("indexer"), cfg.services, interceptors=auth.client_interceptors()
        ) as channel:
            stub = indexer_pb2_grpc.IndexerStub(channel)
            reply: indexer_pb2.DeleteCorpusResponse = await stub.DeleteCorpus(
                indexer_pb2.DeleteCorpusRequest(corpus_id=corpus), timeout=60
            )
            return reply

    try:
        reply = asyncio.run(call())
    except grpc.aio.AioRpcError as err:
        raise _grpc_error(err) from None
    console.print(
        f"deleted {corpus}: {reply.chunks_deleted} chunks" if reply.deleted else f"{corpus}: not found"
    )


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="what to look for")],
    corpus: Annotated[str, typer.Option("--corpus", help="corpus name")],
    top_k: Annotated[int, typer.Option("--top-k", help="number of fused results")] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="print the proto3 JSON response")] = False,
    timeout_ms: Annotated[int, typer.Option("--timeout-ms", help="the call's deadline")] = 5000,
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--option",
            "-o",
            help="a request option, SECTION.FIELD=VALUE (repeatable): vector.ef_search=200, "
            "fusion.method=weighted, fusion.legs.graph.enabled=false, graph.direction=callers",
        ),
    ] = None,
) -> None:
    """Search a corpus through the fusion gateway; prints fused results with each leg's rank."""
    cfg = _config()
    request = common_pb2.SearchRequest(corpus_id=corpus, query=query, top_k=top_k)
    try:
        for setting in option or []:
            set_option(request.options, setting)
    except RequestError as err:
        err_console.print(f"{err.code.name}: {err.message}")
        raise typer.Exit(2) from None
    try:
        reply = asyncio.run(_search(cfg, request, timeout_ms / 1000))
    except grpc.aio.AioRpcError as err:
        raise _grpc_error(err) from None
    if as_json:
        print(json_format.MessageToJson(reply, preserving_proto_field_name=True))
        return
    print_results(query, reply)


@app.command("explain-query")
def explain_query(
    query: Annotated[str, typer.Argument(help="the question to read")],
    corpus: Annotated[str, typer.Option("--corpus", help="corpus name (its content shapes the weights)")],
    timeout_ms: Annotated[int, typer.Option("--timeout-ms", help="the call's deadline")] = 5000,
) -> None:
    """How the gateway reads a question on a corpus: its kind, intent and the legs' weights."""
    cfg = _config()
    request = common_pb2.SearchRequest(corpus_id=corpus, query=query, top_k=1)
    try:
        reply = asyncio.run(_search(cfg, request, timeout_ms / 1000))
    except grpc.aio.AioRpcError as err:
        raise _grpc_error(err) from None
    console.print(query_reading(reply))


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True}, add_help_option=False
)
def tune(ctx: typer.Context) -> None:
    """Learn the fusion weights and rrf_k per query kind from judged queries (k-fold cross-validated);
    writes a config snippet, never the running config. `tribrid tune --help` for its options."""
    # its logic imports evaluation/, which a checkout has and an installed wheel does not
    checkout = Path(__file__).resolve().parents[1]
    if not (checkout / "evaluation" / "tune.py").is_file():
        err_console.print("tribrid tune needs a source checkout (evaluation/ is not installed): run it there")
        raise typer.Exit(2)
    sys.path.insert(0, str(checkout))
    from evaluation.tune import main as tune_main

    raise typer.Exit(tune_main(ctx.args))


async def _search(
    cfg: TriBridConfig, request: common_pb2.SearchRequest, timeout_s: float
) -> fusion_pb2.FusionSearchResponse:
    async with tls.channel(
        cfg.services.address("fusion"), cfg.services, interceptors=auth.client_interceptors()
    ) as channel:
        response: fusion_pb2.FusionSearchResponse = await fusion_pb2_grpc.FusionStub(channel).Search(
            request, timeout=timeout_s
        )
        return response


def print_results(query: str, reply: fusion_pb2.FusionSearchResponse) -> None:
    method = spelling(fusion_options_pb2.FusionMethod.DESCRIPTOR, reply.fusion_method)
    table = Table(title=f"{query!r}: {len(reply.matches)} fused results ({method})")
    techniques = ("techniques",) if reply.techniques else ()
    expanded = ("expanded from",) if any(m.expanded for m in reply.matches) else ()
    reranked = {
        m.chunk_id: f"{e.raw_score:.3f} (fused #{e.fused_rank})"
        for m in reply.matches
        for e in m.explain
        if e.leg == legs_pb2.LEG_RERANK
    }
    rerank = ("rerank",) if reranked else ()
    # what the best other match of the same document added (fusion.document_context)
    document = ("document",) if any(m.document_context for m in reply.matches) else ()
    optional = (*document, *techniques, *rerank, *expanded)
    for col in ("#", "score", "location", "symbol / section", *LEG_NAMES, *optional):
        table.add_column(col, justify="right" if col in ("#", "score") else "left")
    rank_of = {m.chunk_id: rank for rank, m in enumerate(reply.matches, start=1)}
    for rank, m in enumerate(reply.matches, start=1):
        legs = {
            e.leg: (f"#{e.rank} ({e.raw_score:.3f})" if e.rank else "-") for e in m.explain if not e.source
        }
        # the technique lists a match is in: "vector:hyde#1 sparse:multi_query:2#3"
        found_by = " ".join(
            f"{source_name(e.leg)}:{e.source}#{e.rank}"
            for e in m.explain
            if e.source and e.leg != legs_pb2.LEG_EXPANSION
        )
        table.add_row(
            f"{rank}+" if m.expanded else str(rank),
            f"{m.score:.4f}",
            f"{m.file_path}:{m.start_line}-{m.end_line}",
            describe_match(m),
            *(legs.get(leg.value, "-") for leg in LEGS),
            *((f"+{m.document_context:.4f}" if m.document_context else "-",) if document else ()),
            *((found_by or "-",) if techniques else ()),
            *((reranked.get(m.chunk_id, "-"),) if rerank else ()),
            *((expansion_origin(m, rank_of),) if expanded else ()),
        )
    console.print(table)
    if expanded:
        console.print("+ added by graph expansion after fusion: no leg ranked it in the fused list")
    for t in reply.techniques:
        generated = "; ".join(t.generated)
        status = fusion_pb2.TechniqueStatus.Name(t.status).removeprefix("TECHNIQUE_STATUS_")
        console.print(
            f"technique {t.technique}={status}"
            f" ({t.hits} hits, {t.latency_ms:.1f} of {t.budget_ms:.0f} ms{', cached' if t.cached else ''})"
            f"{' ' + t.error if t.error else ''}{': ' + generated[:300] if generated else ''}"
        )
    status_names = fusion_pb2.LegStatus.Name
    reports = "  ".join(
        f"{source_name(r.leg)}={status_names(r.status).removeprefix('LEG_STATUS_')} "
        f"({r.hits} hits, {r.latency_ms:.1f} ms){' ' + r.error if r.error else ''}"
        for r in reply.legs
    )
    console.print(f"legs: {reports}   partial={reply.partial}   took {reply.took_ms:.1f} ms")
    console.print(f"{query_reading(reply)}\n")


def expansion_origin(match: common_pb2.ChunkMatch, rank_of: dict[str, int]) -> str:
    """Where graph expansion reached a match from: the fused match and the path's edges."""
    entry = next((e for e in match.explain if e.leg == legs_pb2.LEG_EXPANSION), None)
    if entry is None:
        return "-"
    origin = f"#{rank_of[entry.source]}" if entry.source in rank_of else entry.source
    path = list(entry.graph.path)
    steps = []
    for i, (kind, edge) in enumerate(
        itertools.zip_longest(entry.graph.relationship_types, entry.graph.edges)
    ):
        if not kind:
            continue
        properties = _edge_text(edge) if edge is not None else ""
        steps.append(f"{kind} ({properties})" if properties else kind)
        if i + 2 < len(path):  # a node between two chunks: the entity the walk went through
            steps.append(repr(path[i + 1]))
    return f"{origin} via {' > '.join(steps) or 'the graph'} (graph score {entry.raw_score:.2f})"


def query_reading(reply: fusion_pb2.FusionSearchResponse) -> str:
    """How the gateway read the question: its kind, intent, and the legs' weights (and why)."""
    asked = spelling(reading_pb2.QueryIntent.DESCRIPTOR, reply.query_intent)
    intent = f" ({asked})" if asked else ""
    weights = " ".join(f"{leg}={reply.weights[leg]:.2f}" for leg in LEG_NAMES if leg in reply.weights)
    reason = f"; {reply.weights_reason}" if reply.weights_reason else ""
    kind = spelling(reading_pb2.QueryKind.DESCRIPTOR, reply.query_kind)
    return f"read as: {kind}{intent}; weights {weights}{reason}"


def describe_match(match: common_pb2.ChunkMatch) -> str:
    """What a match is: a definition's name, or a document chunk's breadcrumb and pages."""
    if not match.section and not match.document_title:
        return match.symbol or match.kind
    where = match.section or match.document_title
    if match.page_start and match.page_end > match.page_start:
        return f"{where} pp.{match.page_start}-{match.page_end}"
    if match.page_start:
        return f"{where} p.{match.page_start}"
    return where


DEMO_QUERIES = (
    "parse command line options and arguments",
    "get_terminal_size",
    "who calls make_context",
)
# The document collection of the demo: the dataset descriptions (reStructuredText) that the
# scikit-learn wheel ships, which sentence-transformers installs. Written by its authors, not here.
DEMO_DOCUMENT_QUERIES = (
    "how many instances and attributes does the breast cancer data have",
    "who collected the wine recognition data",
    "which newsgroups are in the 20 newsgroups text dataset",
)

# With graph expansion: questions whose fused top 5 sit next to passages no leg ranked there.
DEMO_EXPANSION_QUERIES = ("who donated the breast cancer wisconsin data",)


@app.command()
def demo() -> None:
    """Index a real code base (the `click` library) and a real document collection (scikit-learn's
    dataset descriptions) that the install brings, and ask each three questions."""
    import click

    cfg = _config()
    root = Path(click.__file__).resolve().parent
    console.rule(f"indexing {root} as corpus 'demo-click'")
    started = time.monotonic()
    try:
        last = asyncio.run(_index(cfg, root, "demo-click"))
    except grpc.aio.AioRpcError as err:
        raise _grpc_error(err) from None
    console.print(
        f"indexed: {last.files_seen} files, {last.chunks_total} chunks "
        f"({last.chunks_embedded} embedded now), "
        f"{last.entities} entities, {last.relationships} relationships, {last.communities} communities, "
        f"{last.unresolved_references} unresolved references in {time.monotonic() - started:.1f}s"
    )
    _demo_queries(cfg, "demo-click", DEMO_QUERIES)
    docs_root = _demo_documents_root()
    console.rule(f"indexing the document collection {docs_root} as corpus 'demo-docs'")
    started = time.monotonic()
    try:
        last = asyncio.run(_index(cfg, docs_root, "demo-docs"))
    except grpc.aio.AioRpcError as err:
        raise _grpc_error(err) from None
    skipped = ", ".join(f"{reason}: {n}" for reason, n in sorted(last.skipped_by_reason.items())) or "none"
    console.print(
        f"indexed: {last.files_seen} files, {last.chunks_total} chunks (skipped {skipped}), "
        f"{last.named_entities} named entities"
        f" ({last.named_entities_merged} names merged into a longer one), "
        f"{last.relationships} relationships "
        f"in {time.monotonic() - started:.1f}s"
    )
    _demo_queries(cfg, "demo-docs", DEMO_DOCUMENT_QUERIES)
    _demo_document_graph("demo-docs")
    _demo_expansion(cfg, "demo-docs", DEMO_EXPANSION_QUERIES)
    print(json.dumps({"demo": "ok"}))
    scheme = "https" if cfg.services.tls_cert_file is not None else "http"
    console.print(f"the web console: {scheme}://{cfg.services.address('bridge')}/console (docs/console.md)")


def _demo_document_graph(corpus_id: str) -> None:
    """The collection's graph: its most mentioned named entities, the relations of the first one
    that has RELATED_TO edges (two steps out), and the path to the farthest entity it reaches."""
    console.rule(f"the graph of '{corpus_id}': named entities, MENTIONS, RELATED_TO, SIMILAR_TO")
    stats_request = graph_pb2.GraphStatsRequest(corpus_id=corpus_id, top_entities=30)
    stats = _graph_call(lambda stub: stub.Stats(stats_request, timeout=_GRAPH_TIMEOUT_S))
    shown = graph_pb2.GraphStatsResponse()
    shown.CopyFrom(stats)
    del shown.top_entities[8:]  # 8 shown; all 30 are tried below
    _print_stats(shown, corpus_id)
    for top in stats.top_entities:
        entity = graph_pb2.EntityRef(entity_id=top.entity.entity_id)
        request = graph_pb2.EntitySearchRequest(
            corpus_id=corpus_id, entity=entity, relation="related_to", max_hops=2
        )
        found = _entity_search(request)
        if found.relations:
            break
    else:
        console.print("no named entity of this collection has RELATED_TO edges")
        return
    console.print(
        f"tribrid graph entity {top.entity.name!r} --corpus {corpus_id} --relation related_to --max-hops 2"
    )
    _print_entity_search(found)
    farthest = max(found.relations, key=lambda r: r.hops)
    path_request = graph_pb2.PathBetweenRequest(
        corpus_id=corpus_id, source=entity, target=graph_pb2.EntityRef(entity_id=farthest.target.entity_id)
    )
    path = _graph_call(lambda stub: stub.PathBetween(path_request, timeout=_GRAPH_TIMEOUT_S))
    console.print(f"tribrid graph path {top.entity.name!r} {farthest.target.name!r} --corpus {corpus_id}")
    _print_path(path, f"{top.entity.name} -> {farthest.target.name}")


def _entity_search(request: graph_pb2.EntitySearchRequest) -> graph_pb2.EntitySearchResponse:
    return _graph_call(lambda stub: stub.EntitySearch(request, timeout=_GRAPH_TIMEOUT_S))


def _demo_expansion(cfg: TriBridConfig, corpus_id: str, queries: tuple[str, ...]) -> None:
    """Searches with the graph-expansion stage on: the chunks it adds are marked with a +."""
    console.rule(f"graph expansion on '{corpus_id}' (-o fusion.enable_expansion=true)")
    for query in queries:
        request = common_pb2.SearchRequest(corpus_id=corpus_id, query=query, top_k=5)
        request.options.fusion.enable_expansion = True
        try:
            reply = asyncio.run(_search(cfg, request, 10.0))
        except grpc.aio.AioRpcError as err:
            raise _grpc_error(err) from None
        print_results(query, reply)


def _demo_documents_root() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("sklearn")  # located, not imported: scikit-learn is slow to import
    if spec is None or spec.origin is None:
        raise typer.BadParameter("scikit-learn is missing: its dataset descriptions are the demo documents")
    return Path(spec.origin).resolve().parent / "datasets" / "descr"


def _demo_queries(cfg: TriBridConfig, corpus_id: str, queries: tuple[str, ...]) -> None:
    for query in queries:
        request = common_pb2.SearchRequest(corpus_id=corpus_id, query=query, top_k=5)
        t0 = time.monotonic()
        try:
            reply = asyncio.run(_search(cfg, request, 10.0))
        except grpc.aio.AioRpcError as err:
            raise _grpc_error(err) from None
        print_results(query, reply)
        console.print(
            f"(query answered in {1000 * (time.monotonic() - t0):.0f} ms wall, incl. client start-up)"
        )


@app.command()
def mcp() -> None:
    """Serve the MCP tools (search, graph, corpora) over stdio to a local agent; the services at
    services.*_address, the token from $TRIBRID_TOKEN (docs/mcp.md)."""
    from services.bridge.mcp import serve_stdio

    asyncio.run(serve_stdio(_config()))


# --- tribrid graph: the graph service's lookups -------------------------------------------------

graph_app = typer.Typer(no_args_is_help=True, help="Look up a corpus's graph (the graph service).")
app.add_typer(graph_app, name="graph")
_GRAPH_TIMEOUT_S = 30.0
_Reply = TypeVar("_Reply", bound=Message)
_CorpusOption = Annotated[str, typer.Option("--corpus", help="corpus name")]
_JsonOption = Annotated[bool, typer.Option("--json", help="print the proto3 JSON response")]
_EntityArgument = Annotated[
    str, typer.Argument(help="an entity: its id, qualified name or plain name (e.g. total_price)")
]


class EdgeDirection(StrEnum):
    both = "both"
    out = "out"
    in_ = "in"


def _graph_call(call: Callable[[graph_pb2_grpc.GraphSearchAsyncStub], Awaitable[_Reply]]) -> _Reply:
    cfg = _config()

    async def run() -> _Reply:
        async with tls.channel(
            cfg.services.address("graph"), cfg.services, interceptors=auth.client_interceptors()
        ) as channel:
            stub = graph_pb2_grpc.GraphSearchStub(channel)
            return await call(stub)

    try:
        return asyncio.run(run())
    except grpc.aio.AioRpcError as err:
        raise _grpc_error(err) from None


def _print_json(reply: Message) -> None:
    print(
        json_format.MessageToJson(
            reply, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
        )
    )


def _location(file_path: str, start_line: int, end_line: int) -> str:
    return f"{file_path}:{start_line}-{end_line}" if file_path else "-"


def _edge_text(edge: common_pb2.EdgeProperties) -> str:
    """An edge's properties that are set, e.g. "count=3", "strength=0.8" or an import's "role=scout"."""
    parts = [f"count={edge.count}"] if edge.count else []
    parts += [f"strength={edge.strength:g}"] if edge.strength else []
    parts += [f"similarity={edge.similarity:g}"] if edge.similarity else []
    parts += [f"inferred, confidence={edge.confidence:.2f}"] if edge.inferred else []
    parts += [f"{name}={value}" for name, value in sorted(json_format.MessageToDict(edge.attributes).items())]
    return ", ".join(parts)


def _pages(match: common_pb2.ChunkMatch) -> str:
    if not match.page_start:
        return ""
    same = match.page_end in (0, match.page_start)
    return str(match.page_start) if same else f"{match.page_start}-{match.page_end}"


class GraphFileFormat(StrEnum):
    auto = "auto"
    jsonl = "jsonl"
    csv = "csv"


@graph_app.command("import")
def graph_import(
    file: Annotated[Path, typer.Argument(help="the graph: JSON Lines, or the nodes CSV (with --edges)")],
    corpus: _CorpusOption,
    edges: Annotated[Path | None, typer.Option("--edges", help="the edges CSV (CSV format)")] = None,
    file_format: Annotated[
        GraphFileFormat, typer.Option("--format", help="auto: csv when the file ends in .csv")
    ] = GraphFileFormat.auto,
) -> None:
    """Import a curated graph (nodes with names and aliases, typed edges with properties) into an
    indexed corpus: a new index generation, with the names linked in every document chunk."""
    csv = file_format == GraphFileFormat.csv or (
        file_format == GraphFileFormat.auto and file.suffix == ".csv"
    )
    if csv and edges is None:
        raise typer.BadParameter("a CSV graph needs its edges file: --edges EDGES.csv")
    request = indexer_pb2.ImportGraphRequest(
        corpus_id=corpus,
        format=indexer_pb2.GRAPH_FORMAT_CSV if csv else indexer_pb2.GRAPH_FORMAT_JSONL,
        content=file.read_bytes(),
        edges=edges.read_bytes() if edges is not None else b"",
        source=file.name,
    )
    cfg = _config()
    try:
        last = asyncio.run(_import_graph(cfg, request))
    except grpc.aio.AioRpcError as err:
        raise _grpc_error(err) from None
    console.print(
        f"imported into [bold]{corpus}[/bold]: {last.imported_nodes} nodes, {last.imported_edges} edges,"
        f" {last.linked_mentions} chunk mentions linked; graph: {last.entities} entities,"
        f" {last.relationships} relationships; generation {last.generation}, {last.elapsed_s:.1f}s"
    )


async def _import_graph(
    cfg: TriBridConfig, request: indexer_pb2.ImportGraphRequest
) -> indexer_pb2.IndexProgress:
    last = indexer_pb2.IndexProgress()
    async with tls.channel(
        cfg.services.address("indexer"), cfg.services, interceptors=auth.client_interceptors()
    ) as channel:
        stub = indexer_pb2_grpc.IndexerStub(channel)
        with Progress(
            TextColumn("{task.description}"), TimeElapsedColumn(), console=console, transient=True
        ) as bar:
            task = bar.add_task("importing", total=None)
            async for event in stub.ImportGraph(request):
                last = event
                bar.update(task, description=event.phase)
    return last


@graph_app.command("neighbors")
def graph_neighbors(
    entity: _EntityArgument,
    corpus: _CorpusOption,
    relationship_type: Annotated[
        str | None, typer.Option("--relationship-type", help="only this relationship type, e.g. CALLS")
    ] = None,
    direction: Annotated[EdgeDirection, typer.Option("--direction", help="which edges to follow")] = (
        EdgeDirection.both
    ),
    limit: Annotated[int, typer.Option("--limit", min=0, help="at most this many; 0 = the cap")] = 0,
    as_json: _JsonOption = False,
) -> None:
    """The entities one hop from an entity."""
    request = graph_pb2.NeighborsRequest(
        corpus_id=corpus,
        entity=graph_pb2.EntityRef(name=entity),
        relationship_type=relationship_type or "",
        direction=graph_pb2.EdgeDirection.Value(f"EDGE_DIRECTION_{direction.value.upper()}"),
        limit=limit,
    )
    reply = _graph_call(lambda stub: stub.Neighbors(request, timeout=_GRAPH_TIMEOUT_S))
    if as_json:
        _print_json(reply)
        return
    table = Table(
        "relationship", "direction", "type", "entity", "location", "edge", title=f"neighbours of {entity}"
    )
    for e in reply.entities:
        table.add_row(
            e.relationship_type,
            e.direction,
            e.type,
            e.qualified_name or e.name,
            _location(e.file_path, e.start_line, e.end_line),
            _edge_text(e.edge),
        )
    console.print(table)


@graph_app.command("path")
def graph_path(
    source: Annotated[str, typer.Argument(help="where the path starts: an id, qualified or plain name")],
    target: Annotated[str, typer.Argument(help="where it ends: an id, qualified or plain name")],
    corpus: _CorpusOption,
    max_hops: Annotated[int, typer.Option("--max-hops", min=0, help="1..4 (0 = 4)")] = 0,
    as_json: _JsonOption = False,
) -> None:
    """The shortest path between two entities."""
    request = graph_pb2.PathBetweenRequest(
        corpus_id=corpus,
        source=graph_pb2.EntityRef(name=source),
        target=graph_pb2.EntityRef(name=target),
        max_hops=max_hops,
    )
    reply = _graph_call(lambda stub: stub.PathBetween(request, timeout=_GRAPH_TIMEOUT_S))
    if as_json:
        _print_json(reply)
        return
    if not reply.found:
        console.print(f"no path from {source} to {target}" + (f" within {max_hops} hops" if max_hops else ""))
        return
    _print_path(reply, f"{source} -> {target}")


def _print_path(reply: graph_pb2.PathResponse, title: str) -> None:
    table = Table("#", "entity", "type", "location", "next edge", title=title)
    steps = list(reply.relationship_types)
    edges = list(reply.edges)
    for i, e in enumerate(reply.entities):
        edge = _edge_text(edges[i]) if i < len(edges) else ""
        table.add_row(
            str(i),
            e.qualified_name or e.name,
            e.type,
            _location(e.file_path, e.start_line, e.end_line),
            (steps[i] + (f" ({edge})" if edge else "")) if i < len(steps) else "",
        )
    console.print(table)


@graph_app.command("chunks")
def graph_chunks(
    entity: _EntityArgument,
    corpus: _CorpusOption,
    limit: Annotated[int, typer.Option("--limit", min=0, help="1..500 (0 = 50)")] = 0,
    as_json: _JsonOption = False,
) -> None:
    """The chunks of an entity: that mention a named entity (most first), or hold a definition."""
    request = graph_pb2.EntityChunksRequest(
        corpus_id=corpus, entity=graph_pb2.EntityRef(name=entity), limit=limit
    )
    reply = _graph_call(lambda stub: stub.EntityChunks(request, timeout=_GRAPH_TIMEOUT_S))
    if as_json:
        _print_json(reply)
        return
    table = Table("location", "symbol", "document", "section", "pages", "chunk", title=f"chunks of {entity}")
    for m in reply.matches:
        table.add_row(
            _location(m.file_path, m.start_line, m.end_line),
            m.symbol,
            m.document_title,
            m.section,
            _pages(m),
            m.chunk_id,
        )
    console.print(table)
    for m in reply.matches:
        if m.content:
            console.rule(_location(m.file_path, m.start_line, m.end_line))
            console.print(m.content, markup=False, highlight=False)


@graph_app.command("entity")
def graph_entity(
    entity: _EntityArgument,
    corpus: _CorpusOption,
    relation: Annotated[
        str | None, typer.Option("--relation", help="only this relationship type, e.g. related_to")
    ] = None,
    max_hops: Annotated[int, typer.Option("--max-hops", min=0, help="steps away, 1..3 (0 = 1)")] = 0,
    limit: Annotated[int, typer.Option("--limit", min=0, help="1..200 (0 = 20)")] = 0,
    as_json: _JsonOption = False,
) -> None:
    """An entity's relations: a named entity's RELATED_TO edges, a code entity's code edges."""
    request = graph_pb2.EntitySearchRequest(
        corpus_id=corpus,
        entity=graph_pb2.EntityRef(name=entity),
        relation=relation or "",
        max_hops=max_hops,
        limit=limit,
    )
    reply = _graph_call(lambda stub: stub.EntitySearch(request, timeout=_GRAPH_TIMEOUT_S))
    if as_json:
        _print_json(reply)
        return
    _print_entity_search(reply)


def _print_entity_search(reply: graph_pb2.EntitySearchResponse) -> None:
    title = f"{reply.entity.qualified_name or reply.entity.name}: {reply.total} relations"
    table = Table("hops", "from", "relation", "to", "edge", "what it is", title=title)
    for r in reply.relations:
        table.add_row(
            str(r.hops),
            r.source.qualified_name or r.source.name,
            r.relation,
            r.target.qualified_name or r.target.name,
            _edge_text(r.properties),
            r.description,
        )
    console.print(table)


@graph_app.command("chunk-entities")
def graph_chunk_entities(
    chunk_id: Annotated[str, typer.Argument(help="a chunk id (search results show them)")],
    corpus: _CorpusOption,
    as_json: _JsonOption = False,
) -> None:
    """The entities a chunk mentions, and the code entities defined in it."""
    request = graph_pb2.ChunkEntitiesRequest(corpus_id=corpus, chunk_id=chunk_id)
    reply = _graph_call(lambda stub: stub.ChunkEntities(request, timeout=_GRAPH_TIMEOUT_S))
    if as_json:
        _print_json(reply)
        return
    table = Table("how", "type", "entity", "mentions", title=f"entities of chunk {chunk_id}")
    for e in reply.mentions:
        table.add_row("mentions", e.type, e.name, str(e.edge.count))
    for e in reply.defined:
        table.add_row("defines", e.type, e.qualified_name, "")
    console.print(table)


def _cypher_parameter(text: str) -> tuple[str, Any]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise typer.BadParameter(f"{text!r}: write a parameter as name=value")
    try:
        return name, json.loads(value)
    except json.JSONDecodeError:
        return name, value  # not JSON: the text itself


@graph_app.command("cypher")
def graph_cypher(
    query: Annotated[str, typer.Argument(help="a read-only Cypher query; values as $parameters")],
    corpus: _CorpusOption,
    param: Annotated[
        list[str] | None,
        typer.Option("--param", help="name=value; the value is read as JSON, else as text (repeatable)"),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=0, help="at most this many rows (0 = the cap)")] = 0,
    as_json: _JsonOption = False,
) -> None:
    """A read-only Cypher query on a corpus's graph (operators; off unless graph.cypher_enabled)."""
    request = graph_pb2.CypherQueryRequest(corpus_id=corpus, query=query, limit=limit)
    request.parameters.update(dict(_cypher_parameter(p) for p in param or []))
    reply = _graph_call(lambda stub: stub.CypherQuery(request, timeout=_GRAPH_TIMEOUT_S))
    if as_json:
        _print_json(reply)
        return
    title = f"{len(reply.rows)} rows" + (" (truncated)" if reply.truncated else "")
    table = Table(*reply.columns, title=title)
    for row in reply.rows:
        table.add_row(*row.values)
    console.print(table)


@graph_app.command("stats")
def graph_stats(
    corpus: _CorpusOption,
    as_json: _JsonOption = False,
    top: Annotated[int, typer.Option("--top", help="most mentioned named entities to list (1..100)")] = 10,
) -> None:
    """Entity, relationship and community counts of a corpus's graph, and its most mentioned
    named entities."""
    request = graph_pb2.GraphStatsRequest(corpus_id=corpus, top_entities=top)
    reply = _graph_call(lambda stub: stub.Stats(request, timeout=_GRAPH_TIMEOUT_S))
    if as_json:
        _print_json(reply)
        return
    _print_stats(reply, corpus)


def _print_stats(reply: graph_pb2.GraphStatsResponse, corpus: str) -> None:
    table = Table("what", "count", title=f"graph of {corpus}")
    table.add_row("entities", str(reply.entities))
    for kind, count in sorted(reply.entities_by_type.items()):
        table.add_row(f"  {kind}", str(count))
    table.add_row("relationships", str(reply.relationships))
    for kind, count in sorted(reply.relationships_by_type.items()):
        table.add_row(f"  {kind}", str(count))
    table.add_row("communities", str(reply.communities))
    console.print(table)
    if reply.top_entities:
        top_table = Table("#", "entity", "aliases", "chunks", "what", title="most mentioned named entities")
        for rank, item in enumerate(reply.top_entities, start=1):
            top_table.add_row(
                str(rank),
                item.entity.name,
                ", ".join(item.entity.aliases),
                str(item.chunks),
                item.description,
            )
        console.print(top_table)


if __name__ == "__main__":
    app()
