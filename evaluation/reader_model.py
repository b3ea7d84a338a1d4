"""Fits the learned reader (`tribrid.question.learned`) on the labelled examples of
evals/question_examples.jsonl and writes its weights into the package (`make reader`):

    .venv/bin/python -m evaluation.question_examples   # the examples, from evals/
    .venv/bin/python -m evaluation.reader_model        # tribrid/question/reader_weights.npz

scikit-learn fits it; the services read with the weights alone.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from evaluation.question_examples import EXAMPLES, Example, load_examples
from tribrid.question import learned

# The inverse of the L2 penalty: from 2 to 10 read the held-out banks alike (0.872-0.887).
REGULARIZATION_C = 8.0


def fit(examples: Sequence[Example]) -> learned.Model:
    """The reader fit on examples whose names are masked already."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    words = TfidfVectorizer(sublinear_tf=True, ngram_range=learned.WORD_NGRAMS)
    chars = TfidfVectorizer(
        sublinear_tf=True, analyzer="char", ngram_range=learned.CHAR_NGRAMS, min_df=learned.CHAR_MIN_DF
    )
    texts = [e.text for e in examples]
    from scipy.sparse import hstack

    features = hstack([words.fit_transform(texts), chars.fit_transform(texts)]).tocsr()
    # newton-cg reaches the same optimum as lbfgs here in a tenth of the time (6 steps)
    classifier = LogisticRegression(C=REGULARIZATION_C, solver="newton-cg", max_iter=200)
    classifier.fit(features, [e.reading for e in examples])
    return learned.Model(
        labels=tuple(str(label) for label in classifier.classes_),
        word_index={str(w): int(i) for w, i in words.vocabulary_.items()},
        word_idf=np.asarray(words.idf_, dtype=np.float64),
        char_index={str(c): int(i) for c, i in chars.vocabulary_.items()},
        char_idf=np.asarray(chars.idf_, dtype=np.float64),
        coef=np.ascontiguousarray(classifier.coef_.T, dtype=np.float64),
        intercept=np.asarray(classifier.intercept_, dtype=np.float64),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--examples", type=Path, default=EXAMPLES)
    parser.add_argument("--out", type=Path, default=learned.WEIGHTS)
    args = parser.parse_args()
    examples = load_examples(args.examples)
    model = fit(examples)
    model.save(args.out)
    print(f"{len(examples)} examples, {model.coef.shape[0]} features -> {args.out}")


if __name__ == "__main__":
    main()
