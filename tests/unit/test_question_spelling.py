"""Mistyped relation words (tribrid.question.spelling): one edit from one vocabulary word."""

from __future__ import annotations

import pytest

from tribrid.question.spelling import correct_spelling


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("any clases that inhert from Widget", "any classes that inherit from Widget"),
        ("whihc functions instanciate or call flush", "which functions instantiate or call flush"),
        ("funcs called by flush in its implmentation", "funcs called by flush in its implementation"),
        ("where is Widget subclased", "where is Widget subclassed"),
    ],
)
def test_a_word_one_edit_from_a_relation_word_is_read_as_it(typed: str, meant: str) -> None:
    assert correct_spelling(typed) == meant


@pytest.mark.parametrize(
    "typed",
    [
        "who calls inhert_all",  # a name written as code is never corrected
        "who calls inhertFrom",
        "which cells hold the total",  # too short to say which word was meant
        "where is there a parser",  # spelled right: not in the vocabulary, not one edit from it
        "derrivedd classes of Widget",  # two edits
    ],
)
def test_names_short_words_and_far_words_stay_as_typed(typed: str) -> None:
    assert correct_spelling(typed) == typed
