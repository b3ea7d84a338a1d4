"""The phrasing families read ASCII text lowered, with case-sensitive patterns (a speed-up): that must
read exactly what the case-insensitive patterns read, in any case the question is written in."""

from __future__ import annotations

import json
import re

from evaluation import REPO_ROOT
from evaluation.reader import NAMES
from tribrid.question import families
from tribrid.question.families import FAMILIES, WORDS, Intent, family_reading, longest_reading


def _reference(text: str) -> Intent | None:
    """The reading of the case-insensitive patterns, on the text as written."""
    return longest_reading(text, families._case_insensitive())


def _bank_questions() -> list[str]:
    texts: list[str] = []
    for path in sorted((REPO_ROOT / "evals" / "questions").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            texts.append(json.loads(line)["text"].replace("{x}", NAMES[len(texts) % len(NAMES)]))
    return texts


def test_the_patterns_words_are_lower_case() -> None:
    # an upper-case letter in a pattern would never match lowered text
    for family in FAMILIES:
        for raw in family.patterns:
            unescaped = re.sub(r"\\.", "", raw.format(**WORDS))
            assert unescaped == unescaped.lower(), raw


def test_lowered_ascii_text_reads_as_the_case_insensitive_patterns_do() -> None:
    texts = _bank_questions()
    assert len(texts) > 500
    read = 0
    for text in texts:
        for variant in (text, text.upper(), text.swapcase()):
            expected = _reference(variant)
            assert family_reading(variant) == expected, variant
            read += expected is not None
    assert read > 1000  # the comparison covers readings, not only texts no family reads


def test_non_ascii_text_keeps_the_case_insensitive_patterns() -> None:
    text = "WHO CALLS Ünïcode_name"
    assert not text.isascii()
    assert family_reading(text) == _reference(text) == "callers"
