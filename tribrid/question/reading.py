"""The entry point of question reading: `read(question, corpus)`, what kind of query a question is
and which relation of code it asks for. The gateway reads each question once and sends the reading
to the graph leg; the leg reads a question itself only when called without one.

- structural: asks about code structure ("who calls X", "subclasses of Y", "methods of Z");
- identifier: names code and little else ("parse_args", "HTTPStatusError", "Context.invoke");
- natural: prose with no code-like token ("parse command line options");
- mixed: prose that names code ("how does parse_args handle defaults").

The relation is read by the phrasing families (`tribrid.question.families`), checked and completed
by the learned reader (`tribrid.question.learned`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass
from typing import NamedTuple, get_args

from tribrid.config import QueryKindName
from tribrid.corpus_profile import CorpusProfile
from tribrid.question import learned
from tribrid.question.families import (
    IMPORT_VERB,
    QUOTED,
    VOCABULARY,
    Intent,
    drop_denials,
    read_misspelled,
    unquote_fragments,
)
from tribrid.question.words import (
    BIDS,
    REFERS_BACK,
    asks,
    is_question_word,
    is_written_as_code,
    names_anything,
    resolve_pronouns,
    written_names,
)

QueryKind = QueryKindName  # one list of kinds: the config weighs the legs by them


@dataclass(frozen=True, slots=True)
class Reading:
    """How a question was read. `intent`: the relation its words ask for, read whatever the corpus
    holds (the graph leg walks by it); the query is structural only when the corpus is mostly
    code. `question`: the part of the message the question is in (the longest part tried when
    none reads)."""

    kind: QueryKind
    intent: Intent | None
    question: str

    @property
    def structural_intent(self) -> Intent | None:
        """The relation asked for, when the query is structural (what the gateway plans by)."""
        return self.intent if self.kind == "structural" else None


def read(question: str, corpus: CorpusProfile | None = None) -> Reading:
    """The question's reading. `corpus`: what the corpus holds (None: unknown, read as code). On a
    corpus of documents a question is never about code structure ("who is a member of the
    council" asks about people, not class members) and a lone plain word is a word, not a name.
    The corpus's definition names make a question about one of them structural
    (`quote_known_names`); the other kinds are read from how the query is written."""
    names = corpus.definition_names if corpus is not None else frozenset()
    code_corpus = corpus is None or not corpus.mostly_prose
    part, intent = read_question(question, names)
    structural = code_corpus and intent is not None
    kind: QueryKind = "structural" if structural else _unstructured_kind(question, code_corpus)
    return Reading(kind, intent, part)


# A question about code structure is one short sentence; longer text is prose or a pasted
# passage. The cap also bounds the matching time: every pattern is tried at each position.
MAX_QUESTION_CHARS = 300
# A long message is read from its last sentence back, at most this many ending sentences (each
# reading tries every pattern: this bounds the work for a message of many short "sentences").
MAX_QUESTION_SENTENCES = 8


def read_question(query: str, names: Container[str] = frozenset()) -> Asked:
    """The part of the query the question is in, and what it asks for: the phrasing families'
    reading (`read_by_families`) unless the learned reader (`tribrid.question.learned`) gives it
    less than MIN_PROBABILITY_OF_A_FAMILY_READING; else the learned reader's, each part of the
    message read in the same order as the families read them."""
    read = read_by_families(query, names)
    if read.intent is not None and _probability(read) >= MIN_PROBABILITY_OF_A_FAMILY_READING:
        return read
    by_learned = _read_parts(quote_known_names(_BREADCRUMB.sub(": ", query), names), _by_learned_reader)
    return by_learned if by_learned.intent is not None else Asked(read.part, None)


def read_by_families(query: str, names: Container[str] = frozenset()) -> Asked:
    """The part of the query the question is in, and what the phrasing families read it to ask
    for. A message is read from its end, the last sentence first, then the last two, ... within
    MAX_QUESTION_CHARS and MAX_QUESTION_SENTENCES, and a message of at most MAX_QUESTION_CHARS
    whole at last: people explain first and ask last, and the story before may name relations
    the question does not ask about. A question that names nothing has its "it" read as the name
    written before it. The part is the longest tried when none reads, or when the one that reads
    names nothing.

    `names`: the corpus's definition names, in lower case. An import verb the corpus defines
    is read as its name ("what does requires call"). A message that does not read as written is
    read again with every name of the corpus it uses written as code ("where is replace being
    called from"); only then, since a story sentence may use a name as a word ("I'm worried it
    triggers a DB write"), only a question or a request (`words.asks`: in a docstring's few
    words, "Render a parent block", the corpus's `block` is a word), and only when one name is
    used: with several ("why is the matrix update slow when I add children to a group") which
    one is asked about would be a guess."""
    query = _BREADCRUMB.sub(": ", query)
    read = _read_parts(quote_known_names(query, names, IMPORT_VERB.fullmatch), _by_families)
    if read.intent is None and asks(query):
        quoted = quote_known_names(query, names)
        if len({name.lower() for name in QUOTED.findall(quoted)}) == 1:
            again = _read_parts(quoted, _by_families)
            if again.intent is not None:
                return again
    return read


# A phrasing family's reading stands unless the learned reader (`tribrid.question.learned`) gives it
# less than this: the families are exact on the wordings they were written for, and the learned
# reader is better on new ones. Chosen one question bank held out at a time (evals/README.md, "A
# learned reading of questions").
MIN_PROBABILITY_OF_A_FAMILY_READING = 0.1


def _probability(read: Asked) -> float:
    """How likely the learned reader finds the reading of the part read."""
    assert read.intent is not None
    return learned.probabilities(read.part[-MAX_QUESTION_CHARS:])[read.intent]


def _by_learned_reader(parts: list[str]) -> list[Intent | None]:
    """The relation the learned reader finds likeliest for each part that names something and
    says something more (a menu path's last step, "'X'", asks nothing: the longer part is read
    next); None where that is none. A clause that opens with "not" is left out, as the families
    leave it. One batch for all parts: the reader's cost is mostly per call."""
    texts = [drop_denials(unquote_fragments(part))[-MAX_QUESTION_CHARS:] for part in parts]
    asking = [i for i, text in enumerate(texts) if _names_and_says_more(text)]
    readings: list[Intent | None] = [None] * len(parts)
    read = learned.probabilities_of([texts[i] for i in asking])
    for i, probability in zip(asking, read, strict=True):
        readings[i] = _INTENTS.get(learned.likeliest(probability))
    return readings


def _names_and_says_more(text: str) -> bool:
    names = set(written_names(text))
    return names_anything(text) and not all(word in names for word in _PLAIN_WORD.findall(text))


class Asked(NamedTuple):
    """What a message asks for, and the part of it read (the longest tried when none reads)."""

    part: str
    intent: Intent | None


_INTENTS: dict[str, Intent] = {intent: intent for intent in get_args(Intent)}


# A menu path ("Call Hierarchy > Outgoing Calls > X") is read as labels: each step like "label:".
_BREADCRUMB = re.compile(r"\s+(?:-+>|=>|>|\u2192|\u00bb)\s+")


# Reads a message's parts, the last sentence first: an intent or None for each, lazily where that
# saves work (the families stop at the first part they read; the learned reader reads all at once).
PartsReader = Callable[[list[str]], Iterable[Intent | None]]


def _by_families(parts: list[str]) -> Iterable[Intent | None]:
    return map(read_misspelled, parts)


def _read_parts(query: str, read: PartsReader) -> Asked:
    """The reading of the message without its closing remarks, else of the whole message, its
    parts read by `read`."""
    end = _closing_remarks(query)
    if end < len(query):
        reading = _read_sentences(query[:end], read)
        if reading.intent is not None:
            return reading
    return _read_sentences(query, read)


def _main_clause(part: str) -> str:
    """A question without the clause that sets its scene ("When I call `X`, which helpers does it
    use?", "when X runs, what gets executed inside it?"): the scene's verbs are the asker's or the
    run's, not the question's. Its "it" becomes the name the scene said. The part as it is when
    no scene opens it, or when the rest names nothing."""
    scene = _SCENE.match(part)
    if scene is None:
        return part
    main = part[scene.end() :]
    if not names_anything(main):
        main = resolve_pronouns(main, scene.group())
    return main if names_anything(main) else part


# A leading subordinate clause of time or condition, up to its comma.
_SCENE = re.compile(r"\s*(?:when|whenever|if|once|after|before|while)\b[^,?.;:]*,\s*", re.IGNORECASE)


def _closing_remarks(query: str) -> int:
    """Where the sentences that close a message after its question mark start: those that name
    nothing, say no "it", and neither ask nor bid ("who invokes `X()`? Want to be sure nothing
    depends on the old return value."). They say why, not what: their relation words are not the
    question's. A bare request stays ("who relies on it? list every caller")."""
    end = len(query)
    for found in reversed(list(_SENTENCE_BREAK.finditer(query))):
        sentence = query[found.end() : end]
        first = sentence.split(maxsplit=1)[0].lower() if sentence.strip() else ""
        if names_anything(sentence) or REFERS_BACK.search(sentence) or "?" in sentence or first in BIDS:
            break
        end = found.start() + 1
    return end if "?" in query[:end] else len(query)


def _read_sentences(query: str, read: PartsReader) -> Asked:
    breaks = (m.end() for m in _SENTENCE_BREAK.finditer(query))
    starts = [start for start in breaks if len(query) - start <= MAX_QUESTION_CHARS][-MAX_QUESTION_SENTENCES:]
    if len(query) <= MAX_QUESTION_CHARS:
        starts.insert(0, 0)  # the whole message, tried last
    window = query[starts[0] :] if starts else ""  # the longest part tried
    parts = []
    for start in reversed(starts):
        part = query[start:]
        parts.append(part if names_anything(part) else resolve_pronouns(part, query[:start]))
    for part, intent in zip(parts, read([_main_clause(part) for part in parts]), strict=False):
        if intent is not None:
            # a question that names nothing ("Address -- who relies on it? list every caller")
            # is about a name the message wrote before it: the part to seed on is the whole window
            return Asked(part if names_anything(part) else window, intent)
    return Asked(window, None)


# A plain word, or a span already quoted as code.
_PLAIN_WORD = re.compile(r"`[^`]*`|[A-Za-z][A-Za-z0-9]*")
# Shorter words that a corpus defines ("id", "ok") are more often the question's own words.
MIN_KNOWN_NAME_CHARS = 3


def quote_known_names(
    text: str, names: Container[str], quotable: Callable[[str], object] = lambda word: True
) -> str:
    """The text with the words that name a definition of the corpus (`names`, in lower case)
    written as code, in backticks, when the text writes no name as code itself; `quotable`
    narrows the words. The words questions are made of (function words, openers, the relation
    words of the phrasing families and cues) stay words even when a definition has them as its
    name."""
    if not text or written_names(text):
        return text

    def quote(found: re.Match[str]) -> str:
        word = found.group()
        known = len(word) >= MIN_KNOWN_NAME_CHARS and not word.startswith("`") and word.lower() in names
        return f"`{word}`" if known and quotable(word) and not _is_relation_word(word) else word

    return _PLAIN_WORD.sub(quote, text)


def _is_relation_word(word: str) -> bool:
    return is_question_word(word) or VOCABULARY.fullmatch(word) is not None


# Where a sentence or a clause ends: its mark and the space after it.
_SENTENCE_BREAK = re.compile(r"(?<!\bi\.e)(?<!\be\.g)[.?!:;]\s+")  # "i.e." and "e.g." end nothing
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?:\(\))?")


def _unstructured_kind(query: str, code_corpus: bool) -> QueryKind:
    """A query that asks no relation: identifier, mixed or natural by how it is written."""
    words = _WORD.findall(query)
    code = [w for w in words if is_written_as_code(w)]
    if not words:
        return "natural"
    if len(code) == len(words) or (code_corpus and len(words) == 1):
        return "identifier"  # a lone word is most likely a name looked up as such
    return "mixed" if code else "natural"
