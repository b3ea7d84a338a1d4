"""The MCP server over the real stack, driven by the SDK's own client: over stdio (`tribrid mcp` as a
subprocess, pointed at the stack by TRIBRID_ variables) and over streamable HTTP at the bridge's
/mcp, open and with bearer tokens. Answers are checked against the services' own gRPC answers."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import httpx
import httpx2
import pytest
from google.protobuf import json_format
from google.protobuf.message import Message
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent

from services.bridge.mcp import PATH
from services.bridge.service import BridgeServer, start_bridge
from tests import REPO_ROOT
from tests.stack import SAMPLE_CORPUS, Stack, bridged_stack
from tribrid import auth
from tribrid.config import TokenConfig, TriBridConfig
from tribrid.options import set_option
from tribrid.server import RunningServer
from tribrid.v1 import common_pb2, fusion_pb2_grpc, graph_pb2, graph_pb2_grpc, indexer_pb2

TOOLS = {
    "search",
    "graph_entity",
    "graph_neighbors",
    "graph_path",
    "entity_chunks",
    "chunk_entities",
    "list_corpora",
}
TRIBRID = Path(sys.executable).parent / "tribrid"
QUERY = "validate the card number"
# name -> (token, scopes, corpora): a reader of the sample corpus, and a token without `search`
TOKENS: dict[str, tuple[str, list[str], list[str]]] = {
    "reader": ("mcp-reader-secret", ["search"], [SAMPLE_CORPUS]),
    "indexer": ("mcp-indexer-secret", ["index"], ["*"]),
}


def _addresses_env(servers: Mapping[str, RunningServer]) -> dict[str, str]:
    """The services' addresses as the config reads them from the environment."""
    return {
        f"TRIBRID_SERVICES__{name.upper()}_ADDRESS": f"127.0.0.1:{server.port}"
        for name, server in servers.items()
    }


@asynccontextmanager
async def stdio_session(env: dict[str, str], log: Path) -> AsyncIterator[ClientSession]:
    """`tribrid mcp` as an agent starts it, its stderr in `log`."""
    params = StdioServerParameters(command=str(TRIBRID), args=["mcp"], env=env, cwd=REPO_ROOT)
    with log.open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


@asynccontextmanager
async def http_session(url: str, token: str | None = None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def text(result: CallToolResult) -> str:
    assert len(result.content) == 1 and isinstance(result.content[0], TextContent)
    return result.content[0].text


async def answer(session: ClientSession, tool: str, **arguments: Any) -> tuple[dict[str, Any], str]:
    """A tool's structured content and text, which must not be an error."""
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, text(result)
    assert isinstance(result.structured_content, dict)
    return result.structured_content, text(result)


async def error(session: ClientSession, tool: str, **arguments: Any) -> str:
    """A tool's error text, which must be one."""
    result = await session.call_tool(tool, arguments)
    assert result.is_error, text(result)
    return text(result)


def as_json(reply: Message) -> dict[str, Any]:
    """A reply's proto3 JSON, as the tools answer it, less its timing (`tookMs`)."""
    return as_timeless(json_format.MessageToDict(reply, always_print_fields_with_no_presence=True))


def as_timeless(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k != "tookMs"}


async def grpc_search(stack: Stack, top_k: int, *options: str) -> list[str]:
    """The gateway's chunk ids for QUERY on the sample corpus, called directly."""
    request = common_pb2.SearchRequest(corpus_id=SAMPLE_CORPUS, query=QUERY, top_k=top_k)
    for option in options:
        set_option(request.options, option)
    async with stack.channel("fusion") as channel:
        reply = await fusion_pb2_grpc.FusionStub(channel).Search(request, timeout=30)
    return [m.chunk_id for m in reply.matches]


async def grpc_error(stack: Stack, method: str, request: Message) -> str:
    """The graph service's refusal of `request`, as the API words it: "CODE: details"."""
    async with stack.channel("graph") as channel:
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await getattr(graph_pb2_grpc.GraphSearchStub(channel), method)(request, timeout=30)
    return f"{refused.value.code().name}: {refused.value.details()}"


# --- stdio ----------------------------------------------------------------------------------------


async def test_stdio_lists_the_tools_and_searches_as_the_gateway(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress, tmp_path: Path
) -> None:
    async with stdio_session(_addresses_env(stack.servers), tmp_path / "mcp.log") as session:
        tools = (await session.list_tools()).tools
        assert {t.name for t in tools} == TOOLS
        for t in tools:
            assert t.description and t.annotations and t.annotations.read_only_hint
        search = next(t for t in tools if t.name == "search")
        assert {"query", "corpus", "top_k", "options"} <= set(search.input_schema["properties"])
        assert set(search.input_schema["required"]) == {"query", "corpus"}

        body, rendered = await answer(
            session, "search", query=QUERY, corpus=SAMPLE_CORPUS, top_k=5, options={"fusion.method": "rrf"}
        )
        corpora, listed = await answer(session, "list_corpora")
    ids = [m["chunkId"] for m in body["matches"]]
    assert ids == await grpc_search(stack, 5, "fusion.method=rrf")
    assert len(ids) == 5 and body["fusionMethod"] == "FUSION_METHOD_RRF"
    assert body["matches"][0]["symbol"] == "shop.payment.validate_card_number"
    # the text cites every match by file and lines, with its chunk id, in the same order
    lines = rendered.splitlines()
    assert lines[0].startswith(f"5 results for {QUERY!r} in {SAMPLE_CORPUS} (rrf fusion")
    heads = [line for line in lines if line[:2] in {f"{i}." for i in range(1, 6)}]
    for rank, (head, match) in enumerate(zip(heads, body["matches"], strict=True), start=1):
        assert head.startswith(f"{rank}. {match['filePath']}:{match['startLine']}-{match['endLine']}")
        assert head.endswith(f"chunk {match['chunkId']}")
    assert "shop/payment.py:4-14 shop.payment.validate_card_number" in heads[0]
    assert "    def validate_card_number(number: str) -> bool:" in lines  # the chunk's text
    assert SAMPLE_CORPUS in {c["corpusId"] for c in corpora["corpora"]}
    assert f"- {SAMPLE_CORPUS}: " in listed


async def test_stdio_errors_are_tool_errors_with_the_api_message(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress, tmp_path: Path
) -> None:
    unknown = graph_pb2.EntitySearchRequest(
        corpus_id=SAMPLE_CORPUS, entity=graph_pb2.EntityRef(name="no_such_xyz")
    )
    expected = await grpc_error(stack, "EntitySearch", unknown)
    assert expected.startswith("NOT_FOUND: ") and "no_such_xyz" in expected
    async with stdio_session(_addresses_env(stack.servers), tmp_path / "mcp.log") as session:
        too_many = await error(session, "search", query=QUERY, corpus=SAMPLE_CORPUS, top_k=1000)
        too_few = await error(session, "search", query=QUERY, corpus=SAMPLE_CORPUS, top_k=0)
        option = await error(
            session, "search", query=QUERY, corpus=SAMPLE_CORPUS, options={"vector.ef_search": 5000}
        )
        misspelt = await error(
            session, "search", query=QUERY, corpus=SAMPLE_CORPUS, options={"fusion.nope": 1}
        )
        no_corpus = await error(session, "search", query=QUERY, corpus="no-such-corpus")
        entity = await error(session, "graph_entity", corpus=SAMPLE_CORPUS, entity="no_such_xyz")
        # the server is still there after its errors
        await answer(session, "list_corpora")
    assert too_many == "INVALID_ARGUMENT: top_k must be between 1 and 100, got 1000"
    assert too_few == "INVALID_ARGUMENT: top_k must be between 1 and 100, got 0"  # the API's words
    assert option.startswith("INVALID_ARGUMENT: options.vector.ef_search: ") and "1000" in option
    assert misspelt.startswith("INVALID_ARGUMENT: option 'fusion.nope': no 'nope' here")
    assert no_corpus.startswith("NOT_FOUND: ") and "no-such-corpus" in no_corpus
    assert entity == expected


# --- streamable HTTP on the bridge ----------------------------------------------------------------


@pytest.fixture
async def bridge(stack: Stack, sample_corpus: indexer_pb2.IndexProgress) -> AsyncIterator[BridgeServer]:
    update = {f"{name}_address": f"127.0.0.1:{server.port}" for name, server in stack.servers.items()}
    cfg = stack.cfg.model_copy(update={"services": stack.cfg.services.model_copy(update=update)})
    server = await start_bridge(cfg, "127.0.0.1", 0)
    yield server
    await server.stop(0)


async def test_http_graph_tools_answer_as_grpc(stack: Stack, bridge: BridgeServer) -> None:
    async def direct(method: str, request: Message) -> dict[str, Any]:
        async with stack.channel("graph") as channel:
            return as_json(
                await getattr(graph_pb2_grpc.GraphSearchStub(channel), method)(request, timeout=30)
            )

    def ref(name: str) -> graph_pb2.EntityRef:
        return graph_pb2.EntityRef(name=name)

    async with http_session(f"http://127.0.0.1:{bridge.port}{PATH}") as session:
        assert {t.name for t in (await session.list_tools()).tools} == TOOLS
        neighbors, neighbors_text = await answer(
            session, "graph_neighbors", corpus=SAMPLE_CORPUS, entity="total_price", direction="out"
        )
        path, path_text = await answer(
            session, "graph_path", corpus=SAMPLE_CORPUS, source="total_price", target="apply_tax"
        )
        chunks, chunks_text = await answer(
            session, "entity_chunks", corpus=SAMPLE_CORPUS, entity="validate_card_number"
        )
        chunk_id = chunks["matches"][0]["chunkId"]
        entities, entities_text = await answer(
            session, "chunk_entities", corpus=SAMPLE_CORPUS, chunk_id=chunk_id
        )
        relations, relations_text = await answer(
            session, "graph_entity", corpus=SAMPLE_CORPUS, entity="validate_card_number"
        )
        ambiguous = await error(session, "entity_chunks", corpus=SAMPLE_CORPUS, entity="charge")

    out = graph_pb2.EDGE_DIRECTION_OUT
    assert neighbors == await direct(
        "Neighbors",
        graph_pb2.NeighborsRequest(corpus_id=SAMPLE_CORPUS, entity=ref("total_price"), direction=out),
    )
    assert {"shop.pricing.apply_tax", "shop.pricing.compute_discount"} <= {
        e["qualifiedName"] for e in neighbors["entities"]
    }
    assert "- total_price -calls-> shop.pricing.apply_tax (function shop/pricing.py:12-14)" in neighbors_text

    assert path == await direct(
        "PathBetween",
        graph_pb2.PathBetweenRequest(
            corpus_id=SAMPLE_CORPUS, source=ref("total_price"), target=ref("apply_tax")
        ),
    )
    assert path["found"] and path["entities"][-1]["qualifiedName"] == "shop.pricing.apply_tax"
    assert path_text.splitlines()[1].startswith("shop.cart.Cart.total_price (")
    assert path_text.splitlines()[-1] == "  -calls- shop.pricing.apply_tax (function shop/pricing.py:12-14)"

    assert as_timeless(chunks) == await direct(
        "EntityChunks",
        graph_pb2.EntityChunksRequest(corpus_id=SAMPLE_CORPUS, entity=ref("validate_card_number")),
    )
    assert [m["symbol"] for m in chunks["matches"]] == ["shop.payment.validate_card_number"]
    assert "1. shop/payment.py:4-14 shop.payment.validate_card_number" in chunks_text

    assert entities == await direct(
        "ChunkEntities", graph_pb2.ChunkEntitiesRequest(corpus_id=SAMPLE_CORPUS, chunk_id=chunk_id)
    )
    assert "- defines shop.payment.validate_card_number (function shop/payment.py:4-14)" in entities_text

    assert relations == await direct(
        "EntitySearch",
        graph_pb2.EntitySearchRequest(corpus_id=SAMPLE_CORPUS, entity=ref("validate_card_number")),
    )
    callers = {r["target"]["qualifiedName"] for r in relations["relations"] if r["relation"] == "calls"}
    assert "shop.payment.CardGateway.charge" in callers
    assert "<-calls- shop.payment.CardGateway.charge" in relations_text

    assert ambiguous.startswith("INVALID_ARGUMENT: ") and "is ambiguous" in ambiguous
    assert (
        "shop.payment.CardGateway.charge" in ambiguous and "shop.payment.PaymentGateway.charge" in ambiguous
    )


async def test_http_search_is_the_gateways(stack: Stack, bridge: BridgeServer) -> None:
    async with http_session(f"http://127.0.0.1:{bridge.port}{PATH}") as session:
        body, _ = await answer(
            session,
            "search",
            query=QUERY,
            corpus=SAMPLE_CORPUS,
            top_k=3,
            options={"fusion.legs.graph.enabled": False, "fusion.max_chunks_per_file": 1},
        )
    ids = [m["chunkId"] for m in body["matches"]]
    assert ids == await grpc_search(
        stack, 3, "fusion.legs.graph.enabled=false", "fusion.max_chunks_per_file=1"
    )
    assert len({m["filePath"] for m in body["matches"]}) == len(ids)


async def test_http_search_filters_and_pages(stack: Stack, bridge: BridgeServer) -> None:
    async with http_session(f"http://127.0.0.1:{bridge.port}{PATH}") as session:
        python_only, _ = await answer(
            session, "search", query=QUERY, corpus=SAMPLE_CORPUS, top_k=10, path_glob="shop/*.py"
        )
        first, text = await answer(session, "search", query=QUERY, corpus=SAMPLE_CORPUS, top_k=3)
        second, _ = await answer(
            session, "search", query=QUERY, corpus=SAMPLE_CORPUS, top_k=3, page_token=first["nextPageToken"]
        )
        whole, _ = await answer(session, "search", query=QUERY, corpus=SAMPLE_CORPUS, top_k=6)
    assert python_only["matches"] and all(
        m["filePath"].startswith("shop/") and m["filePath"].endswith(".py") for m in python_only["matches"]
    )
    assert f"page_token={first['nextPageToken']!r}" in text
    paged = [m["chunkId"] for m in first["matches"] + second["matches"]]
    assert paged == [m["chunkId"] for m in whole["matches"]]


# --- bearer tokens --------------------------------------------------------------------------------


@dataclass
class AuthBridge:
    cfg: TriBridConfig
    servers: dict[str, RunningServer]
    url: str


@pytest.fixture(scope="module")
async def auth_bridge(
    config: TriBridConfig, sample_corpus: indexer_pb2.IndexProgress
) -> AsyncIterator[AuthBridge]:
    """The services and the bridge with auth on, over the session's stores and sample corpus."""
    tokens = [
        TokenConfig(name=name, sha256=auth.hash_token(token), scopes=scopes, corpora=corpora)  # type: ignore[arg-type]
        for name, (token, scopes, corpora) in TOKENS.items()
    ]
    async with bridged_stack(config, tokens) as bridged:
        yield AuthBridge(bridged.cfg, bridged.servers, f"{bridged.base}{PATH}")


async def test_http_without_a_token_is_401(auth_bridge: AuthBridge) -> None:
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    headers = {"Accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient(timeout=30) as http:
        missing = await http.post(auth_bridge.url, json=initialize, headers=headers)
        wrong = await http.post(
            auth_bridge.url, json=initialize, headers={**headers, "Authorization": "Bearer x"}
        )
    for reply in (missing, wrong):
        assert reply.status_code == 401, reply.text
        assert reply.json()["code"] == "UNAUTHENTICATED" and reply.headers["www-authenticate"] == "Bearer"


async def test_http_tools_act_as_the_callers_token(auth_bridge: AuthBridge) -> None:
    async with http_session(auth_bridge.url, TOKENS["reader"][0]) as reader:
        corpora, _ = await answer(reader, "list_corpora")
        found, _ = await answer(reader, "search", query=QUERY, corpus=SAMPLE_CORPUS, top_k=3)
        other = await error(reader, "search", query=QUERY, corpus="mcp-other")
    assert [c["corpusId"] for c in corpora["corpora"]] == [SAMPLE_CORPUS]  # the token's corpora only
    assert found["matches"][0]["symbol"] == "shop.payment.validate_card_number"
    assert other == "PERMISSION_DENIED: token 'reader' may not use corpus 'mcp-other'"

    # two callers at once, each with its own token: each request is served as its own caller
    async with (
        http_session(auth_bridge.url, TOKENS["reader"][0]) as reader,
        http_session(auth_bridge.url, TOKENS["indexer"][0]) as indexer,
    ):
        listed, refused = await asyncio.gather(
            answer(reader, "list_corpora"), error(indexer, "search", query=QUERY, corpus=SAMPLE_CORPUS)
        )
    assert [c["corpusId"] for c in listed[0]["corpora"]] == [SAMPLE_CORPUS]
    assert (
        refused
        == "PERMISSION_DENIED: token 'indexer' lacks the 'search' scope /tribrid.v1.Fusion/Search needs"
    )


async def test_stdio_sends_the_token_from_the_environment(auth_bridge: AuthBridge, tmp_path: Path) -> None:
    env = _addresses_env(auth_bridge.servers)
    async with stdio_session(
        {**env, auth.TOKEN_ENV: TOKENS["reader"][0]}, tmp_path / "reader.log"
    ) as session:
        corpora, _ = await answer(session, "list_corpora")
    assert [c["corpusId"] for c in corpora["corpora"]] == [SAMPLE_CORPUS]
    async with stdio_session(env, tmp_path / "anonymous.log") as session:
        refused = await error(session, "list_corpora")
    assert refused.startswith("UNAUTHENTICATED: no bearer token")
