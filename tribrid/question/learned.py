"""The learned reader: how likely a question asks for each relation of code, or for none. It checks
the phrasing families of `tribrid.question.families` and reads what they miss.

A multinomial logistic regression over TF-IDF word 1-2-grams and character 2-5-grams of the
question with its names masked (the wording counts, not the name; inflections, typos and other
languages' forms of one stem share character n-grams). It is fitted ahead of time from the labelled
examples of evals/ (`make reader`: `evaluation.reader_model`, with scikit-learn) and ships as its
weights (reader_weights.npz beside this file). Reading a question here is a dictionary look-up per
n-gram and one small matrix product: no scikit-learn at run time, nothing fitted at start-up.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import numpy.typing as npt

from tribrid.question.words import is_question_word, is_written_as_code, written_names

WEIGHTS = Path(__file__).with_name("reader_weights.npz")
NO_RELATION = "none"  # the label of an example that asks for no relation of code
PLACEHOLDER = "foo"
# The features, as `evaluation.reader_model` fits them (scikit-learn's TfidfVectorizer settings).
WORD_NGRAMS = (1, 2)
CHAR_NGRAMS = (2, 5)
CHAR_MIN_DF = 2
_TOKEN = re.compile(r"(?u)\b\w\w+\b")  # TfidfVectorizer's token_pattern
_WHITE_SPACES = re.compile(r"\s\s+")  # collapsed before character n-grams, as TfidfVectorizer does
# A single name in quotes or backticks, replaced whole first: `written_names` reads reST's
# ``literal`` as two backtick spans around a word, which would leave stray backticks behind.
_QUOTED_WORD = re.compile(r"`[^`\s]+`|'[A-Za-z_][\w.]*(?:\(\))?'|\"[A-Za-z_][\w.]*(?:\(\))?\"")
_SEPARATOR = "\x00"  # joins the vocabulary in the weights file: no n-gram holds it


def mask_names(text: str) -> str:
    """The text with each name written in it (`words.written_names`: quoted, code-like or
    capitalized inside a sentence) as one placeholder; a capitalized word questions are made of
    stays ("View Call Hierarchy > Calls To 'X'": a menu's labels)."""
    text = _QUOTED_WORD.sub(PLACEHOLDER, text)
    names = {name for name in written_names(text) if is_written_as_code(name) or not is_question_word(name)}
    for name in sorted(names, key=len, reverse=True):
        text = re.sub(rf"(?<![\w.]){re.escape(name)}(?![\w])", PLACEHOLDER, text)
    return text


def word_ngrams(text: str) -> list[str]:
    tokens = _TOKEN.findall(text.lower())
    grams = list(tokens)
    for n in range(max(2, WORD_NGRAMS[0]), WORD_NGRAMS[1] + 1):
        grams += [" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
    return grams


def char_ngrams(text: str) -> list[str]:
    text = _WHITE_SPACES.sub(" ", text.lower())
    return [
        text[i : i + n]
        for n in range(CHAR_NGRAMS[0], min(CHAR_NGRAMS[1], len(text)) + 1)
        for i in range(len(text) - n + 1)
    ]


@dataclass(frozen=True)
class Model:
    """The fitted reader: each feature block's vocabulary (n-gram -> column) and inverse document
    frequencies, and the classifier's weights (features x labels) and intercepts."""

    labels: tuple[str, ...]
    word_index: dict[str, int]
    word_idf: npt.NDArray[np.float64]
    char_index: dict[str, int]
    char_idf: npt.NDArray[np.float64]
    coef: npt.NDArray[np.float64]  # word features first, then character features
    intercept: npt.NDArray[np.float64]

    def save(self, path: Path) -> None:
        words = sorted(self.word_index, key=self.word_index.__getitem__)
        chars = sorted(self.char_index, key=self.char_index.__getitem__)
        np.savez_compressed(
            path,
            labels=np.array(_SEPARATOR.join(self.labels)),
            words=np.array(_SEPARATOR.join(words)),
            chars=np.array(_SEPARATOR.join(chars)),
            # single precision halves the file; probabilities move by about 1e-7
            word_idf=self.word_idf.astype(np.float32),
            char_idf=self.char_idf.astype(np.float32),
            coef=self.coef.astype(np.float32),
            intercept=self.intercept.astype(np.float32),
        )

    @classmethod
    def load(cls, path: Path = WEIGHTS) -> Model:
        with np.load(path) as saved:
            words = str(saved["words"]).split(_SEPARATOR)
            chars = str(saved["chars"]).split(_SEPARATOR)
            return cls(
                labels=tuple(str(saved["labels"]).split(_SEPARATOR)),
                word_index={w: i for i, w in enumerate(words)},
                word_idf=saved["word_idf"].astype(np.float64),
                char_index={c: i for i, c in enumerate(chars)},
                char_idf=saved["char_idf"].astype(np.float64),
                coef=saved["coef"].astype(np.float64),
                intercept=saved["intercept"].astype(np.float64),
            )

    # The hot path's forms, made on first use (a numpy scalar costs more to read than a float).
    @cached_property
    def _idf(self) -> list[float]:
        """Every feature's inverse document frequency, word features first."""
        return [*self.word_idf.tolist(), *self.char_idf.tolist()]

    @cached_property
    def _blocks(self) -> tuple[tuple[Callable[[str], list[str]], dict[str, int], int], ...]:
        """Each feature block: its n-grams, their columns in the block, the block's first column."""
        return ((word_ngrams, self.word_index, 0), (char_ngrams, self.char_index, len(self.word_index)))

    def probabilities(self, masked: str) -> dict[str, float]:
        """How likely the masked text asks for each label; they sum to 1. TfidfVectorizer's
        features (sublinear counts times idf, each block scaled to unit length), then the
        classifier's softmax."""
        scores = self.intercept.copy()
        idf = self._idf
        for ngrams, index, offset in self._blocks:
            counts: dict[int, int] = {}
            for gram in ngrams(masked):
                column = index.get(gram)
                if column is not None:
                    counts[column + offset] = counts.get(column + offset, 0) + 1
            if not counts:
                continue
            columns = list(counts)
            weights = [(1.0 + math.log(n)) * idf[column] for column, n in counts.items()]
            norm = math.sqrt(math.fsum(w * w for w in weights))
            scores += np.asarray(weights) @ self.coef[columns] / norm
        exp = np.exp(scores - scores.max())
        return dict(zip(self.labels, map(float, exp / exp.sum()), strict=True))


_model: Model | None = None


def load(model: Model | None = None) -> None:
    """Load the shipped weights now, or use `model` (an evaluation fits one that holds some
    question banks out). A service does it before it serves, not on its first question."""
    global _model
    _model = Model.load() if model is None else model


def probabilities(text: str) -> dict[str, float]:
    """How likely the text asks for each relation, and for none (NO_RELATION); they sum to 1."""
    return probabilities_of([text])[0]


def likeliest(probability: dict[str, float]) -> str:
    """The label with the highest probability (the first by name on a tie: the same text always
    reads the same)."""
    return max(sorted(probability), key=probability.__getitem__)


def probabilities_of(texts: Sequence[str]) -> list[dict[str, float]]:
    """`probabilities` of each text."""
    if _model is None:
        load()
    assert _model is not None
    return [_model.probabilities(mask_names(text)) for text in texts]
