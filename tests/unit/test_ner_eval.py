"""The NER eval's scoring (exact and lenient matches) on a hand example, and the gold sample's
integrity."""

from __future__ import annotations

import pytest

from evaluation.ner import GOLD, Labelled, load_gold, score

SENTENCE = "Ian Murdock founded the Debian Project in Indiana, then moved to Berlin."
GOLD_SPANS = [
    Labelled("PERSON", 0, 11),  # Ian Murdock
    Labelled("ORG", 24, 38),  # Debian Project
    Labelled("GPE", 42, 49),  # Indiana
    Labelled("GPE", 65, 71),  # Berlin
]
PREDICTED = [
    Labelled("PERSON", 0, 11),  # exact
    Labelled("ORG", 20, 38),  # "the Debian Project": overlaps, not exact
    Labelled("PERSON", 42, 49),  # Indiana with the wrong type
    Labelled("GPE", 65, 71),  # exact
    Labelled("GPE", 66, 71),  # a second overlap of Berlin: Berlin is already matched
    Labelled("DATE", 51, 55),  # another type: ignored
]


def test_example_offsets() -> None:
    assert [SENTENCE[e.start : e.end] for e in GOLD_SPANS] == [
        "Ian Murdock",
        "Debian Project",
        "Indiana",
        "Berlin",
    ]
    assert [SENTENCE[e.start : e.end] for e in PREDICTED][1:] == [
        "the Debian Project",
        "Indiana",
        "Berlin",
        "erlin",
        "then",
    ]


def test_exact_scores() -> None:
    scores = score([GOLD_SPANS], [PREDICTED], lenient=False)
    assert (scores["PERSON"].gold, scores["PERSON"].predicted) == (1, 2)
    assert scores["PERSON"].precision == 0.5 and scores["PERSON"].recall == 1.0
    assert scores["ORG"].precision == 0.0 and scores["ORG"].recall == 0.0 and scores["ORG"].f1 == 0.0
    assert scores["GPE"].precision == 0.5 and scores["GPE"].recall == 0.5
    # all: 4 gold, 5 predictions (DATE ignored), 2 exact matches
    assert (scores["all"].gold, scores["all"].predicted, scores["all"].matched_gold) == (4, 5, 2)
    assert scores["all"].precision == pytest.approx(2 / 5)
    assert scores["all"].recall == pytest.approx(2 / 4)
    assert scores["all"].f1 == pytest.approx(2 * 0.4 * 0.5 / 0.9)


def test_lenient_scores() -> None:
    scores = score([GOLD_SPANS], [PREDICTED], lenient=True)
    assert scores["ORG"].precision == 1.0 and scores["ORG"].recall == 1.0
    assert scores["GPE"].matched_gold == 1 and scores["GPE"].matched_predicted == 1  # one to one
    assert scores["GPE"].precision == 0.5 and scores["GPE"].recall == 0.5
    assert scores["PERSON"].precision == 0.5  # a type mismatch never matches
    assert (scores["all"].matched_gold, scores["all"].matched_predicted) == (3, 3)


def test_gold_sample_is_big_enough_and_consistent() -> None:
    samples = load_gold(GOLD)  # raises if an offset does not cover its surface form
    types = [e.type for s in samples for e in s.entities]
    assert len(types) >= 100
    assert {t: types.count(t) for t in set(types)} == {"PERSON": 85, "ORG": 65, "GPE": 50}
