"""The learned reading of questions (tribrid.question.learned) and its examples: written from the
tuning data only, and reading question banks it was not fit on better than the phrasing families.
Rows are this file's own wordings."""

from __future__ import annotations

from collections.abc import Iterator
from typing import get_args

import pytest

from evaluation import lang_sets, unseen_sets
from evaluation.question_examples import QUESTION_BANKS, bank, build, load_examples
from evaluation.reader_model import fit
from tests.reading_helpers import intent_of
from tribrid.question import Intent, learned
from tribrid.question.learned import NO_RELATION, mask_names, probabilities
from tribrid.question.reading import read_by_families


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("who calls `flush_buffers`?", "who calls foo?"),
        ("'Router' -- and what descends from it?", "foo -- and what descends from it?"),
        ('callers of "Session.send()" pls', "callers of foo pls"),
        ("WidgetFactory child classes", "foo child classes"),
        ("is parse_args slow? parse_args_fast is not", "is foo slow? foo is not"),
        ("how do I serve static files", "how do I serve static files"),
    ],
)
def test_the_names_a_question_writes_are_masked(text: str, masked: str) -> None:
    assert mask_names(text) == masked


def _wordings(tables: list[dict[str, tuple[tuple[str, str], ...]]]) -> set[str]:
    return {mask_names(w.format(x="WidgetFactory")) for t in tables for ws in t.values() for _, w in ws}


def test_the_examples_shipped_are_the_tuning_data_and_hold_no_held_out_wording() -> None:
    shipped = load_examples()
    assert [(e.text, e.reading) for e in shipped] == [(e.text, e.reading) for e in build()]
    held_out_names = set(unseen_sets.HELD_OUT) | set(lang_sets.HELD_OUT)
    tuning = _wordings(
        [unseen_sets.PHRASINGS, lang_sets.EXTRA_PHRASINGS]
        + [t for name, t in unseen_sets.REWORDED_TABLES.items() if name not in held_out_names]
    )
    banks = {mask_names(row.text.format(x="WidgetFactory")) for name in QUESTION_BANKS for row in bank(name)}
    held_out = _wordings([lang_sets.REWORDED_SETS[name][1] for name in lang_sets.HELD_OUT]) - tuning - banks
    structural = {e.text for e in shipped if e.reading != NO_RELATION}
    assert held_out and structural <= tuning | banks and not held_out & structural
    assert {e.reading for e in shipped} == {*get_args(Intent), NO_RELATION}


def _read_right(rows: list[tuple[str, str]], read: list[str]) -> float:
    return sum(reading == label for (_, label), reading in zip(rows, read, strict=True)) / len(rows)


@pytest.fixture
def fit_without_chatty() -> Iterator[list[tuple[str, str]]]:
    """The learned reader fit without the "chatty" bank, and that bank's rows (names filled in)."""
    learned.load(fit(build(tuple(name for name in QUESTION_BANKS if name != "chatty"))))
    yield [(row.text.format(x="flush_buffers"), row.reading) for row in bank("chatty")]
    learned.load()


def test_a_bank_the_reader_was_not_fit_on_is_read_better_than_by_the_families_alone(
    fit_without_chatty: list[tuple[str, str]],
) -> None:
    rows = fit_without_chatty
    by_families = [read_by_families(text).intent or NO_RELATION for text, _ in rows]
    by_reader = [intent_of(text) or NO_RELATION for text, _ in rows]
    assert _read_right(rows, by_reader) >= _read_right(rows, by_families) + 0.1
    asking_none = [i for i, (_, label) in enumerate(rows) if label == NO_RELATION]
    assert sum(by_reader[i] != NO_RELATION for i in asking_none) <= 0.05 * len(asking_none)


def test_the_probabilities_cover_every_relation_and_sum_to_one() -> None:
    probability = probabilities("which functions end up calling flush_buffers?")
    assert set(probability) == {*get_args(Intent), NO_RELATION}
    assert sum(probability.values()) == pytest.approx(1.0)
    assert max(probability, key=probability.__getitem__) == "callers"


@pytest.mark.parametrize(
    ("question", "intent"),
    [
        # no phrasing family reads these
        ("When I execute `flush_buffers`, which other helpers does it use under the hood?", "callees"),
        ("welche Klassen leiten von BaseTransport ab?", "subclasses"),
        ("flush_buffers: which helpers run under the hood when it runs?", "callees"),
    ],
)
def test_a_question_no_family_reads_is_read_by_the_learned_reader(question: str, intent: str) -> None:
    assert read_by_families(question).intent is None
    assert intent_of(question) == intent


@pytest.mark.parametrize(
    "question",
    [
        "how do I call flush_buffers with a timeout?",  # a relation word in another sense
        "why does flush_buffers get called twice per request?",
        "How can I write cookies from a child handler?",
        "Return the terminal size.",  # prose, not a question
        "which one is faster?",  # names nothing
    ],
)
def test_how_to_questions_prose_and_questions_naming_nothing_are_not_structural(question: str) -> None:
    assert intent_of(question) is None


@pytest.mark.parametrize(
    ("question", "family_reading"),
    [
        ("users of flush_buffers keep reporting a deadlock, any idea why?", "callers"),
        ("what does Router use for TLS?", "callees"),
    ],
)
def test_a_family_reading_the_learned_reader_finds_unlikely_is_overruled(
    question: str, family_reading: str
) -> None:
    assert read_by_families(question).intent == family_reading
    assert intent_of(question) is None
