"""The bridge's MCP face: seven read-only tools over the same gRPC calls as the HTTP routes, served
over stdio (`tribrid mcp`) and over streamable HTTP at /mcp on the bridge (`HttpEndpoint`).

No retrieval logic lives here: a tool builds one request message, makes one call through the
bridge's `Backend` (whose channels forward the caller's bearer token), and answers the reply's
proto3 JSON as structured content plus a short text that cites where each result is: file and
lines for code; document title, section and pages for documents. A gRPC error is a tool error
with the API's message ("NOT_FOUND: corpus 'x' not found"), never a protocol error.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Annotated, Any, Literal, TypeVar

import grpc
from google.protobuf import json_format
from google.protobuf.message import Message
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field
from starlette.routing import Route

from services.bridge.backend import Backend, addresses_from_config
from services.bridge.contract import to_json
from tribrid import auth
from tribrid.config import TriBridConfig
from tribrid.legs import source_name
from tribrid.options import RequestError, set_option, spelling
from tribrid.v1 import (
    common_pb2,
    fusion_options_pb2,
    fusion_pb2,
    fusion_pb2_grpc,
    graph_pb2,
    graph_pb2_grpc,
    indexer_pb2,
    indexer_pb2_grpc,
)

PATH = "/mcp"
FUSION = fusion_pb2.DESCRIPTOR.services_by_name["Fusion"].full_name
GRAPH = graph_pb2.DESCRIPTOR.services_by_name["GraphSearch"].full_name
INDEXER = indexer_pb2.DESCRIPTOR.services_by_name["Indexer"].full_name
# A match's text shows this many lines of its chunk; the structured content has all of it.
EXCERPT_LINES = 30
INSTRUCTIONS = (
    "Search code and documents indexed in TriBridRAG. list_corpora names the corpora; search fuses"
    " dense, BM25 and graph retrieval; the graph_* tools, entity_chunks and chunk_entities explore the"
    " code graph (calls, imports, inheritance) and the named entities of documents."
)
_READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)

_Req = TypeVar("_Req", bound=Message)
_Reply = TypeVar("_Reply", bound=Message)
_Tool = TypeVar("_Tool", bound=Callable[..., Awaitable[CallToolResult]])

# Inputs, typed to the wire's ranges (a uint32 is never negative); the services check the rest
# (top_k against limits.max_top_k, max_hops, limits) and their messages come back as tool errors.
Corpus = Annotated[str, Field(description="the corpus id (list_corpora lists them)")]
Entity = Annotated[
    str,
    Field(
        description="an entity: its id, qualified name (shop.cart.Cart.total_price) or plain name"
        " (total_price, Cart.total_price, a named entity's name or alias, any case)"
    ),
]
OptionValue = str | bool | int | float | list[str]


def _uint32(description: str) -> object:
    return Field(ge=0, le=2**32 - 1, description=description)


class ApiError(Exception):
    """A request refused as the API refuses it: the text is "CODE: message"."""


class GrpcTools:
    """The tools' calls: one RPC each through `backend`, with the bridge's default deadline."""

    def __init__(self, backend: Backend, timeout_s: float | None) -> None:
        self.backend = backend
        self.timeout_s = timeout_s

    def _channel(self, service: str) -> grpc.aio.Channel:
        return self.backend.channel(self.backend.addresses[service])

    async def call(self, rpc: grpc.aio.UnaryUnaryMultiCallable[_Req, _Reply], request: _Req) -> _Reply:
        try:
            return await rpc(request, timeout=self.timeout_s, metadata=auth.outgoing_metadata())
        except grpc.aio.AioRpcError as err:
            raise ApiError(f"{err.code().name}: {err.details() or err.code().name}") from None

    def fusion(self) -> fusion_pb2_grpc.FusionAsyncStub:
        return fusion_pb2_grpc.FusionStub(self._channel(FUSION))

    def graph(self) -> graph_pb2_grpc.GraphSearchAsyncStub:
        return graph_pb2_grpc.GraphSearchStub(self._channel(GRAPH))

    def indexer(self) -> indexer_pb2_grpc.IndexerAsyncStub:
        return indexer_pb2_grpc.IndexerStub(self._channel(INDEXER))


def create_server(backend: Backend, timeout_s: float | None) -> MCPServer:
    """The MCP server with the seven tools, calling the services through `backend`."""
    server = MCPServer("tribrid", instructions=INSTRUCTIONS, log_level="WARNING")
    grpc_tools = GrpcTools(backend, timeout_s)

    def tool(description: str) -> Callable[[_Tool], _Tool]:
        def register(fn: _Tool) -> _Tool:
            @functools.wraps(fn)
            async def answer(*args: Any, **kwargs: Any) -> CallToolResult:
                try:
                    return await fn(*args, **kwargs)
                except ApiError as err:
                    # the API's words alone: a ToolError would come back as "Error executing tool ..."
                    return CallToolResult(content=[TextContent(type="text", text=str(err))], is_error=True)

            server.add_tool(answer, description=description, annotations=_READ_ONLY)
            return fn

        return register

    @tool("Search a corpus: fused vector, BM25 and graph results, each citing its file and lines.")
    async def search(
        query: Annotated[str, Field(description="what to look for, in words or identifiers")],
        corpus: Corpus,
        top_k: Annotated[
            int | None,
            Field(
                # any int32: the gateway's own check names the allowed range (1..max_top_k)
                ge=-(2**31),
                le=2**31 - 1,
                description="how many results, 1..limits.max_top_k (100); unset = fusion.final_k (10)",
            ),
        ] = None,
        options: Annotated[
            dict[str, OptionValue] | None,
            Field(
                description="request options as SECTION.FIELD: value, as `tribrid search -o` takes them:"
                ' {"fusion.method": "rrf", "vector.ef_search": 200, "fusion.legs.graph.enabled": false,'
                ' "graph.direction": "callers", "fusion.enable_expansion": true}'
            ),
        ] = None,
        path_glob: Annotated[
            str, Field(description="only files matching this glob, e.g. 'src/**/*.py' or 'docs/*.md'")
        ] = "",
        languages: Annotated[
            list[str] | None, Field(description="only these languages, e.g. ['python'] or ['markdown']")
        ] = None,
        page_token: Annotated[
            str, Field(description="the next page: next_page_token of the previous answer to the same call")
        ] = "",
    ) -> CallToolResult:
        request = common_pb2.SearchRequest(
            corpus_id=corpus,
            query=query,
            filters=common_pb2.SearchFilters(path_glob=path_glob, languages=languages or []),
            page_token=page_token,
        )
        if top_k is not None:
            request.top_k = top_k
        try:
            for name, value in (options or {}).items():
                set_option(request.options, f"{name}={_option_text(value)}")
        except RequestError as err:
            raise ApiError(f"{err.code.name}: {err.message}") from None
        reply = await grpc_tools.call(grpc_tools.fusion().Search, request)
        return _result(reply, render_search(query, corpus, reply))

    @tool("An entity's relations: a code entity's calls, imports and bases; a named entity's related ones.")
    async def graph_entity(
        corpus: Corpus,
        entity: Entity,
        relation: Annotated[
            str, Field(description="only this relation type, e.g. calls, related_to, co_mentioned")
        ] = "",
        max_hops: Annotated[int, _uint32("steps from the entity, 1..3; 0 = 1")] = 0,
        limit: Annotated[int, _uint32("at most this many relations, 1..200; 0 = 20")] = 0,
    ) -> CallToolResult:
        request = graph_pb2.EntitySearchRequest(
            corpus_id=corpus,
            entity=graph_pb2.EntityRef(name=entity),
            relation=relation,
            max_hops=max_hops,
            limit=limit,
        )
        reply = await grpc_tools.call(grpc_tools.graph().EntitySearch, request)
        return _result(reply, render_entity(reply))

    @tool("The entities one edge away from an entity, with the edge's type, direction and properties.")
    async def graph_neighbors(
        corpus: Corpus,
        entity: Entity,
        relationship_type: Annotated[
            str, Field(description="only this relationship type, e.g. CALLS, IMPORTS, INHERITS")
        ] = "",
        direction: Annotated[
            Literal["both", "out", "in"], Field(description="out: edges from the entity; in: edges to it")
        ] = "both",
        limit: Annotated[int, _uint32("at most this many; 0 = the configured cap")] = 0,
    ) -> CallToolResult:
        request = graph_pb2.NeighborsRequest(
            corpus_id=corpus,
            entity=graph_pb2.EntityRef(name=entity),
            relationship_type=relationship_type,
            direction=graph_pb2.EdgeDirection.Value(f"EDGE_DIRECTION_{direction.upper()}"),
            limit=limit,
        )
        reply = await grpc_tools.call(grpc_tools.graph().Neighbors, request)
        return _result(reply, render_neighbors(entity, reply))

    @tool("The shortest path between two entities in the graph, with each edge.")
    async def graph_path(
        corpus: Corpus,
        source: Annotated[str, Field(description="where the path starts: an entity (as for graph_entity)")],
        target: Annotated[str, Field(description="where it ends: an entity (as for graph_entity)")],
        max_hops: Annotated[int, _uint32("at most this many edges, 1..4; 0 = 4")] = 0,
    ) -> CallToolResult:
        request = graph_pb2.PathBetweenRequest(
            corpus_id=corpus,
            source=graph_pb2.EntityRef(name=source),
            target=graph_pb2.EntityRef(name=target),
            max_hops=max_hops,
        )
        reply = await grpc_tools.call(grpc_tools.graph().PathBetween, request)
        return _result(reply, render_path(source, target, reply))

    @tool("The chunks of an entity: that mention a named entity (most first), or that hold a definition.")
    async def entity_chunks(
        corpus: Corpus,
        entity: Entity,
        limit: Annotated[int, _uint32("at most this many chunks, 1..500; 0 = 50")] = 0,
    ) -> CallToolResult:
        request = graph_pb2.EntityChunksRequest(
            corpus_id=corpus, entity=graph_pb2.EntityRef(name=entity), limit=limit
        )
        reply = await grpc_tools.call(grpc_tools.graph().EntityChunks, request)
        lines = [f"{_count(len(reply.matches), 'chunk')} of {entity}"]
        lines += [_match_lines(rank, m) for rank, m in enumerate(reply.matches, start=1)]
        return _result(reply, "\n".join(lines))

    @tool("The named entities a chunk mentions (with counts) and the code entities defined in it.")
    async def chunk_entities(
        corpus: Corpus,
        chunk_id: Annotated[str, Field(description="a chunk id, as search and entity_chunks give them")],
    ) -> CallToolResult:
        request = graph_pb2.ChunkEntitiesRequest(corpus_id=corpus, chunk_id=chunk_id)
        reply = await grpc_tools.call(grpc_tools.graph().ChunkEntities, request)
        return _result(reply, render_chunk_entities(chunk_id, reply))

    @tool("The indexed corpora the caller may see, with their files, chunks and index generation.")
    async def list_corpora() -> CallToolResult:
        reply = await grpc_tools.call(grpc_tools.indexer().ListCorpora, indexer_pb2.ListCorporaRequest())
        return _result(reply, render_corpora(reply))

    return server


class HttpEndpoint:
    """The tools over streamable HTTP at PATH on the bridge: `route` goes in its routes and
    `running()` around its lifespan (the session manager's task group)."""

    def __init__(self, backend: Backend, timeout_s: float | None) -> None:
        server = create_server(backend, timeout_s)
        # Stateless: any bridge replica answers any request (no session to pin), and each request is
        # served in a task started from the request's own, so its tools run as the caller that
        # BearerAuth set (auth.CALLER) and forward that caller's token.
        # No Host/Origin allow-list: the bridge is reached under names it cannot know (a Service,
        # an ingress), and, as on its other routes, bearer tokens are what guard it.
        app = server.streamable_http_app(
            streamable_http_path=PATH,
            stateless_http=True,
            json_response=True,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self.route = Route(PATH, app)
        self.running: Callable[[], AbstractAsyncContextManager[None]] = server.session_manager.run


async def serve_stdio(cfg: TriBridConfig) -> None:
    """The tools over stdin/stdout until the client closes them (`tribrid mcp`): the services at
    their configured addresses, called with $TRIBRID_TOKEN (auth.client_interceptors)."""
    backend = Backend(addresses_from_config(cfg), cfg.services)
    try:
        await create_server(backend, cfg.fusion.default_deadline_ms / 1000).run_stdio_async()
    finally:
        await backend.close()


# --- results ------------------------------------------------------------------------------------


def _result(reply: Message, text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=to_json(reply))


def _count(n: int, one: str, many: str = "") -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def _option_text(value: OptionValue) -> str:
    """A JSON value as `-o SECTION.FIELD=VALUE` spells it: lists comma-separated, booleans in words."""
    if isinstance(value, list):
        return ",".join(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def cite(match: common_pb2.ChunkMatch) -> str:
    """Where a match is: file and lines, then a document's title, section and pages, or the name
    of the definition the chunk holds."""
    where = f"{match.file_path}:{match.start_line}-{match.end_line}"
    if not match.document_title and not match.section:
        what = match.symbol or match.kind
        return f"{where} {what}" if what else where
    # the section is the breadcrumb of headings, which starts with the title when the document has one
    heading = match.section or match.document_title
    if match.section and match.document_title and not match.section.startswith(match.document_title):
        heading = f"{match.document_title} > {match.section}"
    pages = ""
    if match.page_start:
        last = match.page_end if match.page_end > match.page_start else 0
        pages = f", pp. {match.page_start}-{last}" if last else f", p. {match.page_start}"
    return f'{where} "{heading}"{pages}'


def _match_lines(rank: int, match: common_pb2.ChunkMatch) -> str:
    ranks = ", ".join(f"{source_name(e.leg)} #{e.rank}" for e in match.explain if e.rank and not e.source)
    found = " (graph expansion)" if match.expanded else ""
    head = f"{rank}. {cite(match)}{found} · score {match.score:.4f}"
    head += f" · {ranks}" if ranks and not match.expanded else ""
    head += f" · chunk {match.chunk_id}"
    lines = match.content.splitlines()
    excerpt = [f"    {line}" for line in lines[:EXCERPT_LINES]]
    if len(lines) > EXCERPT_LINES:
        excerpt.append(f"    … {_count(len(lines) - EXCERPT_LINES, 'more line')}")
    return "\n".join([head, *excerpt])


def render_search(query: str, corpus: str, reply: fusion_pb2.FusionSearchResponse) -> str:
    method = spelling(fusion_options_pb2.FusionMethod.DESCRIPTOR, reply.fusion_method)
    found = _count(len(reply.matches), "result")
    head = f"{found} for {query!r} in {corpus} ({method} fusion, {reply.took_ms:.0f} ms)"
    if reply.partial:
        failed = [
            f"{source_name(r.leg)} {fusion_pb2.LegStatus.Name(r.status).removeprefix('LEG_STATUS_').lower()}"
            for r in reply.legs
            if r.status not in (fusion_pb2.LEG_STATUS_OK, fusion_pb2.LEG_STATUS_DISABLED)
        ]
        head += f"; partial: {', '.join(failed)}"
    more = (
        [f"more: call search again with page_token={reply.next_page_token!r}"]
        if reply.next_page_token
        else []
    )
    return "\n".join([head, *(_match_lines(rank, m) for rank, m in enumerate(reply.matches, start=1)), *more])


def _entity(e: graph_pb2.GraphEntity) -> str:
    where = f" {e.file_path}:{e.start_line}-{e.end_line}" if e.file_path else ""
    return f"{e.qualified_name or e.name} ({e.type}{where})"


def _edge(edge: common_pb2.EdgeProperties) -> str:
    parts = [f"count={edge.count}"] if edge.count else []
    parts += [f"strength={edge.strength:g}"] if edge.strength else []
    parts += [f"similarity={edge.similarity:g}"] if edge.similarity else []
    parts += [f"inferred, confidence={edge.confidence:.2f}"] if edge.inferred else []
    parts += [f"{k}={v}" for k, v in sorted(json_format.MessageToDict(edge.attributes).items())]
    return f" [{', '.join(parts)}]" if parts else ""


def _arrow(relation: str, direction: str) -> str:
    """An edge as seen from the entity the step starts at: "-calls->" out, "<-calls-" in."""
    return f"<-{relation}-" if direction == "in" else f"-{relation}->"


def render_entity(reply: graph_pb2.EntitySearchResponse) -> str:
    lines = [f"{_entity(reply.entity)}: {_count(reply.total, 'relation')}, {len(reply.relations)} shown"]
    for r in reply.relations:
        name = r.target.qualified_name or r.target.name
        lines.append(
            f"- hop {r.hops}: {r.source.qualified_name or r.source.name} {_arrow(r.relation, r.direction)}"
            f" {name}{_edge(r.properties)}: {r.description}"
        )
    return "\n".join(lines)


def render_neighbors(entity: str, reply: graph_pb2.EntitiesResponse) -> str:
    lines = [f"{_count(len(reply.entities), 'neighbour')} of {entity}"]
    lines += [
        f"- {entity} {_arrow(e.relationship_type, e.direction)} {_entity(e)}{_edge(e.edge)}"
        for e in reply.entities
    ]
    return "\n".join(lines)


def render_path(source: str, target: str, reply: graph_pb2.PathResponse) -> str:
    if not reply.found:
        return f"no path from {source} to {target}"
    lines = [
        f"path from {source} to {target}, {_count(len(reply.relationship_types), 'edge')}",
        _entity(reply.entities[0]),
    ]
    # no arrowheads: the reply names each edge's type, not which way the path walks it
    for kind, edge, entity in zip(reply.relationship_types, reply.edges, reply.entities[1:], strict=False):
        lines.append(f"  -{kind}- {_entity(entity)}{_edge(edge)}")
    return "\n".join(lines)


def render_chunk_entities(chunk_id: str, reply: graph_pb2.ChunkEntitiesResponse) -> str:
    mentions = _count(len(reply.mentions), "entity", "entities")
    lines = [f"chunk {chunk_id}: mentions {mentions}, defines {len(reply.defined)}"]
    lines += [f"- mentions {e.name} ({e.type}), {e.edge.count} times" for e in reply.mentions]
    lines += [f"- defines {_entity(e)}" for e in reply.defined]
    return "\n".join(lines)


def render_corpora(reply: indexer_pb2.ListCorporaResponse) -> str:
    lines = [_count(len(reply.corpora), "corpus", "corpora")]
    lines += [
        f"- {c.corpus_id}: {c.files} files, {c.chunks} chunks, generation {c.generation},"
        f" updated {c.updated_at}, from {c.root_path}"
        for c in reply.corpora
    ]
    return "\n".join(lines)
