"""`tribrid graph ...` as a user runs it: a subprocess calling the graph service of the stack."""

from __future__ import annotations

import json

from tests.e2e.test_cli import cli
from tests.stack import SAMPLE_CORPUS, Stack
from tribrid.v1 import indexer_pb2


async def graph(stack: Stack, *args: str) -> tuple[int, str, str]:
    return await cli(stack, "graph", *args, "--corpus", SAMPLE_CORPUS)


async def test_neighbors(stack: Stack, sample_corpus: indexer_pb2.IndexProgress) -> None:
    code, out, err = await graph(stack, "neighbors", "total_price", "--direction", "out", "--json")
    assert code == 0, err
    entities = json.loads(out)["entities"]
    assert {"shop.pricing.apply_tax", "shop.pricing.compute_discount"} <= {
        e["qualified_name"] for e in entities
    }
    assert {e["direction"] for e in entities} == {"out"}

    code, out, err = await graph(
        stack,
        "neighbors",
        "shop.pricing.apply_tax",
        "--direction",
        "in",
        "--relationship-type",
        "calls",
        "--json",
    )
    assert code == 0, err
    callers = json.loads(out)["entities"]
    assert "shop.cart.Cart.total_price" in {e["qualified_name"] for e in callers}
    assert {e["relationship_type"] for e in callers} == {"calls"}

    code, out, err = await graph(stack, "neighbors", "total_price", "--limit", "1", "--json")
    assert code == 0, err
    assert len(json.loads(out)["entities"]) == 1

    code, out, err = await graph(stack, "neighbors", "total_price", "--direction", "out")
    assert code == 0, err
    assert "shop.pricing.apply_tax" in out and "shop/pricing.py" in out  # the table


async def test_path(stack: Stack, sample_corpus: indexer_pb2.IndexProgress) -> None:
    code, out, err = await graph(stack, "path", "total_price", "apply_tax", "--json")
    assert code == 0, err
    path = json.loads(out)
    assert path["found"] is True
    assert [e["qualified_name"] for e in path["entities"]] == [
        "shop.cart.Cart.total_price",
        "shop.pricing.apply_tax",
    ]
    assert len(path["relationship_types"]) == 1 and len(path["edges"]) == 1

    code, out, err = await graph(
        stack, "path", "validate_card_number", "restock", "--max-hops", "2", "--json"
    )
    assert code == 0, err
    assert json.loads(out) == {"found": False, "entities": [], "relationship_types": [], "edges": []}

    code, out, err = await graph(stack, "path", "total_price", "apply_tax")
    assert code == 0, err
    assert "shop.cart.Cart.total_price" in out and "shop.pricing.apply_tax" in out


async def test_chunks(stack: Stack, sample_corpus: indexer_pb2.IndexProgress) -> None:
    code, out, err = await graph(stack, "chunks", "validate_card_number", "--json")
    assert code == 0, err
    (match,) = json.loads(out)["matches"]
    assert match["symbol"] == "shop.payment.validate_card_number"
    assert match["file_path"] == "shop/payment.py" and "def validate_card_number" in match["content"]

    code, out, err = await graph(stack, "chunks", "validate_card_number")
    assert code == 0, err
    assert "shop/payment.py" in out and "Luhn checksum" in out


async def test_stats(stack: Stack, sample_corpus: indexer_pb2.IndexProgress) -> None:
    code, out, err = await graph(stack, "stats", "--json")
    assert code == 0, err
    stats = json.loads(out)
    assert int(stats["entities"]) == sum(int(n) for n in stats["entities_by_type"].values()) > 0
    assert int(stats["relationships"]) > 0 and int(stats["entities_by_type"]["function"]) >= 4

    code, out, err = await graph(stack, "stats")
    assert code == 0, err
    assert "entities" in out and "relationships" in out and "communities" in out


async def test_errors_exit_non_zero_with_the_status(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress
) -> None:
    code, _out, err = await graph(stack, "neighbors", "no_such_entity_xyz")
    assert code == 1
    assert "NOT_FOUND" in err and "no_such_entity_xyz" in err
    code, _out, err = await graph(stack, "chunks", "charge")  # two classes define it
    assert code == 1
    assert "INVALID_ARGUMENT" in err and "shop.payment.CardGateway.charge" in err
    code, _out, err = await cli(stack, "graph", "stats", "--corpus", "no-such-corpus")
    assert code == 1 and "no-such-corpus" in err
    code, _out, err = await graph(stack, "neighbors", "total_price", "--direction", "sideways")
    assert code == 2  # typer refuses the choice
