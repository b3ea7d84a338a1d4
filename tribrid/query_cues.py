"""A second reading of a structural question, for wordings no phrasing family in
`tribrid.query_kind` was written for: relation words anywhere in the question, and which way the
relation points, from where the name asked about stands against them.

- which relation: a word of inheritance ("subclass", "extends", "hierarchy", "superclass") or of
  calling ("call", "invoke", "instantiate", "callers", "fan-out"); inheritance first, since its
  questions often say why ("... wanna change the constructor");
- which way: a noun says it ("callers", "callees", "descendants", "superclass"); a verb says it by
  voice and position. The name (or "it" after it) before an active verb is its subject ("X calls",
  "does X invoke", "the helpers it invokes": what X calls); after the verb it is the object
  ("calling X", "a call to X": what calls X). A passive with the name before it ("X invoked
  where") or as its agent ("called by X") turns that round.

No name, no reading: "how do I call an API" asks nothing about a definition. And only a question
is read: a question mark, a question or request word first ("which", "can", "show", "please",
"I need"), or a few words; "Register a `Shell` subclass under the given name" (a docstring) is
prose about code, not a question about it.
"""

from __future__ import annotations

import re
from typing import Literal

Relation = Literal["callers", "callees", "subclasses", "bases"]

_WORD_TOKEN = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?:\(\))?"
# a name in backticks, or one word in quotes ("'Router' -- and who calls it?"), or a word
_TOKEN = re.compile(rf"`[^`]+`|'{_WORD_TOKEN}'(?!\w)|\"{_WORD_TOKEN}\"|{_WORD_TOKEN}")
_QUOTES = ("`", "'", '"')
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2,}[a-z]")  # fooBar, HTTPServer
# Cues are stems: a word counts when it starts with one ("invok": invoke, invokes, invoked, ...).
_INHERIT_VERBS = (
    "inherit",
    "extend",
    "subclassing",
    "subclassed",
    "deriv",
    "implement",
    "speciali",
    "fulfil",
    "satisf",
    "overrid",
)
_DOWN_NOUNS = (
    "subclass",
    "descendant",
    "child",
    "children",
    "implementation",
    "implementer",
    "hierarchy",
    "subtype",
    "heir",
)
_UP_NOUNS = ("superclass", "parent", "base", "ancestor", "supertype")
# a relation without a direction: subclasses, the common ask ("the extension of the class X")
_INHERIT_NOUNS = ("inheritance", "extension")
_CALL_VERBS = ("call", "invok", "instantiat", "delegat")
# Verbs of reaching, said of calls in chat ("what code paths lead into X", "does X hit any other
# functions", "what does X reach out to"), and "execute": whole words, since as stems they would
# match "leader" and "executor".
_REACH_VERBS = frozenset(
    """reach reaches reached reaching hit hits hitting lead leads leading led touch touches touched
    touching trigger triggers triggered triggering execute executes executed executing""".split()
)
_IN_NOUNS = ("caller", "instance", "usages", "incoming", "fanin", "invoker")
_OUT_NOUNS = ("callee", "outgoing", "fanout", "downstream", "internally", "internal")
_PRONOUNS = frozenset(("it", "itself"))  # stand for the name once it is said
_PRONOUN = re.compile(r"\b(?:it|itself)\b", re.IGNORECASE)
_SENTENCES = re.compile(r"(?<=[.?!])(?<!\bi\.e\.)(?<!\be\.g\.)\s+")  # "i.e." ends no sentence
_TOWARD = frozenset(("to", "into", "on"))  # "a call to X", "calls into X"
_AGENT = frozenset(("by", "from", "inside", "within", "in"))  # "called by X", "invoked from within X"
_RELATIVE = frozenset(("that", "which", "who"))
_ARTICLES = frozenset(("the", "a", "an"))
_HAVE = frozenset(("has", "have", "having"))
# How English opens a question or a request: interrogatives, auxiliaries, request verbs, the asker.
_OPENERS = frozenset(
    """who whom whose what which where when why how is are was were does do did can could would
    will should shall may might any anyone anybody anything please show list find give tell get
    enumerate trace check look search i i'm im we we're my our hey hi yo so and but before after
    need want help wat wut whats pls plz""".split()
)
# "its implementation" is the code of a function, not a class implementing an interface
_POSSESSIVES = frozenset(("its", "their", "his", "her", "my", "our", "your", "the"))
_PLEASE = frozenset(("please", "pls", "plz"))  # a request wherever it stands
_TERSE_WORDS = 6  # a query this short is a search, not prose
# Words a question is made of, never the name it asks about: with no word written as a name, the
# name is the word next to the relation word that is none of these ("replace invoked where",
# "new instances of cookies").
_FUNCTION_WORDS = frozenset(
    """a an the this that these those it its itself they them their of to into in on for from by
    with within inside at as or and not no any all every each other else more some such which what
    who whom where when why how is are was were be been being do does did done has have had am get
    gets got me my our us you your i we here there still also just only really exactly code
    function functions method methods class classes routine routines place places part parts path
    paths new way""".split()
)
_AUXILIARIES = frozenset(("is", "are", "was", "were"))


def _is_name(token: str, position: int) -> bool:
    """A token written as a name: quoted, code-like, or capitalized inside the sentence."""
    if token.startswith(_QUOTES):
        return True
    bare = token.removesuffix("()")
    if "." in bare and all(len(part) <= 1 for part in bare.split(".")):
        return False  # "i.e", "e.g": abbreviations
    if "_" in bare.strip("_") or "." in bare or bare != token or _CAMEL.search(bare):
        return True
    return position > 0 and bare[:1].isupper() and not bare.isupper()


def is_question_word(word: str) -> bool:
    """A word questions are made of (a function word, an opener, a relation cue), never read as a
    name just because a definition of the corpus has it."""
    lowered = word.lower()
    return lowered in _FUNCTION_WORDS or lowered in _OPENERS or _is_cue(lowered)


def read_relation(query: str) -> Relation | None:
    """The relation a structural question asks for; None when it names nothing or says no
    relation."""
    words = _words(query)
    if not words or not _is_question(query, words):
        return None
    name_at = _name_position(words)
    if name_at is None:
        return None
    # a name is no cue ("call_on_close" is a name, not a question about calls)
    lowered = ["" if _is_name(w, i) or i == name_at else w.lower() for i, w in enumerate(words)]
    mentions = {name_at} | {i for i, w in enumerate(lowered) if i > name_at and w in _PRONOUNS}
    return _inheritance(lowered, mentions) or _calls(lowered, mentions)


def asked_name(query: str) -> str | None:
    """The name a structural question asks about when no word of it is written as one (lower
    case, at the start): the word next to its relation word. None when a word is written as a
    name, or none stands there."""
    words = _words(query)
    if not words or any(_is_name(w, i) for i, w in enumerate(words)):
        return None
    at = _unwritten_name(words)
    return words[at] if at is not None else None


def names_anything(text: str) -> bool:
    """The text names a definition: a word written as a name, or a lower-case one beside a
    relation word."""
    return bool(written_names(text)) or asked_name(text) is not None


def written_names(text: str) -> list[str]:
    """The words written as names, in order, read a sentence at a time: the capital that opens a
    sentence makes no name."""
    return [
        w for sentence in _SENTENCES.split(text) for i, w in enumerate(_words(sentence)) if _is_name(w, i)
    ]


def resolve_pronouns(question: str, before: str) -> str:
    """The question with "it" and "itself" standing for the name the text before it said first
    ("I'm trying to figure out why translateZ is so slow. [...] Could you list the functions that
    it calls?"); the question as it is when the text before names nothing. The first name is the
    message's topic: people say what they ask about first, then the tools and places around it
    ("GitHub", "Python"). A name written as code (snake_case, camelCase, backticks) is preferred
    over a word that is only capitalized."""
    names = written_names(before)
    if not names:
        return question
    code = [n for n in names if n.startswith("`") or _is_name(n, 0)]
    return _PRONOUN.sub((code or names)[0], question)


def _words(query: str) -> list[str]:
    return _TOKEN.findall(re.sub(r"\bfan[- ]?(in|out)\b", r"fan\1", query, flags=re.IGNORECASE))


def _name_position(words: list[str]) -> int | None:
    """Where the name asked about is: in backticks, else the first word written as a name, else
    the word next to the relation word."""
    quoted = next((i for i, w in enumerate(words) if w.startswith("`")), None)
    if quoted is not None:
        return quoted
    written = next((i for i, w in enumerate(words) if _is_name(w, i)), None)
    return written if written is not None else _unwritten_name(words)


def _is_cue(word: str) -> bool:
    return word.startswith(
        (*_CALL_VERBS, *_IN_NOUNS, *_OUT_NOUNS, *_INHERIT_VERBS, *_DOWN_NOUNS, *_UP_NOUNS)
    ) or (word in _REACH_VERBS)


def _unwritten_name(words: list[str]) -> int | None:
    """The name beside the first relation word: after it and a preposition ("calls into x",
    "instances of the x"), or before it ("x invoked where", "x internal calls", "that x is
    calling"). An object with no preposition is not taken: "call an API" names no definition."""
    lowered = [w.lower() for w in words]

    def candidate(i: int) -> bool:
        return 0 <= i < len(words) and lowered[i] not in _FUNCTION_WORDS and not _is_cue(lowered[i])

    for i, word in enumerate(lowered):
        if not _is_cue(word):
            continue
        after = i + 1 + (i + 1 < len(words) and lowered[i + 1] == "out")  # "reach out to x"
        if after < len(words) and lowered[after] in _TOWARD | _AGENT | {"of"}:
            after += 1 + (after + 1 < len(words) and lowered[after + 1] == "the")
            if candidate(after):
                return after
        before = i - 2 if i >= 2 and lowered[i - 1] in _AUXILIARIES else i - 1
        if i <= 2 and before == 0 and candidate(0):
            return 0
        if before > 0 and lowered[before - 1] in _RELATIVE and candidate(before):
            return before
        return None
    return None


def _is_question(query: str, words: list[str]) -> bool:
    return asks(query, words) or len(words) <= _TERSE_WORDS


def reads_as_question(text: str) -> bool:
    """A question, a request, or a few words typed in a search box; not prose."""
    return _is_question(text, _words(text))


def asks(query: str, words: list[str] | None = None) -> bool:
    """The text is a question or a request: a question mark, or a question or request word
    first. Unlike a few words typed in a search box, prose never is ("Render a parent block")."""
    words = _words(query) if words is None else words
    return (
        "?" in query
        or (bool(words) and words[0].lower() in _OPENERS)
        or any(w.lower() in _PLEASE for w in words)
    )


def _next(lowered: list[str], i: int) -> str:
    return lowered[i + 1] if i + 1 < len(lowered) else ""


def _subject(lowered: list[str], mentions: set[int], verb_at: int) -> bool:
    """The name is the verb's subject: said before it, with no relative pronoun between them
    ("X, and the classes that extend it" has the classes for subject)."""
    before = [m for m in mentions if m < verb_at]
    return bool(before) and not _RELATIVE & set(lowered[max(before) + 1 : verb_at])


def _object_of(lowered: list[str], mentions: set[int], preposition_at: int) -> bool:
    """The name is the preposition's object: right after it, or after an article ("a call to
    the X"); "what does it delegate to? [...] splitting it" has no object after "to"."""
    at = preposition_at + 1
    if at < len(lowered) and lowered[at] in _ARTICLES:
        at += 1
    return at in mentions


def _inheritance(lowered: list[str], mentions: set[int]) -> Relation | None:
    seen = False
    for i, word in enumerate(lowered):
        if word.startswith("implementation") and i > 0 and lowered[i - 1] in _POSSESSIVES - {"the"}:
            continue
        if word.startswith(_UP_NOUNS):
            # "classes that have X as their parent": X is the base, the answer its subclasses
            has_as = any(
                lowered[j] in _HAVE and j + 1 in mentions and "as" in lowered[j + 2 : i]
                for j in range(max(0, i - 6), i)
            )
            return "subclasses" if has_as else "bases"
        if word.startswith(_DOWN_NOUNS) and not word.startswith(_INHERIT_VERBS):
            return "subclasses"
        if word.startswith(_INHERIT_VERBS) and not word.startswith(_INHERIT_NOUNS):
            passive = word.endswith("ed") and _next(lowered, i) == "by"
            return "bases" if _subject(lowered, mentions, i) and not passive else "subclasses"
        seen = seen or word.startswith(_INHERIT_NOUNS)
    return "subclasses" if seen else None


def _calls(lowered: list[str], mentions: set[int]) -> Relation | None:
    for i, word in enumerate(lowered):
        if word.startswith(_IN_NOUNS) and (not word.startswith("instance") or _next(lowered, i) == "of"):
            return "callers"  # "callers", "new instances of X"
        if word.startswith(_OUT_NOUNS):
            return "callees"
        if not word.startswith(_CALL_VERBS) and word not in _REACH_VERBS:
            continue
        after = any(m > i for m in mentions)
        if word.startswith("instantiat") or (
            _next(lowered, i) in _TOWARD and _object_of(lowered, mentions, i + 1)
        ):
            return "callers"  # "instantiate X", "a call to X", "calls into X"
        passive = word.endswith("ed")
        if passive and after and _next(lowered, i) in _AGENT:
            return "callees"  # "called by X", "invoked from within X"
        if not passive and i + 1 in mentions and _next(lowered, i) != "itself":
            return "callers"  # the name is the verb's object: "what code paths invoke it"
        if _subject(lowered, mentions, i):
            return "callers" if passive else "callees"  # "X invoked where" / "X calls", "it invokes"
        return "callers"  # "calling X", "which parts end up calling X"
    return None
