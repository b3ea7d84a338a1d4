"""Relation extraction's parts that need no model and no store: reading a model's answer, and the
config that turns it on."""

from __future__ import annotations

import pytest

from services.indexer.relation_extraction import parse_triples
from tribrid.config import TriBridConfig
from tribrid.generation import GenerationError


def test_a_fenced_array_of_triples_is_read() -> None:
    answer = '```json\n[{"source": "A", "relation": "MEMBER_OF", "target": "B"}]\n```'
    assert parse_triples(answer) == [("A", "MEMBER_OF", "B")]


@pytest.mark.parametrize("bad", ["{}", "not json", '[{"source": "a"}]', '["a"]'])
def test_an_answer_that_is_not_an_array_of_triples_is_refused(bad: str) -> None:
    with pytest.raises(GenerationError):
        parse_triples(bad)


def test_extraction_needs_a_model() -> None:
    with pytest.raises(ValueError, match=r"generation\.base_url"):
        TriBridConfig.model_validate({"entities": {"extract_relations": True}})
