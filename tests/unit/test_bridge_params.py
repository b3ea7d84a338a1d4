"""The HTTP bridge's routes from http rules and its path and query parameters, without a stack."""

from __future__ import annotations

import pytest
from google.api import http_pb2
from starlette.requests import Request

from services.bridge.app import BridgeError, parse_params
from services.bridge.contract import HttpRoute, http_route
from tribrid.v1 import common_pb2, fusion_options_pb2, fusion_pb2, graph_pb2


def _gethttp_route(method: str, template: str) -> HttpRoute:
    """A GET rule for a GraphSearch or Fusion RPC, as if the contract had one."""
    for name in ("GraphSearch", "Fusion"):
        service = (graph_pb2 if name == "GraphSearch" else fusion_pb2).DESCRIPTOR.services_by_name[name]
        if method in service.methods_by_name:
            return http_route(service, service.methods_by_name[method], http_pb2.HttpRule(get=template))
    raise KeyError(method)


def _request(route: HttpRoute, path: str, query: str) -> Request:
    params = dict(zip([p.replace(".", "__") for p in route.path_fields], path.split("/"), strict=True))
    return Request(
        {
            "type": "http",
            "method": "GET",
            "query_string": query.encode(),
            "path_params": params,
            "headers": [],
        }
    )


def test_query_and_path_parameters_fill_the_request() -> None:
    route = _gethttp_route("Neighbors", "/v1/{corpus_id}/neighbors/{entity.name}")
    assert route.starlette_path == "/v1/{corpus_id}/neighbors/{entity__name}"
    message = graph_pb2.NeighborsRequest()
    parse_params(
        _request(route, "shop/total_price", "direction=EDGE_DIRECTION_OUT&limit=3&relationship_type=calls"),
        route,
        message,
    )
    assert message == graph_pb2.NeighborsRequest(
        corpus_id="shop",
        entity=graph_pb2.EntityRef(name="total_price"),
        direction=graph_pb2.EDGE_DIRECTION_OUT,
        limit=3,
        relationship_type="calls",
    )
    search = _gethttp_route("Search", "/v1/search/{corpus_id}")
    request = common_pb2.SearchRequest()
    query = "query=cart&topK=4&includeContent=true&filters.languages=python&filters.languages=markdown"
    parse_params(
        _request(search, "shop", query + "&options.fusion.method=FUSION_METHOD_RRF"), search, request
    )
    assert request.top_k == 4 and request.include_content and request.HasField("top_k")
    assert list(request.filters.languages) == ["python", "markdown"]
    assert request.options.fusion.method == fusion_options_pb2.FUSION_METHOD_RRF


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("nope=1", "unknown query parameter 'nope'"),
        ("topK=1&topK=2", "given 2 times"),
        ("topK=many", "bad path or query parameter"),
        ("includeContent=maybe", "bad path or query parameter"),
        ("options=x", "unknown query parameter 'options'"),
        ("options.fusion.legs=x", "unknown query parameter"),
        ("corpusId=x", "set by the path"),
    ],
)
def test_bad_query_parameters(query: str, message: str) -> None:
    search = _gethttp_route("Search", "/v1/search/{corpus_id}")
    with pytest.raises(BridgeError) as excinfo:
        parse_params(_request(search, "shop", query), search, common_pb2.SearchRequest())
    assert excinfo.value.status == 400 and message in excinfo.value.message


def test_unsupported_rules_are_refused() -> None:
    with pytest.raises(ValueError, match="not a scalar request field"):
        _gethttp_route("Neighbors", "/v1/{entity}/neighbors")
    with pytest.raises(ValueError, match="not a scalar request field"):
        _gethttp_route("Neighbors", "/v1/{nothing}/neighbors")
    service = graph_pb2.DESCRIPTOR.services_by_name["GraphSearch"]
    with pytest.raises(ValueError, match="cannot have a body"):
        http_route(service, service.methods_by_name["Stats"], http_pb2.HttpRule(get="/x", body="*"))
    with pytest.raises(ValueError, match="body 'corpus_id' is not supported"):
        http_route(service, service.methods_by_name["Stats"], http_pb2.HttpRule(post="/x", body="corpus_id"))
