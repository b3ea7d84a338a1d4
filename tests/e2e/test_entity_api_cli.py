"""The entity API through the CLI as a user runs it (a subprocess): `tribrid graph entity`,
`chunk-entities` and `cypher` on a document graph written straight into the stores."""

from __future__ import annotations

import json

from tests.e2e.test_cli import cli
from tests.integration.test_entity_api import doc_corpus
from tests.stack import Stack

__all__ = ["doc_corpus"]  # the fixture (a committed document corpus and its graph), used here


async def test_entity_search_in_the_cli(stack: Stack, doc_corpus: str) -> None:
    code, out, err = await cli(
        stack, "graph", "entity", "dell", "--corpus", doc_corpus, "--max-hops", "2", "--json"
    )
    assert code == 0, err
    reply = json.loads(out)
    assert reply["total"] == 3 and [r["target"]["name"] for r in reply["relations"]] == [
        "Michael Dell",
        "Texas",
        "Austin",
    ]
    code, out, err = await cli(stack, "graph", "entity", "dell", "--corpus", doc_corpus)
    assert code == 0, err
    assert "Dell Technologies: 3 relations" in out and "strength=0.8" in out and "co_mentioned" in out
    code, _out, err = await cli(stack, "graph", "entity", "dell", "--corpus", doc_corpus, "--max-hops", "4")
    assert code == 1 and "INVALID_ARGUMENT" in err and "max_hops: must be between 1 and 3" in err


async def test_chunk_entities_and_the_hatch_in_the_cli(stack: Stack, doc_corpus: str) -> None:
    code, out, err = await cli(stack, "graph", "chunk-entities", "c3", "--corpus", doc_corpus, "--json")
    assert code == 0, err
    assert [(e["name"], e["edge"]["count"]) for e in json.loads(out)["mentions"]] == [
        ("Dell Technologies", 3),
        ("Texas", 2),
        ("Austin", 1),
    ]
    code, _out, err = await cli(
        stack, "graph", "cypher", "MATCH (n) RETURN n LIMIT $n", "--corpus", doc_corpus, "--param", "n=1"
    )
    assert code == 1 and "FAILED_PRECONDITION" in err and "graph.cypher_enabled" in err
