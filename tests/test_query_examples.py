"""The reading of questions by their nearest labelled examples (tribrid.query_examples) and the
examples themselves: written from the tuning data only, and reading wordings no rule was written
for. Rows are this file's own wordings."""

from __future__ import annotations

import pytest

from tribrid import query_examples
from tribrid.eval import lang_sets, unseen_sets
from tribrid.eval.question_examples import build
from tribrid.query_examples import NO_RELATION, load_examples, mask_names, nearest_reading
from tribrid.query_kind import detect_intent


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
    held_out = _wordings([lang_sets.REWORDED_SETS[name][1] for name in lang_sets.HELD_OUT]) - tuning
    structural = {e.text for e in shipped if e.reading != NO_RELATION}
    assert held_out and structural <= tuning and not held_out & structural
    assert {e.reading for e in shipped} == {"callers", "callees", "subclasses", NO_RELATION}


@pytest.mark.parametrize(
    ("question", "reading"),
    [
        ("which functions end up calling flush_buffers?", "callers"),
        ("what does `flush_buffers` call internally?", "callees"),
        ("list every class that inherits from BaseTransport", "subclasses"),
        ("Return the size of the terminal window.", NO_RELATION),
    ],
)
def test_a_question_reads_as_its_nearest_examples(question: str, reading: str) -> None:
    assert nearest_reading(question).reading == reading


@pytest.mark.parametrize(
    ("question", "intent"),
    [
        # no phrasing family and no relation cue reads these; their nearest examples agree
        ("When I execute `flush_buffers`, which other helpers does it use under the hood?", "callees"),
        ("any types in the tree below `BaseTransport`, all levels?", "subclasses"),
        ("flush_buffers: which helpers run under the hood when it runs?", "callees"),
    ],
)
def test_a_question_no_rule_reads_is_read_by_its_nearest_examples(
    question: str, intent: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert detect_intent(question) == intent
    monkeypatch.setattr(query_examples, "MIN_SIMILARITY_TO_READ", 1.1)  # no example is that close
    assert detect_intent(question) is None


@pytest.mark.parametrize(
    "question",
    [
        "how does parse_args work",  # a how-to question: its nearest examples would say callees
        "How can I write cookies from a child handler?",
        "Return the terminal size.",  # prose, not a question
        "which one is faster?",  # names nothing
    ],
)
def test_how_to_questions_prose_and_questions_naming_nothing_are_not_read_by_examples(question: str) -> None:
    assert detect_intent(question) is None
