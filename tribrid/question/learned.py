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
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
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
        text = _replace_whole(text, name)
    return text


def _replace_whole(text: str, name: str) -> str:
    """The text with each whole occurrence of `name` (no word character or dot before it, no word
    character after it) as the placeholder. A scan with str.find: a regex per name would be
    compiled for nearly every new question."""
    out: list[str] = []
    start = done = 0
    while (at := text.find(name, start)) >= 0:
        end = at + len(name)
        if (at == 0 or not _joins(text[at - 1], ".")) and (end == len(text) or not _joins(text[end])):
            out += (text[done:at], PLACEHOLDER)
            start = done = end
        else:
            start = at + 1
    return "".join(out) + text[done:] if out else text


def _joins(char: str, also: str = "") -> bool:
    """The character continues a word (regex \\w), or is `also`."""
    return char.isalnum() or char == "_" or char in also


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

    # The hot path's forms, made on first use.
    @cached_property
    def _blocks(self) -> tuple[tuple[Callable[[str], list[str]], dict[str, int], int], ...]:
        """Each feature block: its n-grams, their columns in the block, the block's first column."""
        return ((word_ngrams, self.word_index, 0), (char_ngrams, self.char_index, len(self.word_index)))

    @cached_property
    def _idf(self) -> npt.NDArray[np.float64]:
        """Every feature's inverse document frequency, word features first."""
        return np.concatenate([self.word_idf, self.char_idf])

    def probabilities(self, masked: str) -> dict[str, float]:
        """How likely the masked text asks for each label; they sum to 1. TfidfVectorizer's
        features (sublinear counts times idf, each block scaled to unit length), then the
        classifier's softmax."""
        scores = self.intercept.copy()
        for ngrams, index, offset in self._blocks:
            found = [
                (column + offset, n)
                for gram, n in Counter(ngrams(masked)).items()
                if (column := index.get(gram)) is not None
            ]
            if not found:
                continue
            columns, counts = np.array(found).T
            weights = (1.0 + np.log(counts)) * self._idf[columns]
            scores += weights @ self.coef[columns] / math.sqrt(weights @ weights)
        exp = np.exp(scores - scores.max())
        return dict(zip(self.labels, (exp / exp.sum()).tolist(), strict=True))


_model: Model | None = None


def load(model: Model | None = None) -> None:
    """Load the shipped weights now, or use `model` (an evaluation fits one that holds some
    question banks out). A service does it before it serves, not on its first question."""
    global _model
    _model = Model.load() if model is None else model
    _masked_probabilities.cache_clear()


def probabilities(text: str) -> dict[str, float]:
    """How likely the text asks for each relation, and for none (NO_RELATION); they sum to 1."""
    return probabilities_of([text])[0]


def likeliest(probability: dict[str, float]) -> str:
    """The label with the highest probability (the first by name on a tie: the same text always
    reads the same)."""
    return max(sorted(probability), key=probability.__getitem__)


def probabilities_of(texts: Sequence[str]) -> list[dict[str, float]]:
    """`probabilities` of each text."""
    return [_masked_probabilities(mask_names(text)) for text in texts]


@lru_cache(maxsize=4096)
def _masked_probabilities(masked: str) -> dict[str, float]:
    """The loaded model's probabilities of a masked text; a question asked again is not read again
    (callers only read the result)."""
    if _model is None:
        load()
    assert _model is not None
    return _model.probabilities(masked)
