"""The query classifier the graph leg and the gateway share."""

from __future__ import annotations

import pytest

from tribrid.query_kind import classify_query, is_code_like


@pytest.mark.parametrize(
    ("query", "kind"),
    [
        ("who calls make_context", "structural"),
        ("subclasses of BaseTransport", "structural"),
        ("functions that call format_line", "structural"),
        ("what methods does Context have", "structural"),
        ("parse_args", "identifier"),
        ("HTTPStatusError", "identifier"),
        ("Context.invoke", "identifier"),
        ("get_terminal_size()", "identifier"),
        ("batch", "identifier"),
        ("parse command line options and arguments", "natural"),
        ("Return the terminal size.", "natural"),
        ("how does parse_args handle defaults", "mixed"),
        ("?!", "natural"),
    ],
)
def test_classify_query(query: str, kind: str) -> None:
    assert classify_query(query) == kind


@pytest.mark.parametrize(
    ("word", "code"),
    [
        ("parse_args", True),
        ("parseArgs", True),
        ("HTTPServer", True),
        ("a.b", True),
        ("parse", False),
        ("Parse", False),
        ("_private", False),
        ("HTTP", False),
    ],
)
def test_is_code_like(word: str, code: bool) -> None:
    assert is_code_like(word) is code


@pytest.mark.parametrize(
    ("query", "on_code", "on_documents"),
    [
        ("who is a member of the council", "structural", "natural"),
        ("what does Alice use", "structural", "natural"),
        ("backups", "identifier", "natural"),  # a lone word in a manual is a word, not a name
        ("backup procedures for the cluster", "natural", "natural"),
        ("parse_args", "identifier", "identifier"),  # code-like tokens stay names
        ("how does parse_args work", "mixed", "mixed"),
    ],
)
def test_documents_have_no_code_structure_questions(query: str, on_code: str, on_documents: str) -> None:
    assert classify_query(query) == on_code
    assert classify_query(query, code_corpus=False) == on_documents
