"""What kind of question a query is: read by the graph leg (which way to walk) and the gateway
(how much to trust each leg). Plain functions over the query text (and the corpus's definition
names when the caller has them), no store: phrasing families written as data, checked and
completed by the learned reader of `tribrid.query_examples` (a small classifier fit at start-up).

- structural: asks about code structure ("who calls X", "subclasses of Y", "methods of Z");
- identifier: names code and little else ("parse_args", "HTTPStatusError", "Context.invoke");
- natural: prose with no code-like token ("parse command line options");
- mixed: prose that names code ("how does parse_args handle defaults").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass
from typing import Literal, NamedTuple, get_args

from tribrid import query_examples
from tribrid.query_cues import (
    asks,
    is_question_word,
    names_anything,
    resolve_pronouns,
    written_names,
)
from tribrid.query_spelling import correct_spelling

Intent = Literal["callers", "callees", "members", "subclasses", "bases", "importers"]
QueryKind = Literal["structural", "identifier", "natural", "mixed"]
QUERY_KINDS: tuple[QueryKind, ...] = ("structural", "identifier", "natural", "mixed")

# Question understanding as data: word classes, then phrasing families written with them. A
# family is a way English asks for one relation (verb question, relative clause, passive, noun
# phrase, imperative, possessive); each has its own rows in tests/test_query_kind.py. The name
# asked about is `{name}`: any token. Families are tried in order, first match wins (bases before
# subclasses: "what does X derive from" asks for X's bases, "classes derived from X" for its
# subclasses; callees before callers: "what does X depend on" vs "what depends on X").
WORDS: dict[str, str] = {
    # a whole token (tried from each token's start, not each character), not a word that stands
    # for the answer or for nothing ("what else calls X" asks for X's callers, not else's callees)
    "name": r"(?<!\S)(?!(?:else|other|exactly|all|everything|anything|it|this|that)\b)\S+",
    "s": r"(?:'|\u2019)s",  # a possessive, straight or typographic apostrophe
    "the": r"(?:(?:all|every|each)\s+)?(?:(?:the|its|their)\s+)?",
    "who": r"(?:who|what|which(?:\s+other)?(?:\s+\w+)?)",  # "which other functions use X"
    "find": (
        r"(?:find|list|show(?:\s+me)?|get|give\s+me|display|locate|search\s+for|enumerate"
        r"|look\s+up)"
    ),
    "code": (
        r"(?:functions?|funcs?|fns?|methods?|code|places?|callers?|routines?|modules?|classes"
        r"|spots?|lines?|files?)"
    ),
    "call": (
        r"(?:call(?:s|ed|ing)?|invok(?:e|es|ed|ing)|us(?:e|es|ed|ing)|referenc(?:e|es|ed|ing)"
        r"|dispatch(?:es|ed|ing)?)"
    ),
    "callers": (
        r"(?:callers?|usages?|uses|references?|call[- ]?sites?|invocations?|invokers?"
        r"|consumers?|calls\s+to|incoming\s+calls)"
    ),
    # a participle after the thing asked for: "functions calling X", "classes extending Y"
    "calling": r"(?:calling|invoking|using|referencing)",
    "inheriting": (r"(?:inheriting|extending|deriving|implementing|subclassing|specializing|satisfying)"),
    "importing": r"(?:importing|requiring)",
    # the head noun of a clause about code: "the functions X calls", "classes extending Y"
    "things": (
        r"(?:functions?|funcs?|fns?|methods?|code|routines?|modules?|files?|class(?:es)?|types?"
        r"|interfaces?)"
    ),
    # an indefinite pronoun heading a participle: "anything calling X", "everything extending Y"
    "anything": r"(?:anything|everything|something|whatever)",
    # a name, not a relative pronoun, an auxiliary or another head noun ("classes that extend X",
    # "what class extends X" are about X's subclasses, not the bases of "that" or "class")
    "subject": (
        r"(?!(?:that|which|who|where|whose|whom|is|are|was|were|to|of|in|on|for|by|from|with"
        r"|class|classes|functions?|methods?|types?|interfaces?|modules?|code)\b)\S+"
    ),
    "callees": r"(?:callees?|calls\s+made|outgoing\s+calls|dependencies)",
    "members": r"(?:methods?|members?|attributes?|fields?|properties|operations)",
    "subclasses": (
        r"(?:subclass(?:es)?|sub-?types?|child(?:ren)?(?:\s+class(?:es)?)?|derived\s+class(?:es)?"
        r"|descendants?|implementations?|implementers?|impls)"
    ),
    "bases": (
        r"(?:base\s*class(?:es)?|superclass(?:es)?|super-?types?|parent(?:\s+class(?:es)?|s)?"
        r"|ancestors?)"
    ),
    "inherit": (
        r"(?:inherit(?:s|ing)?|extend(?:s|ing)?|deriv(?:e|es|ing)|subclass(?:es|ing)?"
        r"|implement(?:s|ing)?|impls?|specializ(?:e|es|ing)|satisf(?:y|ies|ying))"
    ),
    "inherited": r"(?:derived|inherited|extended|subclassed|based|built)",
    "import": r"(?:import(?:s|ed|ing)?|requir(?:e|es|ed|ing))",
    "importers": r"(?:importers?|imports\s+of|dependents)",
}


@dataclass(frozen=True, slots=True)
class Family:
    intent: Intent
    name: str
    patterns: tuple[str, ...]


FAMILIES: tuple[Family, ...] = (
    Family(
        "importers",
        "importers",
        (
            r"\b{who}\s+{import}s?\s+(?:the\s+)?(?:module\s+|package\s+)?{name}",
            r"\b{code}\s+(?:that|which)\s+{import}\s+{name}",
            r"\b{importers}\s+(?:of\s+)?{name}",
            r"\bwhere\s+(?:is|are)\s+{name}\s+{import}",
            r"\b{name}(?:{s})?\s+{importers}\b",
            r"\b{things}\s+{importing}\s+(?:the\s+)?(?:module\s+|package\s+)?{name}",
        ),
    ),
    Family(
        "bases",
        "bases",
        (
            r"\b{bases}\s+(?:of|for)\b",
            r"\b{name}{s}\s+{bases}\b",
            r"\bwhat\s+(?:does|do|did)\s+(?:class\s+)?{name}\s+{inherit}",
            r"\b(?:what|which\s+\w+)\s+(?:is|are)\s+(?:class\s+)?{name}\s+{inherited}\s+(?:from|on)\b",
            r"\bwhat\s+(?:is|are)\s+{name}\s+a\s+(?:subclass|subtype|child)\s+of\b",
            r"\b{find}\s+{the}{bases}\b",
            r"\b{things}\s+(?:class\s+)?{subject}\s+(?:inherits|extends|derives|implements|subclasses)\b",
            r"^\s*{bases}\s*:",
        ),
    ),
    Family(
        "subclasses",
        "subclasses",
        (
            r"\b{subclasses}\s+(?:of|for)\b",
            r"\b{name}{s}\s+{subclasses}\b",
            r"\b(?:{code}|types?)\s+(?:that|which)\s+{inherit}\b",
            r"\b(?:classes|types)\s+{inherited}\s+(?:from|on|upon)\b",
            # "what's built on top of X", "anything derived from X"
            r"\b(?:what|which\s+\w+|{anything})(?:{s}|\s+is|\s+are)?\s+{inherited}"
            r"\s+(?:on\s+top\s+of|from|on|upon)\s+{name}",
            # "classes that use X as their base class": X is the base, the answer its subclasses
            r"\b{call}\s+(?:{name}|it)\s+as\s+(?:a|an|the|their|its)\s+(?:base|parent|super)",
            r"\b{who}\s+{inherit}\s+(?:from\s+)?{name}",
            r"\bwhat\s+(?:class(?:es)?|types?|interfaces?)\s+{inherit}\b",
            r"\b(?:is|are)\s+{name}\s+(?:subclassed|extended|inherited|implemented)\b",
            r"\bwhere\s+(?:is|are)\s+{name}\s+(?:subclassed|extended|inherited|implemented)\b",
            r"^\s*{name}\s+{subclasses}\s*\??\s*$",
            r"\b{find}\s+{the}{subclasses}\b",
            r"\b(?:{things}|{anything})\s+{inheriting}\s+(?:from\s+|on\s+)?{name}",
            # "classes that have X in their bases": X is among their bases, they are its subclasses
            r"\b(?:{code}|types?)\s+(?:that\s+|which\s+)?(?:have|has|include|list)\s+{name}\s+(?:\w+\s+)?"
            r"(?:in|among)\s+(?:their|its)\s+(?:bases|base\s+class(?:es)?|parents|ancestors|superclasses"
            r"|super-?types|mro|hierarchy)",
            r"^\s*{subclasses}\s*:",
        ),
    ),
    # before members: "list the methods X calls" asks for callees, not for methods of X
    Family(
        "callees",
        "callees-reduced-relative",
        (r"\b{things}\s+{subject}\s+(?:calls|uses|invokes|references|needs|(?:depends|relies)\s+on)\b",),
    ),
    Family(
        "members",
        "members",
        (
            r"\b{members}\s+(?:of|in|on|for)\b",
            r"\b{name}{s}\s+{members}\b",
            r"\bwhat\s+{members}\s+(?:does|do|did|has|have)\b",
            r"\bwhat\s+does\s+(?:class\s+)?{name}\s+(?:contain|define|have|hold|expose|provide)\b",
            r"^\s*(?:class\s+)?{name}\s+{members}\s*\??\s*$",
            # "show the methods called in X" is about calls: the noun is modified, not asked for
            r"\b{find}\s+{the}{members}\b(?!\s+(?:called|used|invoked|that|which|{calling}))",
            r"^\s*{members}\s*:",
        ),
    ),
    Family(
        "callees",
        "callees",
        (
            r"\b(?:what|which)(?:\s+\w+)?\s+(?:does|do|did)\s+{name}\s+(?:{call}|depend\s+on|rely\s+on|need)\b",
            r"\b{callees}\s+(?:of|for|from|in|by)\b",
            r"\b{name}{s}\s+{callees}\b",
            r"\b(?:{things}|what|which\s+\w+)\s+(?:that\s+|which\s+)?(?:gets?\s+|is\s+|are\s+)?(?:called|used|invoked)"
            r"\s+(?:by|from|in|inside|within|when)\b",
            r"\bwhat(?:{s}|\s+is|\s+are)\s+{name}\s+(?:calling|invoking|using)\b",
            r"^\s*{name}\s+{callees}\s*\??\s*$",
            r"^\s*{callees}\s*:",
            r"\bwhat\s+{name}\s+(?:calls|uses|invokes|depends\s+on)\b",
            r"\b(?!(?:what|who|which|that|code|functions?|methods?|modules?)\b){name}\s+(?:depends|relies)\s+on\b",
            r"\b{find}\s+{the}{callees}\b",
            r"\b{find}\s+what\s+{name}\s+(?:calls|uses|invokes)\b",
        ),
    ),
    Family(
        "callers",
        "callers",
        (
            r"\b{who}\s+{call}\b",
            r"\b{code}\s+(?:that|which|where)\s+{call}\b",
            r"\b{callers}\s+(?:of|for|to)\b",
            r"\b{name}{s}\s+{callers}\b",
            r"\bwhere\s+(?:is|are|was|were|does|do)\s+{name}\s+(?:get\s+|being\s+)?(?:called|used|invoked|referenced|{call})\b",
            r"\b(?:is|are)\s+{name}\s+(?:ever\s+)?(?:called|used|invoked|referenced)\b",
            r"\b{name}\s+(?:is|are|gets|get)\s+(?:called|used|invoked|referenced)\s+(?:by|from|in|where)\b",
            r"\b(?:{who}|{code}\s+(?:that|which))\s+(?:depends?|rel(?:y|ies))\s+on\b",
            r"^\s*{name}\s+{callers}\s*\??\s*$",
            r"\b{find}\s+{the}(?:{callers}|{code}\s+(?:that|which)\s+{call})\b",
            r"\b{find}\s+(?:where|who)\s+{name}\s+is\s+(?:called|used|invoked)\b",
            r"\b(?:functions?|methods?|code|routines?|class(?:es)?|{anything})\s+{calling}\s+{name}",
            r"^\s*{callers}\s*:",
            r"\busers?\s+of\b",
        ),
    ),
)


def _compile(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern.format(**WORDS), re.IGNORECASE)


# The relation words of the phrasing families: never a name, whatever the corpus defines. The
# import verbs are left out: "what does requires call" in a corpus defining `requires` is about it.
_IMPORT_VERB = re.compile(WORDS["import"], re.IGNORECASE)
_VOCABULARY = re.compile(
    "|".join(
        WORDS[cls]
        for cls in (
            *("find", "code", "call", "callers", "calling", "inheriting", "things", "anything"),
            *("callees", "members", "subclasses", "bases", "inherit", "inherited", "importers"),
        )
    ),
    re.IGNORECASE,
)

_COMPILED: tuple[tuple[Family, tuple[re.Pattern[str], ...]], ...] = tuple(
    (family, tuple(_compile(p) for p in family.patterns)) for family in FAMILIES
)


# A question about code structure is one short sentence; longer text is prose or a pasted
# passage. The cap also bounds the matching time: every pattern is tried at each position.
MAX_QUESTION_CHARS = 300
# A long message is read from its last sentence back, at most this many ending sentences (each
# reading tries every pattern: this bounds the work for a message of many short "sentences").
MAX_QUESTION_SENTENCES = 8


def detect_intent(query: str, names: Container[str] = frozenset()) -> Intent | None:
    """What a structural question asks for (None: no reading); see `read_question`."""
    return read_question(query, names)[1]


def read_question(query: str, names: Container[str] = frozenset()) -> tuple[str, Intent | None]:
    """The part of the query the question is in, and what it asks for: the phrasing families'
    reading (`read_by_families`) unless the learned reader (`tribrid.query_examples`) gives it
    less than MIN_PROBABILITY_OF_A_FAMILY_READING; else the learned reader's, each part of the
    message read in the same order as the families read them."""
    read = read_by_families(query, names)
    if read.intent is not None and _probability(read) >= MIN_PROBABILITY_OF_A_FAMILY_READING:
        return read
    learned = _read_parts(quote_known_names(_BREADCRUMB.sub(": ", query), names), _by_learned_reader)
    return learned if learned.intent is not None else Reading(read.part, None)


def read_by_families(query: str, names: Container[str] = frozenset()) -> Reading:
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
    triggers a DB write"), only a question or a request (`query_cues.asks`: in a docstring's few
    words, "Render a parent block", the corpus's `block` is a word), and only when one name is
    used: with several ("why is the matrix update slow when I add children to a group") which
    one is asked about would be a guess."""
    query = _BREADCRUMB.sub(": ", query)
    read = _read_parts(quote_known_names(query, names, _IMPORT_VERB.fullmatch), _by_families)
    if read.intent is None and asks(query):
        quoted = quote_known_names(query, names)
        if len({name.lower() for name in _QUOTED.findall(quoted)}) == 1:
            again = _read_parts(quoted, _by_families)
            if again.intent is not None:
                return again
    return read


# A phrasing family's reading stands unless the learned reader (`tribrid.query_examples`) gives it
# less than this: the families are exact on the wordings they were written for, and the learned
# reader is better on new ones. Chosen one question bank held out at a time (evals/README.md, "A
# learned reading of questions").
MIN_PROBABILITY_OF_A_FAMILY_READING = 0.1


def _probability(read: Reading) -> float:
    """How likely the learned reader finds the reading of the part read."""
    assert read.intent is not None
    return query_examples.probabilities(read.part[-MAX_QUESTION_CHARS:])[read.intent]


def _by_learned_reader(parts: list[str]) -> list[Intent | None]:
    """The relation the learned reader finds likeliest for each part that names something and
    says something more (a menu path's last step, "'X'", asks nothing: the longer part is read
    next); None where that is none. A clause that opens with "not" is left out, as the families
    leave it. One batch for all parts: the reader's cost is mostly per call."""
    texts = [_drop_denials(_unquote_fragments(part))[-MAX_QUESTION_CHARS:] for part in parts]
    asking = [i for i, text in enumerate(texts) if _names_and_says_more(text)]
    readings: list[Intent | None] = [None] * len(parts)
    read = query_examples.probabilities_of([texts[i] for i in asking])
    for i, probability in zip(asking, read, strict=True):
        readings[i] = _INTENTS.get(query_examples.likeliest(probability))
    return readings


def _names_and_says_more(text: str) -> bool:
    names = set(written_names(text))
    return names_anything(text) and not all(word in names for word in _PLAIN_WORD.findall(text))


class Reading(NamedTuple):
    part: str  # the part of the message read (the longest tried when none reads)
    intent: Intent | None


_INTENTS: dict[str, Intent] = {intent: intent for intent in get_args(Intent)}


# A menu path ("Call Hierarchy > Outgoing Calls > X") is read as labels: each step like "label:".
_BREADCRUMB = re.compile(r"\s+(?:-+>|=>|>|\u2192|\u00bb)\s+")


# Reads a message's parts, the last sentence first: an intent or None for each, lazily where that
# saves work (the families stop at the first part they read; the learned reader reads all at once).
PartsReader = Callable[[list[str]], Iterable[Intent | None]]


def _by_families(parts: list[str]) -> Iterable[Intent | None]:
    return map(_read_misspelled, parts)


def _read_parts(query: str, read: PartsReader) -> Reading:
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
        if names_anything(sentence) or _PRONOUN.search(sentence) or "?" in sentence or first in _BIDS:
            break
        end = found.start() + 1
    return end if "?" in query[:end] else len(query)


_PRONOUN = re.compile(r"\b(?:it|itself|its|that one)\b", re.IGNORECASE)
# Imperatives that open a request ("list every caller"); "want to be sure ..." says why.
_BIDS = frozenset(
    "show list find give tell get enumerate trace check look search print display please".split()
)


def _read_sentences(query: str, read: PartsReader) -> Reading:
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
            return Reading(part if names_anything(part) else window, intent)
    return Reading(window, None)


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
    return is_question_word(word) or _VOCABULARY.fullmatch(word) is not None


# Code quoted in backticks with a space inside: a fragment ("`extends Foo`", "`new Foo()`"), not a
# name. Its words read as the question's own ("does `extends Foo`" asks what extends Foo).
_QUOTED = re.compile(r"`([^`]*)`")  # backtick pairs, from the left: "`a` (`b`)" quotes a and b


def _unquote_fragments(text: str) -> str:
    return _QUOTED.sub(lambda m: m.group(1) if any(c.isspace() for c in m.group(1)) else m.group(), text)


def _family_reading(text: str) -> Intent | None:
    """The family whose pattern reads the longest stretch of the text (the more of the question a
    reading explains, the likelier it is), the earlier family on a tie ("show me the methods" is a
    members question, "the methods called inside X" a longer callees one); None if none reads."""
    best: tuple[int, Intent] | None = None
    for family, patterns in _COMPILED:
        for pattern in patterns:
            found = pattern.search(text)
            if found is not None and (best is None or len(found.group()) > best[0]):
                best = (len(found.group()), family.intent)
    return best[1] if best is not None else None


def _read_misspelled(text: str) -> Intent | None:
    """The family reading of the text, else of the text with mistyped relation words corrected
    (`tribrid.query_spelling`): "functions calld from inside X"."""
    text = _drop_denials(_unquote_fragments(text))
    intent = _family_reading(text)
    if intent is not None:
        return intent
    corrected = correct_spelling(text)
    return _family_reading(corrected) if corrected != text else None


# A clause that opens with "not" says what is not asked ("what does X fan out to? not interested
# in who uses it", "its callees, not its callers"): it runs to the clause's end. "Not sure who
# calls X" is a hedge before the question, not a denial.
_DENIAL = re.compile(
    r"(?:^|(?<=[,(;:.?!\u2013\u2014-]))\s*(?:but\s+)?not\b(?!\s+(?:sure|certain|clear)\b)[^,.?!;)]*",
    re.IGNORECASE,
)


def _drop_denials(text: str) -> str:
    return _DENIAL.sub(" ", text)


# Where a sentence or a clause ends: its mark and the space after it.
_SENTENCE_BREAK = re.compile(r"(?<!\bi\.e)(?<!\be\.g)[.?!:;]\s+")  # "i.e." and "e.g." end nothing


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?:\(\))?")
# snake_case, camelCase / PascalCase with an inner capital, dotted names, calls "f()".
_CODE_LIKE = re.compile(r"_|[a-z][A-Z]|[A-Z]{2,}[a-z]|\.|\(\)")


def is_code_like(word: str) -> bool:
    return bool(_CODE_LIKE.search(word.strip("_") or word))


def classify_query(query: str, code_corpus: bool = True, names: Container[str] = frozenset()) -> QueryKind:
    """The query's kind; see `read_query`."""
    return read_query(query, code_corpus, names)[0]


def read_query(
    query: str, code_corpus: bool = True, names: Container[str] = frozenset()
) -> tuple[QueryKind, Intent | None]:
    """The query's kind, and what it asks for when it is structural (the question read once).
    On a corpus of documents (code_corpus False) a question is never about code structure ("who
    is a member of the council" asks about people, not class members) and a lone plain word is a
    word, not a name. `names`: the corpus's definition names, which make a question about one of
    them structural (`quote_known_names`); the other kinds are read from how the query is
    written."""
    intent = detect_intent(query, names) if code_corpus else None
    if intent is not None:
        return "structural", intent
    return _unstructured_kind(query, code_corpus), None


def _unstructured_kind(query: str, code_corpus: bool) -> QueryKind:
    """A query that asks no relation: identifier, mixed or natural by how it is written."""
    words = _WORD.findall(query)
    code = [w for w in words if is_code_like(w)]
    if not words:
        return "natural"
    if len(code) == len(words) or (code_corpus and len(words) == 1):
        return "identifier"  # a lone word is most likely a name looked up as such
    return "mixed" if code else "natural"
