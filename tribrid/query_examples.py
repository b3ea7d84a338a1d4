"""What a question asks, read by a classifier learned from labelled examples: the check on the
phrasing families of `tribrid.query_kind`, and the reading of what they miss.

The examples (tribrid/data/question_examples.jsonl, written by `python -m
tribrid.eval.question_examples`) are wordings of questions labelled with the relation of code they
ask for, or "none" for those that ask none (how-to questions, docstrings, FAQ questions, bare
names), from tuning data only: the phrasing tables and wording rounds not held out, and the
question banks of evals/questions/, each written by a helper that never saw the reader. Every
name written in a question is replaced by one placeholder first: the wording counts, not the name.

The classifier is a multinomial logistic regression over TF-IDF word 1-2-grams and character
2-5-grams (inflections, typos and other languages' forms of the same stems share them), fit when a
service starts (about 2 s). Each bank held out in turn, the reader (`query_kind.read_question`:
the families checked and completed by it) reads 0.88 of the bank's questions right, where the
families alone read 0.60; the rules it replaced (relation cues, nearest examples) read 0.63 of the
first five banks and took 188 of their 700 questions that ask nothing for structural ones, where
it takes 22 of 980 (`python -m tribrid.eval.reader`; evals/README.md, "A learned reading of
questions").
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tribrid.query_cues import is_question_word, is_written_as_code, written_names

if TYPE_CHECKING:
    from sklearn.pipeline import Pipeline

EXAMPLES = Path(__file__).parent / "data" / "question_examples.jsonl"
NO_RELATION = "none"  # the label of an example that asks for no relation of code
PLACEHOLDER = "foo"
# The inverse of the L2 penalty: from 2 to 10 read the held-out banks alike (0.872-0.887).
REGULARIZATION_C = 8.0
# A single name in quotes or backticks, replaced whole first: `written_names` reads reST's
# ``literal`` as two backtick spans around a word, which would leave stray backticks behind.
_QUOTED_WORD = re.compile(r"`[^`\s]+`|'[A-Za-z_][\w.]*(?:\(\))?'|\"[A-Za-z_][\w.]*(?:\(\))?\"")


@dataclass(frozen=True, slots=True)
class Example:
    text: str
    reading: str  # an Intent of tribrid.query_kind, or NO_RELATION


def mask_names(text: str) -> str:
    """The text with each name written in it (`query_cues.written_names`: quoted, code-like or
    capitalized inside a sentence) as one placeholder; a capitalized word questions are made of
    stays ("View Call Hierarchy > Calls To 'X'": a menu's labels)."""
    text = _QUOTED_WORD.sub(PLACEHOLDER, text)
    names = {name for name in written_names(text) if is_written_as_code(name) or not is_question_word(name)}
    for name in sorted(names, key=len, reverse=True):
        text = re.sub(rf"(?<![\w.]){re.escape(name)}(?![\w])", PLACEHOLDER, text)
    return text


def load_examples(path: Path = EXAMPLES) -> list[Example]:
    with path.open(encoding="utf-8") as lines:
        return [Example(row["text"], row["reading"]) for row in map(json.loads, lines)]


def fit(examples: Sequence[Example]) -> Pipeline:
    """The classifier, fit on examples whose names are masked already."""
    # scikit-learn takes most of a second to import: only a service that reads questions pays it
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline, make_union

    features = make_union(
        TfidfVectorizer(sublinear_tf=True, ngram_range=(1, 2)),
        TfidfVectorizer(sublinear_tf=True, analyzer="char", ngram_range=(2, 5), min_df=2),
    )
    # newton-cg reaches the same optimum as lbfgs here in a tenth of the time (6 steps)
    classifier = LogisticRegression(C=REGULARIZATION_C, solver="newton-cg", max_iter=200)
    model = make_pipeline(features, classifier)
    return model.fit([e.text for e in examples], [e.reading for e in examples])


_fitted: Pipeline | None = None


def load(examples: Sequence[Example] | None = None) -> None:
    """Fit the classifier now, on the shipped examples or on `examples` (an evaluation that holds
    some out). A service does it before it serves, not on its first question."""
    global _fitted
    _fitted = fit(load_examples() if examples is None else examples)


def probabilities(text: str) -> dict[str, float]:
    """How likely the text asks for each relation, and for none (NO_RELATION); they sum to 1."""
    return probabilities_of([text])[0]


def likeliest(probability: dict[str, float]) -> str:
    """The label with the highest probability (the first by name on a tie: the same text always
    reads the same)."""
    return max(sorted(probability), key=probability.__getitem__)


def probabilities_of(texts: Sequence[str]) -> list[dict[str, float]]:
    """`probabilities` of each text, in one call to the classifier."""
    if not texts:
        return []
    if _fitted is None:
        load()
    assert _fitted is not None
    rows = _fitted.predict_proba([mask_names(text) for text in texts])
    labels = [str(label) for label in _fitted.classes_]
    return [dict(zip(labels, map(float, row), strict=True)) for row in rows]
