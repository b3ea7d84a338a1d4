"""Documentation chunks linked to the definitions they name (no stores)."""

from __future__ import annotations

from services.indexer.code_mentions import code_mentions, surface_forms
from tribrid.models import Entity


def definition(entity_id: str, kind: str, qualified_name: str) -> Entity:
    name = qualified_name.rsplit(".", 1)[-1]
    return Entity(entity_id, "c", kind, name, qualified_name, "shop/cart.py", 1, 9, f"chunk-{entity_id}")


DEFINITIONS = [
    definition("cart", "class", "shop.cart.Cart"),
    definition("total", "function", "shop.cart.Cart.total_price"),
    definition("get-a", "function", "shop.cart.Cart.get"),
    definition("get-b", "function", "shop.store.Store.get"),
    definition("base", "class", "shop.base.BaseCommand"),
    definition("mod", "module", "shop.cart"),
]


def test_prose_names_a_definition_by_its_dotted_tail_its_call_or_a_name_no_word_has() -> None:
    assert surface_forms(DEFINITIONS[1]) == {
        "Cart.total_price",
        "Cart.total_price()",
        "shop.total_price",  # the package's re-export
        "shop.total_price()",
        "total_price()",
        "`total_price`",
        "total_price",
        "autofunction:: total_price",  # Sphinx autodoc's directives
        "automethod:: total_price",
        "autodecorator:: total_price",
    }
    # "Cart" alone is a word; in a code span or an autodoc directive it is code
    assert surface_forms(DEFINITIONS[0]) == {
        "cart.Cart",
        "cart.Cart()",
        "shop.Cart",
        "shop.Cart()",
        "`Cart`",
        "autoclass:: Cart",
        "autoexception:: Cart",
    }
    assert "BaseCommand" in surface_forms(DEFINITIONS[4])


def test_a_document_chunk_mentions_the_definitions_it_names_and_no_ambiguous_one() -> None:
    texts = {
        "doc-1": "Call `Cart.total_price` after adding items; total_price() rounds. Subclass BaseCommand.",
        "doc-2": "Use get() to read a value.",  # get(): two definitions, so neither
        "doc-3": "The context of the cart; see :class:`Cart` and shop.Cart.",  # plain words name nothing
    }
    found = {(r.source_id, r.target_id, r.count) for r in code_mentions(DEFINITIONS, texts, {})}
    assert found == {("doc-1", "total", 2), ("doc-1", "base", 1), ("doc-3", "cart", 2)}


def test_code_is_named_as_it_is_written() -> None:
    texts = {
        "doc-1": "Subclass BaseCommand to add one.",
        "doc-2": "A basecommand, or a Basecommand: prose, not the class.",
        "doc-3": "Call TOTAL_PRICE or `Total_Price`.",
    }
    found = {(r.source_id, r.target_id) for r in code_mentions(DEFINITIONS, texts, {})}
    assert found == {("doc-1", "base")}


def test_an_autodoc_directive_names_a_definition_by_its_bare_name() -> None:
    texts = {
        "api": ".. autoclass:: Cart\n   :noindex:\n\n.. autofunction::   total_price",
        "prose": "The cart holds a total price.",
    }
    found = {(r.source_id, r.target_id) for r in code_mentions(DEFINITIONS, texts, {})}
    assert found == {("api", "cart"), ("api", "total")}


def test_a_class_directive_with_members_names_the_class_not_each_method() -> None:
    # a chunk linked to every method would be a hub for any question about one of them
    texts = {"api": "Cart\n----\n\n.. autoclass:: Cart\n   :members:\n"}
    found = {(r.source_id, r.target_id) for r in code_mentions(DEFINITIONS, texts, {})}
    assert found == {("api", "cart")}


def test_an_autodoc_variable_is_named_by_its_directive_alone() -> None:
    definitions = [*DEFINITIONS, definition("unit", "variable", "shop.cart.UNIT")]
    texts = {"api": ".. autodata:: UNIT", "prose": "The `UNIT` and UNIT of a cart."}
    found = {(r.source_id, r.target_id) for r in code_mentions(definitions, texts, {})}
    assert found == {("api", "unit")}


def test_documentation_names_a_function_by_a_keyword_parameter_only_it_declares() -> None:
    definitions = [
        *DEFINITIONS,
        definition("init", "function", "shop.cart.Cart.__init__"),
        definition("checkout", "function", "shop.cart.checkout"),
        definition("private", "function", "shop._impl.checkout"),
    ]
    keywords = {
        "init": ("currency", "max_items", "get"),
        "checkout": ("currency", "gift_wrap"),
        "private": ("gift_wrap", "express"),
    }
    texts = {
        # `max_items=` and ``max_items`` and the bare max_items: the constructor, that no prose names
        "example": "cart = Cart(max_items=3)\nThe ``max_items`` limit; max_items counts lines.",
        "shared": "Pass currency='EUR'.",  # two public functions declare it: neither
        "public": "Call with gift_wrap=True or express=True.",  # the public one; express: private
        "word": "A get request, or `get`.",  # `get` is a definition's form (ambiguous): never the keyword's
    }
    found = {(r.source_id, r.target_id, r.count) for r in code_mentions(definitions, texts, keywords)}
    assert found == {
        ("example", "init", 3),
        ("public", "checkout", 1),
        ("public", "private", 1),
    }


def test_a_form_shared_with_private_definitions_names_the_public_one() -> None:
    definitions = [
        definition("pub", "function", "shop.terminal.getchar"),
        definition("priv-1", "function", "shop._terminal_impl.getchar"),
        definition("priv-2", "function", "shop._terminal_impl._Win.getchar"),
        definition("get-a", "function", "shop.cart.Cart.get"),
        definition("get-b", "function", "shop.store.Store.get"),
        definition("init", "function", "shop.cart.Cart.__init__"),
    ]
    texts = {
        "doc-1": "Read a key with :func:`getchar`, re-exported as shop.getchar().",
        "doc-2": "Use get() to read a value.",  # two public definitions: still neither
        "doc-3": "See Cart.__init__ for the arguments.",  # a dunder is public
    }
    found = {(r.source_id, r.target_id, r.count) for r in code_mentions(definitions, texts, {})}
    assert found == {("doc-1", "pub", 2), ("doc-3", "init", 1)}
