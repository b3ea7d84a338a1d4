"""A structural question read by its nearest labelled examples, for what the phrasing families and
relation cues of `tribrid.query_kind` do not settle.

The examples (tribrid/data/question_examples.jsonl, written by `python -m
tribrid.eval.question_examples`) are wordings of structural questions, each labelled with the
relation it asks for, and questions that ask none ("none": how-to questions, docstrings, FAQ
questions, bare names), all from the tuning data only. A question is compared with them by TF-IDF
cosine over its words, with every name written in it replaced by one placeholder: the wording
counts, not the name. Its reading is the label with the most similarity among its NEIGHBOURS
nearest examples.

Only a question no rule reads is read so (`query_kind.read_question`): a held-out round of
wordings, written by people who never saw the reader, is read by the rules tuned on earlier rounds
with about a third of its wordings left unread, and most of those are read right by their nearest
examples; the examples that ask no relation keep how-to questions from being read so
(evals/README.md, "Rounds 11-13, and a question read by its nearest examples").
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from tribrid.query_cues import written_names

if TYPE_CHECKING:
    from scipy.sparse import csr_matrix

EXAMPLES = Path(__file__).parent / "data" / "question_examples.jsonl"
NO_RELATION = "none"  # the label of an example that asks for no relation of code
NEIGHBOURS = 3
# How close the nearest examples (all NEIGHBOURS of one reading) must be to read a question.
MIN_SIMILARITY_TO_READ = 0.3
PLACEHOLDER = "foo"
# A single name in quotes or backticks, replaced whole first: `written_names` reads reST's
# ``literal`` as two backtick spans around a word, which would leave stray backticks behind.
_QUOTED_WORD = re.compile(r"`[^`\s]+`|'[A-Za-z_][\w.]*(?:\(\))?'|\"[A-Za-z_][\w.]*(?:\(\))?\"")


@dataclass(frozen=True, slots=True)
class Example:
    text: str
    reading: str  # an Intent of tribrid.query_kind, or NO_RELATION


def mask_names(text: str) -> str:
    """The text with each name written in it (`query_cues.written_names`: quoted, code-like or
    capitalized inside a sentence) as one placeholder."""
    text = _QUOTED_WORD.sub(PLACEHOLDER, text)
    for name in sorted(set(written_names(text)), key=len, reverse=True):
        text = re.sub(rf"(?<![\w.]){re.escape(name)}(?![\w])", PLACEHOLDER, text)
    return text


def load_examples(path: Path = EXAMPLES) -> list[Example]:
    with path.open(encoding="utf-8") as lines:
        return [Example(row["text"], row["reading"]) for row in map(json.loads, lines)]


@dataclass(frozen=True)
class _Index:
    vectorizer: Any  # sklearn's TfidfVectorizer, imported when the index is built
    matrix: csr_matrix
    readings: tuple[str, ...]


@functools.cache
def _index() -> _Index:
    # scikit-learn takes most of a second to import: only a reading that needs the examples pays it
    from sklearn.feature_extraction.text import TfidfVectorizer

    examples = load_examples()
    vectorizer = TfidfVectorizer(sublinear_tf=True)
    matrix = vectorizer.fit_transform([e.text for e in examples])
    return _Index(vectorizer, matrix.tocsr(), tuple(e.reading for e in examples))


def load() -> None:
    """Build the index now (a service does it before it serves, not on its first question)."""
    _index()


class Nearest(NamedTuple):
    reading: str  # an Intent, or NO_RELATION
    similarity: float  # the most similar example's of that reading, 0..1
    agreeing: int  # how many of the NEIGHBOURS nearest have that reading


def nearest_reading(text: str) -> Nearest:
    """The reading of the text's NEIGHBOURS nearest examples."""
    index = _index()
    similarity = (index.matrix @ index.vectorizer.transform([mask_names(text)]).T).toarray().ravel()
    nearest = (-similarity).argsort(kind="stable")[:NEIGHBOURS]  # ties: the earlier example
    votes: dict[str, float] = {}
    closest: dict[str, float] = {}
    for i in nearest:
        reading = index.readings[i]
        votes[reading] = votes.get(reading, 0.0) + float(similarity[i])
        closest[reading] = max(closest.get(reading, 0.0), float(similarity[i]))
    # most similarity first, then the label's name: the same examples always read the same
    reading = min(votes, key=lambda r: (-votes[r], r))
    return Nearest(reading, closest[reading], sum(index.readings[i] == reading for i in nearest))
