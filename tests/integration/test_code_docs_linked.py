"""A corpus of code and its documentation: a document chunk that names a definition MENTIONS it,
so the entity API reaches the docs from the code and the code from the docs."""

from __future__ import annotations

import pytest

from tests.stack import Stack, index_corpus
from tribrid.v1 import graph_pb2, graph_pb2_grpc

CORPUS = "code-and-docs"
CODE = '''class Cart:
    """A shopping cart."""

    def total_price(self) -> float:
        return sum(item.price for item in self.items)


def apply_discount(cart: Cart, percent: float) -> float:
    return cart.total_price() * (1 - percent / 100)
'''
DOCS = """# Using the cart

Add items, then call `Cart.total_price` to get what the customer owes.

## Discounts

A sale applies apply_discount() with a percentage; the price is rounded by the till.
"""


@pytest.fixture(scope="module")
async def corpus(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("code-docs") / "shop"
    (root / "docs").mkdir(parents=True)
    (root / "cart.py").write_text(CODE, encoding="utf-8")
    (root / "docs" / "usage.md").write_text(DOCS, encoding="utf-8")
    await index_corpus(stack, CORPUS, root)
    return CORPUS


async def test_the_docs_that_name_a_definition_are_among_its_chunks(stack: Stack, corpus: str) -> None:
    async with stack.channel("graph") as channel:
        stub = graph_pb2_grpc.GraphSearchStub(channel)
        total = await stub.EntityChunks(
            graph_pb2.EntityChunksRequest(
                corpus_id=corpus, entity=graph_pb2.EntityRef(name="Cart.total_price")
            )
        )
        discount = await stub.EntityChunks(
            graph_pb2.EntityChunksRequest(corpus_id=corpus, entity=graph_pb2.EntityRef(name="apply_discount"))
        )
        doc_chunk = next(m.chunk_id for m in total.matches if m.file_path == "docs/usage.md")
        named = await stub.ChunkEntities(graph_pb2.ChunkEntitiesRequest(corpus_id=corpus, chunk_id=doc_chunk))
    assert [m.file_path for m in total.matches] == ["cart.py", "docs/usage.md"]  # its own chunk first
    assert [m.file_path for m in discount.matches] == ["cart.py", "docs/usage.md"]
    assert "total_price" in {e.name for e in named.mentions}
    assert all(e.type == "function" for e in named.mentions if e.name in ("total_price", "apply_discount"))


async def test_expansion_from_a_code_chunk_reaches_the_docs_that_name_its_definitions(
    stack: Stack, corpus: str
) -> None:
    async with stack.channel("graph") as channel:
        stub = graph_pb2_grpc.GraphSearchStub(channel)
        total = await stub.EntityChunks(
            graph_pb2.EntityChunksRequest(
                corpus_id=corpus, entity=graph_pb2.EntityRef(name="Cart.total_price")
            )
        )
        code_chunk = next(m.chunk_id for m in total.matches if m.file_path == "cart.py")
        expanded = await stub.ExpandContext(
            graph_pb2.ExpandContextRequest(corpus_id=corpus, chunk_ids=[code_chunk], max_hops=1)
        )
    # the code graph's own expansion adds the caller's chunk (apply_discount calls total_price)
    docs = [m for m in expanded.matches if m.file_path == "docs/usage.md"]
    assert docs and all(m.expansion_hops == 1 for m in docs)
    assert list(docs[0].explain[0].graph.relationship_types) == ["defines", "mentions"]
