"""The phrasing families: the ways English asks for one relation of code (verb question, relative
clause, passive, noun phrase, imperative, possessive), written as data over word classes, and the
reading of a text by them (`family_reading`, `read_misspelled`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from tribrid.question.spelling import correct_spelling

# The relations of code a structural question asks for (the contract's QueryIntent).
Intent = Literal["callers", "callees", "members", "subclasses", "bases", "importers"]

# Question understanding as data: word classes, then phrasing families written with them. A
# family is a way English asks for one relation (verb question, relative clause, passive, noun
# phrase, imperative, possessive); each has its own rows in tests/unit/test_question_reading.py. The name
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


def _compile(pattern: str, flags: int = re.IGNORECASE) -> re.Pattern[str]:
    return re.compile(pattern.format(**WORDS), flags)


# The relation words of the phrasing families: never a name, whatever the corpus defines. The
# import verbs are left out: "what does requires call" in a corpus defining `requires` is about it.
IMPORT_VERB = re.compile(WORDS["import"], re.IGNORECASE)
VOCABULARY = re.compile(
    "|".join(
        WORDS[cls]
        for cls in (
            *("find", "code", "call", "callers", "calling", "inheriting", "things", "anything"),
            *("callees", "members", "subclasses", "bases", "inherit", "inherited", "importers"),
        )
    ),
    re.IGNORECASE,
)

Compiled = tuple[tuple[Family, tuple[re.Pattern[str], ...]], ...]


@lru_cache(maxsize=1)
def _case_insensitive() -> Compiled:
    """The patterns, matching in any case: for text that is not all ASCII. Compiled on its first
    use, not at import: half of this module's 90 ms import, in every service that reads questions,
    for questions most corpora never get."""
    return tuple((family, tuple(_compile(p) for p in family.patterns)) for family in FAMILIES)


# The same patterns matched case-sensitively, for ASCII text lowered first. Their words are lower
# case, so on ASCII text they read exactly what the IGNORECASE ones read, at about 60 % of the
# cost (case-insensitive matching folds every character it compares; this was half the reader's).
_LOWERED: Compiled = tuple((family, tuple(_compile(p, 0) for p in family.patterns)) for family in FAMILIES)


# Code quoted in backticks with a space inside: a fragment ("`extends Foo`", "`new Foo()`"), not a
# name. Its words read as the question's own ("does `extends Foo`" asks what extends Foo).
QUOTED = re.compile(r"`([^`]*)`")  # backtick pairs, from the left: "`a` (`b`)" quotes a and b


def unquote_fragments(text: str) -> str:
    return QUOTED.sub(lambda m: m.group(1) if any(c.isspace() for c in m.group(1)) else m.group(), text)


def family_reading(text: str) -> Intent | None:
    """The family whose pattern reads the longest stretch of the text (the more of the question a
    reading explains, the likelier it is), the earlier family on a tie ("show me the methods" is a
    members question, "the methods called inside X" a longer callees one); None if none reads."""
    if text.isascii():
        return longest_reading(text.lower(), _LOWERED)
    return longest_reading(text, _case_insensitive())


def longest_reading(text: str, compiled: Compiled) -> Intent | None:
    """`family_reading` with these compiled patterns, on the text as given."""
    best: tuple[int, Intent] | None = None
    for family, patterns in compiled:
        for pattern in patterns:
            found = pattern.search(text)
            if found is not None and (best is None or len(found.group()) > best[0]):
                best = (len(found.group()), family.intent)
    return best[1] if best is not None else None


@lru_cache(maxsize=4096)
def read_misspelled(text: str) -> Intent | None:
    """The family reading of the text, else of the text with mistyped relation words corrected
    (`tribrid.question.spelling`): "functions calld from inside X". Cached: a message's parts are
    read again when its names are quoted, and a question asked again is not read again."""
    text = drop_denials(unquote_fragments(text))
    intent = family_reading(text)
    if intent is not None:
        return intent
    corrected = correct_spelling(text)
    return family_reading(corrected) if corrected != text else None


# A clause that opens with "not" says what is not asked ("what does X fan out to? not interested
# in who uses it", "its callees, not its callers"): it runs to the clause's end. "Not sure who
# calls X" is a hedge before the question, not a denial.
_DENIAL = re.compile(
    r"(?:^|(?<=[,(;:.?!\u2013\u2014-]))\s*(?:but\s+)?not\b(?!\s+(?:sure|certain|clear)\b)[^,.?!;)]*",
    re.IGNORECASE,
)


def drop_denials(text: str) -> str:
    return _DENIAL.sub(" ", text)
