"""Bearer tokens without a stack: the scope every RPC needs, the tokens file, and the auth config."""

from __future__ import annotations

import json
from pathlib import Path

import grpc
import pytest
from pydantic import ValidationError

from tribrid import auth
from tribrid.config import AuthConfig, TokenConfig
from tribrid.options import RequestError


def test_every_contract_rpc_has_a_scope() -> None:
    assert auth.RPC_SCOPES["/tribrid.v1.Fusion/Search"] == "search"
    assert auth.RPC_SCOPES["/tribrid.v1.GraphSearch/Neighbors"] == "search"
    assert auth.RPC_SCOPES["/tribrid.v1.Indexer/IndexCorpus"] == "index"
    assert auth.RPC_SCOPES["/tribrid.v1.Indexer/DeleteCorpus"] == "admin"
    assert auth.is_open("/grpc.health.v1.Health/Check")
    assert not auth.is_open("/tribrid.v1.Fusion/Search")


def test_tokens_file_adds_tokens(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    entry = {"name": "ci", "sha256": auth.hash_token("ci-token"), "scopes": ["index"], "corpora": ["a"]}
    path.write_text(json.dumps([entry]))
    table = auth.TokenTable(AuthConfig(enabled=True, tokens_file=path))
    caller = table.authenticate("Bearer ci-token")
    assert (caller.name, caller.has_scope("index"), caller.has_scope("admin")) == ("ci", True, False)
    assert caller.may_see("a") and not caller.may_see("b")
    with pytest.raises(RequestError) as refused:
        table.authenticate("Bearer ci-token2")
    assert refused.value.code == grpc.StatusCode.UNAUTHENTICATED


def test_config_stores_hashes_and_needs_tokens_when_enabled() -> None:
    with pytest.raises(ValidationError, match="sha256"):
        TokenConfig(name="x", sha256="plain-token", scopes=["search"])
    with pytest.raises(ValueError, match="no token"):
        auth.TokenTable(AuthConfig(enabled=True))
    assert not AuthConfig().enabled  # off by default: a loopback stack for trying things out
