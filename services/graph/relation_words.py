"""Which of a seed's typed relations a question names.

"Who is Mme Coquenard's husband?" names FAMILY_OF {kind: husband}; "贾蓉的父亲是谁" names
FAMILY_OF {label: 父/子}. A question names a relation when, outside the seeds' own names, it holds
- every word of the relation's type (MEMBER_OF: member) or of one of its string properties
  (role: lackey; kind: brother-in-law), compared by English stem, case and accents folded, words
  of at least MIN_WORD letters that are not stop words (a property that is a sentence, such as a
  reason, is rarely all in a question);
- or one of the properties' runs of Han or kana: those scripts have no word boundaries
  (父 in 父亲).

A relation type alone carries no words in Chinese, and the untyped kinds (RELATED_TO) none at all.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from dataclasses import dataclass

import regex

from tribrid.text import PROSE_STOPWORDS, fold, stem

_CJK_RUN = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}ー]+")
# a word of a script with word boundaries: letters and marks, neither Han nor kana
_WORD = regex.compile(r"(?:(?![\p{Han}\p{Hiragana}\p{Katakana}])[\p{L}\p{M}])+")
# Shorter words ("of", "b", a source's type codes) say nothing about a relation.
MIN_WORD = 3


def _stems(text: str) -> set[str]:
    words = (fold(w.lower()) for w in _WORD.findall(text))
    return {stem(w) for w in words if len(w) >= MIN_WORD and w not in PROSE_STOPWORDS}


@dataclass(frozen=True, slots=True)
class RelationTerms:
    phrases: frozenset[frozenset[str]]  # the stems of the type's name and of each property
    runs: frozenset[str]  # the properties' runs of Han or kana


@functools.lru_cache(maxsize=1 << 12)  # one per distinct (type, properties) of a graph's edges
def relation_terms(rel_type: str, properties: str) -> RelationTerms:
    """The words of a relation: its type's (`member_of`: member) and its string properties'."""
    values: list[str] = []
    if properties:
        loaded = json.loads(properties)
        if isinstance(loaded, dict):
            values = [v for v in loaded.values() if isinstance(v, str)]
    phrases = frozenset(frozenset(_stems(text)) for text in (rel_type.replace("_", " "), *values))
    runs = frozenset(run for value in values for run in _CJK_RUN.findall(value))
    return RelationTerms(phrases - {frozenset()}, runs)


@dataclass(frozen=True, slots=True)
class QuestionTerms:
    """A question's words outside the names it was seeded by."""

    stems: frozenset[str]
    text: str  # the question with those names blanked out: where Han and kana runs are looked for

    @classmethod
    def of(cls, query: str, names: Iterable[str]) -> QuestionTerms:
        by_length = sorted({n for n in names if n}, key=len, reverse=True)
        named_stems: set[str] = set()
        text = query.lower()
        for name in by_length:
            named_stems |= _stems(name)
            text = text.replace(name.lower(), " ")
        return cls(frozenset(_stems(query) - named_stems), text)

    def names(self, rel_type: str, properties: str) -> bool:
        """Whether the question names a relation of this type with these properties."""
        terms = relation_terms(rel_type, properties)
        return any(phrase <= self.stems for phrase in terms.phrases) or any(
            run in self.text for run in terms.runs
        )
