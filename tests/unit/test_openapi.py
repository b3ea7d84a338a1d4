"""The bridge's OpenAPI document against the descriptors it is built from.

The checks read the descriptors and the `google.api.http` options themselves (not through the
bridge's own reading of them), and each is shown to catch a document that lost something.
"""

from __future__ import annotations

import copy
import importlib
import json
import pkgutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.api import annotations_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor, MethodDescriptor, ServiceDescriptor

import tribrid.v1
from services.bridge import openapi

NDJSON = "application/x-ndjson"

F = FieldDescriptor
# proto3 JSON: how json_format writes each scalar type
JSON_TYPES = {
    F.TYPE_DOUBLE: "number",
    F.TYPE_FLOAT: "number",
    F.TYPE_INT32: "integer",
    F.TYPE_SINT32: "integer",
    F.TYPE_SFIXED32: "integer",
    F.TYPE_UINT32: "integer",
    F.TYPE_FIXED32: "integer",
    F.TYPE_INT64: "string",
    F.TYPE_SINT64: "string",
    F.TYPE_SFIXED64: "string",
    F.TYPE_UINT64: "string",
    F.TYPE_FIXED64: "string",
    F.TYPE_BOOL: "boolean",
    F.TYPE_STRING: "string",
    F.TYPE_BYTES: "string",
}
BRIDGE_PATHS = {"/healthz", "/readyz", "/openapi.json"}
Rule = tuple[ServiceDescriptor, MethodDescriptor, str, str, str]  # service, method, verb, path, body


def contract_rules() -> list[Rule]:
    """Every http rule of every tribrid.v1 service, read straight from the generated modules."""
    rules = []
    for info in pkgutil.iter_modules(tribrid.v1.__path__):
        if not info.name.endswith("_pb2"):
            continue
        file = importlib.import_module(f"tribrid.v1.{info.name}").DESCRIPTOR
        for service in file.services_by_name.values():
            for method in service.methods:
                if method.GetOptions().HasExtension(annotations_pb2.http):
                    rule = method.GetOptions().Extensions[annotations_pb2.http]
                    verb = rule.WhichOneof("pattern")
                    rules.append((service, method, verb, getattr(rule, verb), rule.body))
    return rules


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return openapi.build_document(openapi.source_comments())


def _schema(doc: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """A schema with its $ref (or a one-element allOf around one) resolved."""
    if "allOf" in node and len(node["allOf"]) == 1:
        node = node["allOf"][0]
    if "$ref" in node:
        found: dict[str, Any] = doc["components"]["schemas"][
            node["$ref"].removeprefix("#/components/schemas/")
        ]
        return found
    return node


def value_problems(
    doc: dict[str, Any], field: FieldDescriptor, node: dict[str, Any], where: str
) -> list[str]:
    """What is wrong with `node` as the schema of one value of `field` (not the repeated list)."""
    schema = _schema(doc, node)
    if field.type == F.TYPE_MESSAGE:
        assert field.message_type is not None
        if field.message_type.full_name == "google.protobuf.Struct":  # its JSON form: any object
            if node.get("type") != "object" or "additionalProperties" not in node:
                return [f"{where}: a Struct should be an object with additionalProperties"]
            return []
        if "$ref" not in (node["allOf"][0] if "allOf" in node else node):
            return [f"{where}: a message field without a $ref"]
        assert field.message_type is not None
        return message_problems(doc, field.message_type, schema, where)
    if field.type == F.TYPE_ENUM:
        assert field.enum_type is not None
        names = [v.name for v in field.enum_type.values]
        if schema.get("type") != "string" or schema.get("enum") != names:
            return [f"{where}: enum {field.enum_type.full_name} should list {names}, has {schema}"]
        return []
    if schema.get("type") != JSON_TYPES[field.type]:
        return [f"{where}: {JSON_TYPES[field.type]} expected, has {schema}"]
    return []


def field_problems(
    doc: dict[str, Any], field: FieldDescriptor, node: dict[str, Any], where: str
) -> list[str]:
    schema = _schema(doc, node) if "allOf" in node else node
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        if schema.get("type") != "object" or "additionalProperties" not in schema:
            return [f"{where}: a map should be an object with additionalProperties"]
        value = field.message_type.fields_by_name["value"]
        return value_problems(doc, value, schema["additionalProperties"], f"{where}{{}}")
    if field.is_repeated:
        if schema.get("type") != "array" or "items" not in schema:
            return [f"{where}: a repeated field should be an array"]
        return value_problems(doc, field, schema["items"], f"{where}[]")
    return value_problems(doc, field, node, where)


def message_problems(
    doc: dict[str, Any], message: Descriptor, schema: dict[str, Any], where: str, seen: set[str] | None = None
) -> list[str]:
    """Every field of the message (and of the messages it holds) under its JSON name, typed."""
    seen = set() if seen is None else seen
    if message.full_name in seen:
        return []
    seen.add(message.full_name)
    properties = schema.get("properties", {})
    problems = [
        f"{where}: {name!r} is no field of {message.full_name}"
        for name in set(properties) - {f.json_name for f in message.fields}
    ]
    for field in message.fields:
        if field.json_name not in properties:
            problems.append(f"{where}: {message.full_name}.{field.name} missing as {field.json_name!r}")
        else:
            problems += field_problems(doc, field, properties[field.json_name], f"{where}.{field.json_name}")
    return problems


def _scalar_paths(message: Descriptor, prefix: str = "") -> Iterator[tuple[str, FieldDescriptor]]:
    for field in message.fields:
        if field.type != F.TYPE_MESSAGE:
            yield f"{prefix}{field.json_name}", field
        elif not field.is_repeated and field.message_type is not None:
            yield from _scalar_paths(field.message_type, f"{prefix}{field.json_name}.")


def document_problems(doc: dict[str, Any]) -> list[str]:
    problems = []
    rules = contract_rules()
    rpc_paths = {path for _s, _m, _v, path, _b in rules}
    problems += [f"path {p} has no RPC" for p in set(doc["paths"]) - rpc_paths - BRIDGE_PATHS]
    operations = [
        (path, verb, op)
        for path, ops in doc["paths"].items()
        if path not in BRIDGE_PATHS
        for verb, op in ops.items()
    ]
    problems += [
        f"{v.upper()} {p} has no x-grpc-method" for p, v, op in operations if "x-grpc-method" not in op
    ]
    for service, method, verb, path, body in rules:
        grpc_method = f"/{service.full_name}/{method.name}"
        named = [(p, v) for p, v, op in operations if op.get("x-grpc-method") == grpc_method]
        if named != [(path, verb)]:
            problems.append(f"{grpc_method}: one operation {verb.upper()} {path} expected, found {named}")
            continue
        op = doc["paths"][path][verb]
        where = f"{verb.upper()} {path}"
        answer = op["responses"]["200"]["content"]["application/json"]["schema"]
        problems += message_problems(doc, method.output_type, _schema(doc, answer), f"{where} 200")
        if method.server_streaming and NDJSON not in op["responses"]["200"]["content"]:
            problems.append(f"{where}: server-streaming without the NDJSON answer")
        if body == "*":
            request = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
            if request is None:
                problems.append(f"{where}: no JSON request body")
            else:
                problems += message_problems(doc, method.input_type, _schema(doc, request), f"{where} body")
            continue
        params = {(p["in"], p["name"]): p for p in op.get("parameters", []) if "name" in p}
        for json_path, field in _scalar_paths(method.input_type):
            # a path parameter has the proto name of the template, a query parameter the JSON name
            param = params.get(("path", field.name)) if f"{{{field.name}}}" in path else None
            param = param or params.get(("query", json_path))
            if param is None:
                problems.append(f"{where}: field {json_path} is neither a path nor a query parameter")
            else:
                problems += field_problems(doc, field, param["schema"], f"{where} ?{json_path}")
    return problems


def test_every_rpc_and_field_is_documented(document: dict[str, Any]) -> None:
    assert document["openapi"].startswith("3.0")
    assert document_problems(document) == []
    # the internal legs are not exposed
    methods = {
        op["x-grpc-method"]
        for ops in document["paths"].values()
        for op in ops.values()
        if "x-grpc-method" in op
    }
    assert not any(
        str(m).startswith(("/tribrid.v1.VectorSearch/", "/tribrid.v1.SparseSearch/")) for m in methods
    )
    assert "/tribrid.v1.GraphSearch/Neighbors" in methods and "/tribrid.v1.Indexer/DeleteCorpus" in methods


def test_every_ref_resolves(document: dict[str, Any]) -> None:
    def refs(node: object) -> Iterator[str]:
        if isinstance(node, dict):
            yield from (v for k, v in node.items() if k == "$ref")
            for v in node.values():
                yield from refs(v)
        elif isinstance(node, list):
            for v in node:
                yield from refs(v)

    for ref in refs(document):
        _hash, components, kind, name = ref.split("/")
        assert components == "components" and name in document["components"][kind], ref


def _without(doc: dict[str, Any], schema: str, prop: str) -> dict[str, Any]:
    broken = copy.deepcopy(doc)
    del broken["components"]["schemas"][schema]["properties"][prop]
    return broken


def test_the_checks_catch_a_broken_document(document: dict[str, Any]) -> None:
    # a field missing from a request body, a response, a nested message
    assert any("topK" in p for p in document_problems(_without(document, "SearchRequest", "topK")))
    assert any("name" in p for p in document_problems(_without(document, "EntityRef", "name")))
    assert document_problems(_without(document, "GraphStatsResponse", "entitiesByType"))
    # a wrong type: a uint64 written as a number, an enum that lost a value
    broken = copy.deepcopy(document)
    broken["components"]["schemas"]["GraphStatsResponse"]["properties"]["entities"] = {"type": "integer"}
    assert any("entities" in p for p in document_problems(broken))
    broken = copy.deepcopy(document)
    broken["components"]["schemas"]["EdgeDirection"]["enum"].pop()
    assert any("EdgeDirection" in p for p in document_problems(broken))
    # a path parameter, a whole operation, a path no RPC serves
    broken = copy.deepcopy(document)
    broken["paths"]["/v1/graph/{corpus_id}/stats"]["get"]["parameters"] = []
    assert any("corpus" in p for p in document_problems(broken))
    broken = copy.deepcopy(document)
    del broken["paths"]["/v1/corpora/{corpus_id}"]["delete"]
    assert any("DeleteCorpus" in p for p in document_problems(broken))
    broken = copy.deepcopy(document)
    broken["paths"]["/v1/extra"] = {"get": {"x-grpc-method": "/tribrid.v1.Fusion/Search"}}
    assert len(document_problems(broken)) >= 2


def test_proto3_json_details(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    request = schemas["SearchRequest"]["properties"]
    assert request["topK"]["x-proto3-optional"] is True and "x-proto3-optional" not in request["query"]
    assert request["options"] == {"$ref": "#/components/schemas/SearchOptions"}
    assert "overrides" not in request
    stats = schemas["GraphStatsResponse"]["properties"]
    assert stats["entitiesByType"]["additionalProperties"]["type"] == "string"  # map<string, uint64>
    assert schemas["GraphEntity"]["properties"]["community"]["format"] == "int64"
    # the .proto comments, when protoc is at hand (it is, in the dev install)
    assert "plain name" in schemas["EntityRef"]["description"]
    assert document["paths"]["/v1/graph/neighbors"]["post"]["summary"].startswith("Entities one hop")
    index = document["paths"]["/v1/index"]["post"]
    assert {p.get("name") for p in index["parameters"]} >= {"stream"}


def test_written_document_is_current(document: dict[str, Any]) -> None:
    """What `make protos` wrote (and the bridge serves) is what the descriptors give today."""
    if not openapi.DEFAULT_PATH.is_file():
        pytest.skip(f"{openapi.DEFAULT_PATH} not written: run make protos")
    assert json.loads(openapi.DEFAULT_PATH.read_text()) == document, "stale: run make protos"


def test_command_line_writes_the_document(tmp_path: Path, document: dict[str, Any]) -> None:
    out = tmp_path / "openapi.json"
    assert openapi.main([str(out)]) == 0
    assert json.loads(out.read_text()) == document
    assert openapi.main([]) == 2
