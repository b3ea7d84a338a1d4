"""The operators' Cypher hatch without a store: which clauses write, the scope it needs, and the
CLI's query parameters."""

from __future__ import annotations

import pytest
import typer

from tribrid.auth import RPC_SCOPES
from tribrid.graphstore.cypher import FALKORDB, NEO4J, write_clause
from tribridctl.cli import _cypher_parameter


def test_write_clauses_are_named() -> None:
    procedures = FALKORDB.read_procedures
    assert write_clause("MATCH (n) DETACH DELETE n", procedures) == "the DETACH clause writes"
    assert write_clause("match (n) set n.x = 1", procedures) == "the SET clause writes"
    assert write_clause("LOAD  CSV FROM 'x' AS r RETURN r", procedures) == "the LOAD CSV clause writes"
    assert write_clause("CALL db.idx.fulltext.drop('Entity')", procedures) is not None
    assert write_clause("CALL apoc.create.node(['X'], {})", NEO4J.read_procedures) is not None
    # words in strings, comments, properties and parameters are not clauses
    read = "MATCH (n) WHERE n.name = 'CREATE me' AND n.set = $delete // MERGE\nRETURN n /* DROP */"
    assert write_clause(read, procedures) is None
    assert write_clause("CALL db.labels() YIELD label RETURN label", procedures) is None
    assert write_clause("CALL algo.pageRank('Entity', 'RELATED_TO')", procedures) is None


def test_the_hatch_needs_the_admin_scope() -> None:
    assert RPC_SCOPES["/tribrid.v1.GraphSearch/CypherQuery"] == "admin"
    assert RPC_SCOPES["/tribrid.v1.GraphSearch/EntitySearch"] == "search"


def test_cli_cypher_parameters_are_json_or_text() -> None:
    assert _cypher_parameter("n=10") == ("n", 10)
    assert _cypher_parameter('names=["Dell", "Texas"]') == ("names", ["Dell", "Texas"])
    assert _cypher_parameter("name=Dell Technologies") == ("name", "Dell Technologies")
    with pytest.raises(typer.BadParameter, match="name=value"):
        _cypher_parameter("oops")
