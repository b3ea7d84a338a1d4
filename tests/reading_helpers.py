"""Short forms of `tribrid.question.read` for the reading tables: a question read over a corpus of
code (with its definition names) or of documents."""

from __future__ import annotations

from collections.abc import Collection

from tribrid.corpus_profile import CorpusProfile
from tribrid.question import Intent, QueryKind, read
from tribrid.question.reading import read_question


def corpus(code: bool = True, names: Collection[str] = frozenset()) -> CorpusProfile:
    """A corpus of ten chunks, all code or all prose, defining `names`."""
    return CorpusProfile(1, 10, 0 if code else 10, frozenset(names))


def intent_of(query: str, names: Collection[str] = frozenset()) -> Intent | None:
    """What the question asks for, read as the graph leg reads it (whatever the corpus holds)."""
    return read_question(query, frozenset(names)).intent


def kind_of(query: str, code_corpus: bool = True, names: Collection[str] = frozenset()) -> QueryKind:
    return read(query, corpus(code_corpus, names)).kind


def kind_and_intent(
    query: str, code_corpus: bool = True, names: Collection[str] = frozenset()
) -> tuple[QueryKind, Intent | None]:
    reading = read(query, corpus(code_corpus, names))
    return reading.kind, reading.structural_intent
