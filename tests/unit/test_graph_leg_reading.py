"""How the graph leg reads a question: the direction and intent it asks for, and the terms its seeds
are looked up by."""

from __future__ import annotations

import pytest

from services.graph.search import seed_terms
from tests.reading_helpers import intent_of


@pytest.mark.parametrize(
    ("query", "direction"),
    [
        ("who calls checkout", "callers"),
        ("callers of checkout", "callers"),
        ("what uses compute_total?", "callers"),
        ("which functions call checkout", "callers"),
        ("where is checkout called", "callers"),
        ("what does checkout call", "callees"),
        ("checkout depends on", "callees"),
        ("callees of checkout", "callees"),
        ("checkout", None),
        ("how is the total computed", None),
    ],
)
def test_detect_direction(query: str, direction: str | None) -> None:
    assert intent_of(query) == direction


@pytest.mark.parametrize(
    ("query", "intent"),
    [
        ("methods of class Shop", "members"),
        ("what methods does Shop have", "members"),
        ("attributes of Shop", "members"),
        ("subclasses of Shop", "subclasses"),
        ("classes that inherit from Shop", "subclasses"),
        ("who extends Shop", "subclasses"),
        ("base classes of Shop", "bases"),
        ("what does Shop inherit from", "bases"),
        ("who calls checkout", "callers"),
        ("what does checkout call", "callees"),
        ("shop checkout total", None),
    ],
)
def test_detect_intent(query: str, intent: str | None) -> None:
    assert intent_of(query) == intent


def test_seed_terms_drop_question_words() -> None:
    assert seed_terms("who calls shop.cart.checkout") == ["shop.cart.checkout", "checkout"]
    # an opening imperative is not a name; the same word as the name asked about is
    assert seed_terms("find the usages of checkout") == ["checkout"]
    assert seed_terms("list usages of checkout") == ["checkout"]
    assert seed_terms("who calls list") == ["list"]
