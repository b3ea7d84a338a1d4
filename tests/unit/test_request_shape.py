"""A JSON body's message fields given something other than an object are named, with what they take."""

from __future__ import annotations

from services.bridge.request_shape import shape_error
from tribrid.v1 import common_pb2, fusion_options_pb2, fusion_pb2, graph_pb2


def test_a_message_field_must_be_an_object() -> None:
    neighbours = graph_pb2.NeighborsRequest.DESCRIPTOR
    assert shape_error({"corpusId": "c", "entity": {"name": "宝钗"}}, neighbours) is None
    assert shape_error({"corpus_id": "c", "entity": "宝钗"}, neighbours) == (
        "entity: expected a JSON object (EntityRef: entityId, qualifiedName, name), got a string ('宝钗')"
    )
    assert shape_error({"entity": None}, neighbours) is None  # null is the field's default


def test_nested_fields_are_named_by_their_path() -> None:
    search = common_pb2.SearchRequest.DESCRIPTOR
    error = shape_error({"query": "q", "options": {"fusion": 5}}, search)
    assert error is not None and error.startswith("options.fusion: expected a JSON object (FusionOptions:")
    assert error.endswith("got a number")
    assert shape_error({"query": "q", "filters": [1]}, search) == (
        "filters: expected a JSON object (SearchFilters: pathGlob, languages), got an array"
    )


def test_repeated_messages_and_maps_are_checked() -> None:
    fusion = fusion_options_pb2.FusionOptions.DESCRIPTOR
    assert shape_error({"legs": [{"leg": "LEG_VECTOR", "weight": 0.5}]}, fusion) is None
    assert shape_error({"legs": [{"leg": "LEG_VECTOR"}, "sparse"]}, fusion) == (
        "legs[1]: expected a JSON object (LegSetting: leg, enabled, weight, minScore),"
        " got a string ('sparse')"
    )
    assert shape_error({"legs": {"leg": "LEG_VECTOR"}}, fusion) == (
        "legs: expected a JSON array of objects (LegSetting: leg, enabled, weight, minScore), got an object"
    )
    answer = fusion_pb2.FusionSearchResponse.DESCRIPTOR  # a map of scalars: its values are json_format's
    assert shape_error({"weights": {"vector": 0.5}}, answer) is None
    assert shape_error({"weights": [0.5]}, answer) == "weights: expected a JSON object (a map), got an array"


def test_scalars_and_unknown_fields_are_left_to_json_format() -> None:
    search = common_pb2.SearchRequest.DESCRIPTOR
    assert shape_error({"topK": "many", "noSuchField": {"a": 1}}, search) is None
