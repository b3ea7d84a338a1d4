"""The names a question writes, what its "it" stands for, which part of a message is the question
(tribrid.question), and wordings no phrasing family reads. Rows are this
file's own wordings."""

from __future__ import annotations

import pytest

from tests.reading_helpers import intent_of
from tribrid.question.reading import read_question
from tribrid.question.words import asked_name, resolve_pronouns, written_names

# Written for a reading by relation cues (deleted in session 17): the learned reader, fit on none of
# them, reads most of them right.
READINGS: list[tuple[str, str]] = [
    # callers: the name is the object, or a noun says so
    ("Could somebody check what ends up calling `flush_buffers`?", "callers"),
    ("Is there code that still makes a call to LegacyWriter before we drop it?", "callers"),
    ("does anything call into parse_headers at all?", "callers"),
    ("which code executes parse_headers on startup?", "callers"),  # executing is calling
    ("when Router runs, which methods get executed from inside it?", "callees"),
    ("we need the fan-in for Session.send", "callers"),
    ("where do we instantiate RetryPolicy", "callers"),
    ("new instances of ConnectionPool: where?", "callers"),
    ("parse_headers invoked where", "callers"),
    ("which code paths end up reaching flush_buffers?", "callers"),
    ("what else calls into parse_headers? I am about to rename it", "callers"),
    # a name written in lower case, next to the relation word
    ("normalize invoked where", "callers"),
    ("where do tests create instances of the session?", "callers"),
    ("which routines lead into flush??", "callers"),
    # callees: the name (or "it") is the subject, the agent of a passive, or a noun says so
    ("Before I move `flush_buffers`, tell me which helpers it invokes.", "callees"),
    ("Is Session.send calling anything else?", "callees"),
    ("What does flush_buffers end up delegating to?", "callees"),
    ("fan out of parse_headers", "callees"),
    ("any outgoing edges from Session.send?", "callees"),
    ("show the helpers invoked from within flush_buffers", "callees"),
    ("does Session.send hit the network helpers or anything else?", "callees"),
    ("what does `flush_buffers` reach out to?", "callees"),
    ("normalize internal calls", "callees"),
    ("wat helpers does flush_buffers call inside it", "callees"),
    ("Which are the helpers that Session.send is calling inside of its implementation?", "callees"),
    # subclasses / bases
    ("Which types have `BaseTransport` as their parent?", "subclasses"),
    ("anyone know what specializes RetryPolicy?", "subclasses"),
    ("I want the whole hierarchy under BaseTransport", "subclasses"),
    ("Which classes are derived from `Widget`, directly or not?", "subclasses"),
    ("What is the superclass of HTTPTransport?", "bases"),
    ("HTTPTransport extends what exactly?", "bases"),
    ("Which classes are making the extension of the class BaseTransport?", "subclasses"),
]
MIN_READ_RIGHT = 0.75


def test_wordings_no_family_reads_are_read_by_the_learned_reader() -> None:
    read = [(query, relation, intent_of(query)) for query, relation in READINGS]
    assert sum(relation == reading for _, relation, reading in read) >= MIN_READ_RIGHT * len(READINGS), read


@pytest.mark.parametrize(
    "query",
    [
        "how do I call an API with a timeout?",  # no name
        "call_on_close",  # a name, not a question about calls
        "Register a `ShellComplete` subclass under the given name",  # a docstring: prose about code
        "Unwind the exit stack by calling its :meth:`__exit__` providing the exception information",
        "Return a new QueryParams instance, setting the value of a key",
        "What is the difference between BaseTransport and HTTPTransport?",  # no relation asked
    ],
)
def test_no_reading_without_a_name_a_relation_or_a_question(query: str) -> None:
    assert intent_of(query) is None


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ("normalize invoked where", "normalize"),
        ("where do tests create instances of the session?", "session"),
        ("the functions that cookies is calling", "cookies"),
        ("how do I call an API with a timeout?", None),  # an object with no preposition
        ("who calls parse_headers", None),  # written as a name: the graph leg seeds on it
    ],
)
def test_a_name_in_lower_case_is_the_word_beside_the_relation(query: str, name: str | None) -> None:
    assert asked_name(query) == name


def test_a_long_message_is_read_from_its_last_sentences() -> None:
    story = (
        "We are moving the retry logic into its own package, and the downstream services that embed"
        " this client will need a new release anyway, so nobody minds a breaking change this time."
        " Last time the callbacks were renamed it took a week to find every place that broke. "
    ) * 2
    question = "So before I touch it: which functions call parse_headers?"
    query = story + question
    assert len(query) > 300 and "downstream" in story  # a relation word the question does not ask
    assert read_question(query) == ("which functions call parse_headers?", "callers")


def test_a_long_message_is_read_in_its_last_sentences_only() -> None:
    # MAX_QUESTION_SENTENCES bounds the readings a message of many short sentences costs
    preface = "We spent the week on the release. " * 10
    question = "Which functions call parse_headers? "
    assert intent_of(preface + question + "It is old. " * 6 + "It is done") == "callers"  # 8th sentence
    assert intent_of(preface + question + "It is old. " * 7 + "It is done") is None  # its 9th


@pytest.mark.parametrize(
    ("query", "intent"),
    [
        # remarks after the question say why; their relation words are not the question's
        (
            "can you check who else invokes `X()`? Want to be sure nothing depends on the old value.",
            "callers",
        ),
        ("what does `X` call? Asking because the upstream team renamed things. Thanks!", "callees"),
        ("which functions call X? Ok. Ok. Ok. Ok. Ok. Ok. Ok. Thanks", "callers"),
        # a sentence that bids, says "it" or names something is no remark
        ("X -- who relies on it? list every caller", "callers"),
        ("Who is X? I need the subclasses of it.", "subclasses"),
    ],
)
def test_closing_remarks_after_the_question_are_not_read(query: str, intent: str | None) -> None:
    assert intent_of(query) == intent


def test_a_pronoun_in_the_question_stands_for_the_name_the_message_said_before() -> None:
    story = (
        "I'm trying to figure out why translateZ is so slow in production. The profiler flame graph"
        " is noisy and mostly shows time spent somewhere below it, in frames the Python and GitHub"
        " tooling cannot name, so the timings there tell me very little. "
    )
    question = "Could you list the functions that it calls from its body, so I know where to look?"
    assert len(story + question) > 300
    part, intent = read_question(story + question)
    assert intent == "callees"
    assert (
        part == "Could you list the functions that translateZ calls from its body, so I know where to look?"
    )


def test_a_word_in_quotes_is_a_name_wherever_it_stands() -> None:
    assert written_names("'Router' -- and its callers?") == ("'Router'",)
    assert written_names('"parse_args" then') == ('"parse_args"',)
    assert written_names("it's Router's job, isn't it") == ("Router",)


def test_a_pronoun_is_left_alone_when_the_message_names_nothing_before_it() -> None:
    assert resolve_pronouns("which functions call it?", "We spent the week on the release. ") == (
        "which functions call it?"
    )
    assert written_names("Before I open the PR, ask GitHub. Then `run_all` and Python.") == (
        "GitHub",
        "`run_all`",
        "Python",
    )


def test_i_e_and_e_g_neither_end_a_sentence_nor_name_anything() -> None:
    story = "We are dropping the legacy positional argument in the next major release. " * 5
    question = "What breaks if I change Address, i.e. which functions call it?"
    assert read_question(story + question) == (question, "callers")
    assert written_names("e.g. the one i.e. Address") == ("Address",)


@pytest.mark.parametrize(
    ("query", "intent"),
    [
        # the scene's verb is the asker's: the question is the main clause, its "it" the scene's name
        ("when I invoke flush_buffers, what does it call?", "callees"),
        ("when Router runs, which methods get executed from inside it?", "callees"),
        ("If Base is abstract, which classes implement it?", "subclasses"),
        ("When a request comes in, who calls handle_request?", "callers"),
    ],
)
def test_a_clause_that_sets_the_scene_is_not_the_question(query: str, intent: str) -> None:
    assert intent_of(query) == intent
