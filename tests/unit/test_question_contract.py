"""The question reader's contract: the config's choices are the proto enums', a reading travels
to a leg and back unchanged, and the shipped reader weights are the fit of the shipped examples."""

from __future__ import annotations

from typing import Any, get_args

import grpc
import pytest
from google.protobuf.descriptor import EnumDescriptor

from evaluation.question_examples import QUESTION_BANKS, bank, load_examples
from evaluation.reader_model import fit
from tribrid.config import FusionConfig, GraphSearchConfig, QueryDirection, QueryKindName, SparseQueryMode
from tribrid.options import RequestError, spelling
from tribrid.question import Intent, Reading, learned
from tribrid.question.contract import from_proto, to_proto
from tribrid.v1 import fusion_options_pb2, graph_options_pb2, reading_pb2, sparse_options_pb2


def _spellings(enum: EnumDescriptor) -> set[str]:
    return {spelling(enum, value.number) for value in enum.values if value.number}


def _literal(model: Any, field: str) -> set[str]:
    return set(get_args(model.model_fields[field].annotation))


@pytest.mark.parametrize(
    ("choices", "enum"),
    [
        (set(get_args(QueryKindName)), reading_pb2.QueryKind.DESCRIPTOR),
        (set(get_args(Intent)), reading_pb2.QueryIntent.DESCRIPTOR),
        (_literal(FusionConfig, "method"), fusion_options_pb2.FusionMethod.DESCRIPTOR),
        (_literal(FusionConfig, "normalization"), fusion_options_pb2.Normalization.DESCRIPTOR),
        (_literal(FusionConfig, "expansion_placement"), fusion_options_pb2.ExpansionPlacement.DESCRIPTOR),
        (set(get_args(QueryDirection)), graph_options_pb2.GraphDirection.DESCRIPTOR),
        (set(get_args(SparseQueryMode)), sparse_options_pb2.SparseQueryMode.DESCRIPTOR),
    ],
    ids=lambda value: value.name if isinstance(value, EnumDescriptor) else "",
)
def test_the_configs_choices_are_the_proto_enums(choices: set[str], enum: EnumDescriptor) -> None:
    assert choices == _spellings(enum)


def test_graph_search_config_uses_the_direction_choices() -> None:
    assert _literal(GraphSearchConfig, "direction") == set(get_args(QueryDirection))


@pytest.mark.parametrize(
    "reading",
    [
        Reading("structural", "callers", "who calls parse_args?"),
        Reading("natural", None, "parse command line options"),
        Reading("mixed", "members", "methods of Foo"),  # read on a corpus of documents
    ],
)
def test_a_reading_travels_to_a_leg_unchanged(reading: Reading) -> None:
    assert from_proto(to_proto(reading), "the query") == reading


def test_a_request_without_a_reading_carries_none_and_an_empty_question_is_the_query() -> None:
    assert from_proto(reading_pb2.QueryReading(), "q") is None
    sent = reading_pb2.QueryReading(kind=reading_pb2.QUERY_KIND_IDENTIFIER)
    assert from_proto(sent, "parse_args") == Reading("identifier", None, "parse_args")


@pytest.mark.parametrize(
    ("message", "field"),
    [
        (reading_pb2.QueryReading(kind=99), "reading.kind"),  # type: ignore[arg-type]
        (reading_pb2.QueryReading(kind=1, intent=42), "reading.intent"),  # type: ignore[arg-type]
    ],
)
def test_an_unknown_reading_value_is_invalid_and_names_its_field(
    message: reading_pb2.QueryReading, field: str
) -> None:
    with pytest.raises(RequestError) as raised:
        from_proto(message, "q")
    assert raised.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert raised.value.message.startswith(field)


def test_the_shipped_reader_weights_read_as_a_fresh_fit_of_the_shipped_examples() -> None:
    examples = load_examples()
    texts = [e.text for e in examples] + [
        row.text.format(x="flush_buffers") for name in QUESTION_BANKS for row in bank(name)
    ]
    fresh = fit(examples)
    shipped = learned.Model.load()
    assert shipped.labels == fresh.labels
    for text in texts:
        masked = learned.mask_names(text)
        by_shipped, by_fresh = shipped.probabilities(masked), fresh.probabilities(masked)
        assert learned.likeliest(by_shipped) == learned.likeliest(by_fresh), text
        assert by_shipped == pytest.approx(by_fresh, abs=1e-6), text
