"""Mistyped relation words in a structural question ("any clases that inhert from X", "funcs
called by X in its implmentation"): each word one edit (insert, delete, substitute or swap two
letters, rapidfuzz's OSA distance) from exactly one word of the question vocabulary is read as that
word. The question reader tries this only when the text as typed reads as no question, so a word
spelled right is never changed into another.

The vocabulary is the words that carry a relation, and "which", the opener of most questions. Short
words (under MIN_WORD_CHARS) are left alone: one edit turns "calls" into "cells" and "uses" into
"user", and a four-letter typo has too many neighbours to say which word was meant. Names are never
corrected: a word written as code (snake_case, camelCase, backticked) is not looked at.
"""

from __future__ import annotations

import re
from functools import lru_cache

from rapidfuzz.distance import OSA
from rapidfuzz.process import extract

MIN_WORD_CHARS = 5
MAX_EDITS = 1
VOCABULARY: tuple[str, ...] = tuple(
    """which classes class function functions method methods inherit inherits inherited
    inheriting inheritance extend extends extended extending derive derives derived deriving
    implement implements implemented implementing implementation implementations implementor
    implementors implementer implementers subclass subclasses subclassed subclassing superclass
    superclasses instantiate instantiates instantiated instantiating instantiation invoke invokes
    invoked invoking invocation invocations caller callers callee callees called calling usages
    descendant descendants children parent parents override overrides overridden""".split()
)
_KNOWN = frozenset(VOCABULARY)
# a lower-case word; anything with a digit, an underscore, a capital or a backtick is a name
_PLAIN_WORD = re.compile(r"(?<![\w`])[a-z]+(?![\w`])")


def correct_spelling(text: str) -> str:
    """The text with each mistyped vocabulary word replaced by the word meant."""
    return _PLAIN_WORD.sub(lambda m: _meant(m.group()), text)


@lru_cache(maxsize=8192)  # the words of questions repeat; the fuzzy look-up is the slow part
def _meant(word: str) -> str:
    if len(word) < MIN_WORD_CHARS or word in _KNOWN:
        return word
    near = extract(word, VOCABULARY, scorer=OSA.distance, score_cutoff=MAX_EDITS, limit=None)
    meant = {candidate for candidate, _, _ in near}
    # "clases" is one edit from "class" and "classes": either reads the same; prefer the longer
    # only when all candidates share a stem, else the typo is ambiguous and stays as typed.
    if not meant:
        return word
    longest = max(meant, key=len)
    return longest if all(longest.startswith(m) for m in meant) else word
