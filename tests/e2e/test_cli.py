"""The CLI as a user runs it: a subprocess talking to the running services."""

from __future__ import annotations

import asyncio
import json
import os
import sys

from tests import REPO_ROOT
from tests.stack import SAMPLE_CORPUS, Stack
from tribrid.v1 import indexer_pb2


async def cli(stack: Stack, *args: str) -> tuple[int, str, str]:
    env = {
        **os.environ,
        "TRIBRID_STATE_DIR": str(stack.cfg.state_dir),
        "TRIBRID_POSTGRES__PORT": str(stack.cfg.postgres.port),
        "TRIBRID_POSTGRES__DATABASE": stack.cfg.postgres.database,
        "TRIBRID_GRAPH_STORE__FALKORDB_PORT": str(stack.cfg.graph_store.falkordb_port),
        "TRIBRID_GRAPH_STORE__GRAPH_PREFIX": stack.cfg.graph_store.graph_prefix,
        **{
            f"TRIBRID_SERVICES__{name.upper()}_PORT": str(server.port)
            for name, server in stack.servers.items()
        },
        "COLUMNS": "200",
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tribridctl.cli",
        *args,
        cwd=REPO_ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=120)
    return process.returncode or 0, out.decode(), err.decode()


async def test_search_json_and_table(stack: Stack, sample_corpus: indexer_pb2.IndexProgress) -> None:
    code, out, err = await cli(stack, "search", "validate_card_number", "--corpus", SAMPLE_CORPUS, "--json")
    assert code == 0, err
    reply = json.loads(out)
    assert reply["matches"][0]["symbol"] == "shop.payment.validate_card_number"
    assert {leg["status"] for leg in reply["legs"]} == {"LEG_STATUS_OK"}
    code, out, err = await cli(
        stack, "search", "who calls checkout", "--corpus", SAMPLE_CORPUS, "--top-k", "3"
    )
    assert code == 0, err
    assert "vector=OK" in out and "sparse=OK" in out and "graph=OK" in out
    assert "shop.cart" in out or "shop." in out
    assert "read as: structural (callers); weights vector=0.05 sparse=0.10 graph=0.85" in out


async def test_explain_query_shows_how_a_question_is_read(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress
) -> None:
    for question, reading in [
        ("what does checkout call", "structural (callees)"),
        ("subclasses of PaymentGateway", "structural (subclasses)"),
        ("validate_card_number", "identifier;"),
        ("charge the card and apply the tax", "natural;"),
    ]:
        code, out, err = await cli(stack, "explain-query", question, "--corpus", SAMPLE_CORPUS)
        assert code == 0, err
        assert f"read as: {reading}" in out, out


async def test_bad_search_exits_non_zero_with_the_reason(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress
) -> None:
    code, _out, err = await cli(stack, "search", "cart", "--corpus", "no-such-corpus")
    assert code != 0
    assert "NOT_FOUND" in err and "corpus 'no-such-corpus' not found" in err
