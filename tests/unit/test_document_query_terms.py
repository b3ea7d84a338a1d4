"""What the document graph leg looks a question's names up by: its terms, and the names the query
recognizer finds (the indexer's recognizer, on the question)."""

from __future__ import annotations

from services.graph.documents import query_recognizer, query_terms
from tribrid.config import load_config
from tribrid.ner import EntityRecognizer


def test_query_terms() -> None:
    exact, prefix = query_terms("Where is the University of Texas at Austin?")
    assert exact == [
        "University",
        "Texas",
        "Austin",
        "University of Texas",
        "Texas at Austin",
        # the names' forms with an article (a display name can keep it)
        "the University",
        "the Texas",
        "the Austin",
        "the University of Texas",
        "the Texas at Austin",
    ]  # "University of Texas at Austin" is 5 words: more than MAX_NAME_WORDS
    assert prefix == ["University", "Texas", "Austin"]


def test_query_recognizer_names_what_the_indexer_would() -> None:
    recognize = query_recognizer(EntityRecognizer(load_config().entities))
    names = recognize("Did Roald Amundsen reach the South Pole before Robert Falcon Scott?")
    assert "Roald Amundsen" in names and "Robert Falcon Scott" in names
    assert recognize("how do I reset the password") == []
