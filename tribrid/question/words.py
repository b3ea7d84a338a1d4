"""The words a question is made of and the names it writes: the one place that says which words
are names (quoted, code-like, capitalized inside a sentence: `is_name`), the name beside a relation
word when none is written as one ("normalize invoked where"), what "it" stands for, and whether a
text asks at all (a question mark, or a question or request word first: "which", "can", "show",
"please").
"""

from __future__ import annotations

import re
from functools import lru_cache

# A question is read as several overlapping parts, each asked whether it names anything: the
# answers for recent texts are kept (a pure function of the text).
_CACHED_TEXTS = 4096
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
# The pronouns that stand for the name said before ("what does that one invoke itself?"), and with
# the possessive, the words by which a sentence refers back to it ("its callers").
_PRONOUNS = r"it|itself|(?:this|that) one"
_PRONOUN = re.compile(rf"\b(?:{_PRONOUNS})\b", re.IGNORECASE)
REFERS_BACK = re.compile(rf"\b(?:{_PRONOUNS}|its)\b", re.IGNORECASE)
_SENTENCES = re.compile(r"(?<=[.?!])(?<!\bi\.e\.)(?<!\be\.g\.)\s+")  # "i.e." ends no sentence
_TOWARD = frozenset(("to", "into", "on"))  # "a call to X", "calls into X"
_AGENT = frozenset(("by", "from", "inside", "within", "in"))  # "called by X", "invoked from within X"
_RELATIVE = frozenset(("that", "which", "who"))
# How English opens a question or a request: interrogatives, auxiliaries, request verbs, the asker.
_OPENERS = frozenset(
    """who whom whose what which where when why how is are was were does do did can could would
    will should shall may might any anyone anybody anything please show list find give tell get
    enumerate trace check look search i i'm im we we're my our hey hi yo so and but before after
    need want help wat wut whats pls plz""".split()
)
_PLEASE = frozenset(("please", "pls", "plz"))  # a request wherever it stands
# Words a question is made of, never the name it asks about: with no word written as a name, the
# name is the word next to the relation word that is none of these ("replace invoked where",
# "new instances of cookies").
_FUNCTION_WORDS = frozenset(
    """a an the this that these those it its itself they them their of to into in on for from by
    with within inside at as or and not no any all every each other else more some such which what
    who whom where when why how is are was were be been being do does did done has have had am get
    gets got me my our us you your i we here there still also just only really exactly code
    function functions method methods class classes routine routines place places part parts path
    paths new way one""".split()
)

# The words of a graph question, never names the graph leg looks up (its seed terms).
QUESTION_WORDS = frozenset(
    """call calls called caller callers callee callees use uses used usage usages user users
    invoke invokes invoked depend depends dependency dependencies reference references
    method methods member members attribute attributes subclass subclasses superclass
    superclasses inherit inherits inherited derive derives derived extend extends base bases
    class classes function functions have has contain contains define defines usages sites
    invocation invocations importer importers imported importing dependents descendants
    ancestors implementers subtypes supertypes subclassed callees calling invoking using
    referencing inheriting extending deriving implementing implement implements subclassing
    specializing importing requiring routines interfaces relies rely needs outgoing""".split()
)
# An imperative that opens a question ("find the callers of X") is not a name to look up; the
# same word later in the query may be one ("who calls find").
OPENING_VERBS = frozenset("find list show get give display locate search enumerate look".split())
# Imperatives that open a request ("list every caller"); "want to be sure ..." says why.
BIDS = frozenset(
    "show list find give tell get enumerate trace check look search print display please".split()
)
_AUXILIARIES = frozenset(("is", "are", "was", "were"))


def is_name(token: str, position: int) -> bool:
    """A token written as a name: quoted, code-like, or capitalized inside the sentence."""
    if token.isalnum() and token.islower():  # a plain word, as most are: none of the below holds
        return False
    if token.startswith(_QUOTES):
        return True
    bare = token.removesuffix("()")
    if "." in bare and all(len(part) <= 1 for part in bare.split(".")):
        return False  # "i.e", "e.g": abbreviations
    if "_" in bare.strip("_") or "." in bare or bare != token or _CAMEL.search(bare):
        return True
    return position > 0 and bare[:1].isupper() and not bare.isupper()


def is_written_as_code(word: str) -> bool:
    """A word written as code: quoted, snake_case, camelCase, dotted or called ("f()"); not an
    abbreviation ("e.g")."""
    return is_name(word, 0)


def names_among(terms: list[str], question: str) -> list[str]:
    """The terms (identifiers of the question) that it writes as names: as code, capitalized
    inside the sentence ("Where is Atom used") or in backticks ("who calls `flush`"), and the last
    part of a dotted one ("send" of "Client.send": how the definition is named)."""
    first = _IDENTIFIER.search(question)
    opening = first.group() if first is not None else ""
    quoted = {w for span in re.findall(r"`([^`]+)`", question) for w in _IDENTIFIER.findall(span)}
    names = {t for t in terms if is_written_as_code(t) or (t[:1].isupper() and t != opening) or t in quoted}
    parts = {t for t in terms if any(n.endswith("." + t) for n in names)}
    return [t for t in terms if t in names or t in parts]


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def is_question_word(word: str) -> bool:
    """A word questions are made of (a function word, an opener, a relation cue), never read as a
    name just because a definition of the corpus has it."""
    lowered = word.lower()
    return lowered in _FUNCTION_WORDS or lowered in _OPENERS or _is_cue(lowered)


def asked_name(query: str) -> str | None:
    """The name a structural question asks about when no word of it is written as one (lower
    case, at the start): the word next to its relation word. None when a word is written as a
    name, or none stands there."""
    words = _words(query)
    if not words or any(is_name(w, i) for i, w in enumerate(words)):
        return None
    at = _unwritten_name(words)
    return words[at] if at is not None else None


@lru_cache(maxsize=_CACHED_TEXTS)
def names_anything(text: str) -> bool:
    """The text names a definition: a word written as a name, or a lower-case one beside a
    relation word."""
    return bool(written_names(text)) or asked_name(text) is not None


@lru_cache(maxsize=_CACHED_TEXTS)
def written_names(text: str) -> tuple[str, ...]:
    """The words written as names, in order, read a sentence at a time: the capital that opens a
    sentence makes no name."""
    return tuple(
        w for sentence in _SENTENCES.split(text) for i, w in enumerate(_words(sentence)) if is_name(w, i)
    )


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
    code = [n for n in names if n.startswith("`") or is_written_as_code(n)]
    return _PRONOUN.sub((code or names)[0], question)


_FAN = re.compile(r"\bfan[- ]?(in|out)\b", re.IGNORECASE)  # "fan-in", "fan out": one word


def _words(query: str) -> list[str]:
    return _TOKEN.findall(_FAN.sub(r"fan\1", query))


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


def asks(query: str) -> bool:
    """The text is a question or a request: a question mark, or a question or request word
    first. Unlike a few words typed in a search box, prose never is ("Render a parent block")."""
    words = _words(query)
    return (
        "?" in query
        or (bool(words) and words[0].lower() in _OPENERS)
        or any(w.lower() in _PLEASE for w in words)
    )
