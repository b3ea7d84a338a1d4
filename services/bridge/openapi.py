"""The bridge's OpenAPI 3.0 document, built from the contract's descriptors.

One operation per `google.api.http` rule; `components.schemas` holds every message and enum the
operations reach, as google.protobuf.json_format reads and writes them (proto3 JSON mapping):
lowerCamelCase names, 64-bit integers as strings, enums as their value names, maps as objects,
repeated fields as arrays. Descriptions are the .proto files' comments, read with
`protoc --include_source_info` when grpc_tools and the protos are at hand.

    python -m services.bridge.openapi tribrid/v1/openapi.json   # what `make protos` runs
"""

from __future__ import annotations

import json
import sys
import tempfile
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor

import tribrid.v1
from services.bridge.contract import (
    HTTP_STATUS,
    HTTP_STATUS_OTHER,
    NDJSON,
    NO_BODY_VERBS,
    STREAM_PARAM,
    HttpRoute,
    enum_type,
    http_routes,
    is_map,
    message_type,
    query_fields,
    resolve_scalar,
)

DEFAULT_PATH = Path(tribrid.v1.__file__).parent / "openapi.json"
PROTO_ROOT = Path(__file__).resolve().parents[2] / "protos"
PACKAGE = "tribrid.v1"

_F = FieldDescriptor
_SCALARS: dict[int, dict[str, Any]] = {
    _F.TYPE_DOUBLE: {"type": "number", "format": "double"},
    _F.TYPE_FLOAT: {"type": "number", "format": "float"},
    _F.TYPE_INT32: {"type": "integer", "format": "int32"},
    _F.TYPE_SINT32: {"type": "integer", "format": "int32"},
    _F.TYPE_SFIXED32: {"type": "integer", "format": "int32"},
    _F.TYPE_UINT32: {"type": "integer", "format": "uint32", "minimum": 0},
    _F.TYPE_FIXED32: {"type": "integer", "format": "uint32", "minimum": 0},
    # json_format writes 64-bit integers as strings (and reads numbers or strings)
    _F.TYPE_INT64: {"type": "string", "format": "int64", "pattern": "^-?[0-9]+$"},
    _F.TYPE_SINT64: {"type": "string", "format": "int64", "pattern": "^-?[0-9]+$"},
    _F.TYPE_SFIXED64: {"type": "string", "format": "int64", "pattern": "^-?[0-9]+$"},
    _F.TYPE_UINT64: {"type": "string", "format": "uint64", "pattern": "^[0-9]+$"},
    _F.TYPE_FIXED64: {"type": "string", "format": "uint64", "pattern": "^[0-9]+$"},
    _F.TYPE_BOOL: {"type": "boolean"},
    _F.TYPE_STRING: {"type": "string"},
    _F.TYPE_BYTES: {"type": "string", "format": "byte"},
}
# Well-known types have their own JSON forms.
_WELL_KNOWN: dict[str, dict[str, Any]] = {
    "google.protobuf.Timestamp": {"type": "string", "format": "date-time"},
    "google.protobuf.Duration": {"type": "string", "pattern": "^-?[0-9]+(\\.[0-9]{1,9})?s$"},
    "google.protobuf.FieldMask": {"type": "string"},
    "google.protobuf.Struct": {"type": "object", "additionalProperties": {}},
    "google.protobuf.Value": {},
    "google.protobuf.ListValue": {"type": "array", "items": {}},
    "google.protobuf.Empty": {"type": "object"},
    "google.protobuf.Any": {
        "type": "object",
        "properties": {"@type": {"type": "string"}},
        "additionalProperties": {},
    },
    **{
        f"google.protobuf.{name}Value": {**_SCALARS[kind], "nullable": True}
        for name, kind in (
            ("Double", _F.TYPE_DOUBLE),
            ("Float", _F.TYPE_FLOAT),
            ("Int64", _F.TYPE_INT64),
            ("UInt64", _F.TYPE_UINT64),
            ("Int32", _F.TYPE_INT32),
            ("UInt32", _F.TYPE_UINT32),
            ("Bool", _F.TYPE_BOOL),
            ("String", _F.TYPE_STRING),
            ("Bytes", _F.TYPE_BYTES),
        )
    },
}


def ref(name: str, kind: str = "schemas") -> dict[str, str]:
    return {"$ref": f"#/components/{kind}/{name}"}


def schema_name(full_name: str) -> str:
    """ "tribrid.v1.SearchRequest" -> "SearchRequest"; other packages keep their full name."""
    return full_name.removeprefix(f"{PACKAGE}.")


# --- comments ---------------------------------------------------------------------------------


def _clean(comment: str) -> str:
    return textwrap.dedent(comment).strip()


def _located(file: descriptor_pb2.FileDescriptorProto) -> Iterator[tuple[tuple[int, ...], str]]:
    """(source path, full name) of every message, field, enum, enum value, service and method."""
    package = f"{file.package}." if file.package else ""

    def enums(enum_list: Any, path: tuple[int, ...], scope: str) -> Iterator[tuple[tuple[int, ...], str]]:
        for i, enum in enumerate(enum_list):
            name = f"{scope}{enum.name}"
            yield (*path, i), name
            for j, value in enumerate(enum.value):
                yield (*path, i, 2, j), f"{name}.{value.name}"

    def messages(msg_list: Any, path: tuple[int, ...], scope: str) -> Iterator[tuple[tuple[int, ...], str]]:
        for i, msg in enumerate(msg_list):
            name = f"{scope}{msg.name}"
            yield (*path, i), name
            for j, field in enumerate(msg.field):
                yield (*path, i, 2, j), f"{name}.{field.name}"
            yield from messages(msg.nested_type, (*path, i, 3), f"{name}.")
            yield from enums(msg.enum_type, (*path, i, 4), f"{name}.")

    yield from messages(file.message_type, (4,), package)
    yield from enums(file.enum_type, (5,), package)
    for i, service in enumerate(file.service):
        yield (6, i), f"{package}{service.name}"
        for j, method in enumerate(service.method):
            yield (6, i, 2, j), f"{package}{service.name}.{method.name}"


def comments_of(descriptor_set: descriptor_pb2.FileDescriptorSet) -> dict[str, str]:
    """Leading (else trailing) comments by full name; enum values as "<enum full name>.<VALUE>"."""
    found: dict[str, str] = {}
    for file in descriptor_set.file:
        by_path = {
            tuple(loc.path): _clean(loc.leading_comments or loc.trailing_comments)
            for loc in file.source_code_info.location
            if loc.leading_comments or loc.trailing_comments
        }
        for path, name in _located(file):
            if path in by_path:
                found[name] = by_path[path]
    return found


def source_comments(proto_root: Path = PROTO_ROOT) -> dict[str, str]:
    """The comments of the tribrid.v1 .proto files, via grpc_tools' protoc; {} without either."""
    try:
        from importlib.resources import files

        from google.api import annotations_pb2
        from grpc_tools import protoc  # type: ignore[import-untyped]
    except ImportError:
        return {}
    sources = sorted(proto_root.glob("tribrid/v1/*.proto"))
    if not sources:
        return {}
    googleapis = Path(annotations_pb2.__file__).parents[2]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "descriptors.pb"
        code = protoc.main(
            [
                "protoc",
                f"-I{proto_root}",
                f"-I{googleapis}",
                f"-I{files('grpc_tools') / '_proto'}",
                "--include_source_info",
                f"--descriptor_set_out={out}",
                *(str(s.relative_to(proto_root)) for s in sources),
            ]
        )
        if code != 0:
            raise RuntimeError(f"protoc failed ({code}) reading {proto_root}")
        return comments_of(descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()))


# --- schemas ----------------------------------------------------------------------------------


class Schemas:
    """components.schemas, filled as operations reach messages and enums."""

    def __init__(self, comments: Mapping[str, str]) -> None:
        self.comments = comments
        self.schemas: dict[str, dict[str, Any]] = {}

    def message(self, message: Descriptor) -> dict[str, Any]:
        """A $ref to the message's schema (or a well-known type's own JSON form)."""
        if message.full_name in _WELL_KNOWN:
            return dict(_WELL_KNOWN[message.full_name])
        name = schema_name(message.full_name)
        if name not in self.schemas:
            self.schemas[name] = {}  # recursion stops here
            self.schemas[name] = self._message(message)
        return ref(name)

    def enum(self, enum: EnumDescriptor) -> dict[str, Any]:
        name = schema_name(enum.full_name)
        if name not in self.schemas:
            schema: dict[str, Any] = {"type": "string", "enum": [v.name for v in enum.values]}
            lines = [self.comments.get(enum.full_name, "")]
            lines += [
                f"- {v.name}: {self.comments[f'{enum.full_name}.{v.name}']}"
                for v in enum.values
                if f"{enum.full_name}.{v.name}" in self.comments
            ]
            description = "\n".join(line for line in lines if line)
            if description:
                schema["description"] = description
            self.schemas[name] = schema
        return ref(name)

    def value(self, field: FieldDescriptor) -> dict[str, Any]:
        """One value of the field (an element, for a repeated field)."""
        if field.type == _F.TYPE_MESSAGE:
            return self.message(message_type(field))
        if field.type == _F.TYPE_ENUM:
            return self.enum(enum_type(field))
        if field.type not in _SCALARS:
            raise ValueError(f"{field.full_name}: groups have no JSON form")
        return dict(_SCALARS[field.type])

    def field(self, field: FieldDescriptor) -> dict[str, Any]:
        if is_map(field):
            schema = {
                "type": "object",
                "additionalProperties": self.value(message_type(field).fields_by_name["value"]),
            }
        elif field.is_repeated:
            schema = {"type": "array", "items": self.value(field)}
        else:
            schema = self.value(field)
        extra: dict[str, Any] = {}
        if field.full_name in self.comments:
            extra["description"] = self.comments[field.full_name]
        if _proto3_optional(field):
            extra["x-proto3-optional"] = True  # unset and zero differ: unset is left out of the JSON
        elif field.containing_oneof is not None:
            extra["x-oneof"] = field.containing_oneof.name
        if extra and "$ref" in schema:  # a $ref takes no sibling keywords in OpenAPI 3.0
            return {"allOf": [schema], **extra}
        return {**schema, **extra}

    def _message(self, message: Descriptor) -> dict[str, Any]:
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {field.json_name: self.field(field) for field in message.fields},
        }
        if message.full_name in self.comments:
            schema["description"] = self.comments[message.full_name]
        return schema


def _proto3_optional(field: FieldDescriptor) -> bool:
    """`optional` in a proto3 file: a synthetic oneof of this one field."""
    oneof = field.containing_oneof
    if oneof is None or len(oneof.fields) != 1:
        return False
    message = descriptor_pb2.DescriptorProto()
    oneof.containing_type.CopyToProto(message)
    return any(f.proto3_optional for f in message.field if f.name == field.name)


# --- paths ------------------------------------------------------------------------------------

_ERROR_NAMES: dict[int, list[str]] = {}
for _code, _status in HTTP_STATUS.items():
    _ERROR_NAMES.setdefault(_status, []).append(_code.name)
_ERROR_NAMES[HTTP_STATUS_OTHER] = ["INTERNAL", "UNKNOWN", "DATA_LOSS", "any other gRPC code"]
_ERROR_NAMES[400].append("malformed JSON, a bad parameter or header")


def _error_responses() -> dict[str, Any]:
    return {
        f"Error{status}": {
            "description": f"gRPC {', '.join(names)}",
            "content": {"application/json": {"schema": ref("Error")}},
        }
        for status, names in sorted(_ERROR_NAMES.items())
    }


_TIMEOUT_HEADERS: dict[str, dict[str, Any]] = {
    "RequestTimeoutMs": {
        "name": "X-Request-Timeout-Ms",
        "in": "header",
        "required": False,
        "schema": {"type": "number", "exclusiveMinimum": True, "minimum": 0},
        "description": "Caller deadline in milliseconds, propagated as the gRPC deadline.",
    },
    "GrpcTimeout": {
        "name": "grpc-timeout",
        "in": "header",
        "required": False,
        "schema": {"type": "string", "pattern": "^[0-9]{1,8}[HMSmun]$"},
        "description": "Caller deadline in gRPC wire format (500m = 500 ms); wins over X-Request-Timeout-Ms.",
    },
}


def _operation(route: HttpRoute, schemas: Schemas) -> dict[str, Any]:
    request_type = route.method.input_type
    method_doc = schemas.comments.get(route.method.full_name, "")
    parameters: list[dict[str, Any]] = []
    for field_path in route.path_fields:
        chain = resolve_scalar(request_type, field_path)
        assert chain is not None
        parameters.append(
            {"name": field_path, "in": "path", "required": True, "schema": schemas.field(chain[-1])}
        )
    if route.verb in NO_BODY_VERBS:
        for query in query_fields(request_type):
            if query.proto_path not in route.path_fields:
                parameters.append(
                    {
                        "name": query.json_path,
                        "in": "query",
                        "required": False,
                        "schema": schemas.field(query.chain[-1]),
                    }
                )
    if route.server_streaming:
        parameters.append(
            {
                "name": STREAM_PARAM,
                "in": "query",
                "required": False,
                "schema": {"type": "boolean"},
                "description": f"Every message as NDJSON ({NDJSON}; or send that Accept header) "
                "instead of the last one.",
            }
        )
    parameters += [ref(name, "parameters") for name in _TIMEOUT_HEADERS]
    answer = schemas.message(route.method.output_type)
    content: dict[str, Any] = {"application/json": {"schema": answer}}
    if route.server_streaming:
        error_line = {"type": "object", "required": ["error"], "properties": {"error": ref("Error")}}
        content[NDJSON] = {"schema": {"oneOf": [answer, error_line]}}
    operation: dict[str, Any] = {
        "operationId": f"{route.service.name}_{route.method.name}",
        "tags": [route.service.name],
        "summary": method_doc.splitlines()[0]
        if method_doc
        else f"{route.service.full_name}/{route.method.name}",
        "x-grpc-method": route.grpc_path,
        "parameters": parameters,
    }
    if method_doc:
        operation["description"] = method_doc
    if route.body == "*":
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": schemas.message(request_type)}},
        }
    ok = "The last message, or every message as NDJSON" if route.server_streaming else "OK"
    operation["responses"] = {
        "200": {"description": ok, "content": content},
        **{str(status): ref(f"Error{status}", "responses") for status in sorted(_ERROR_NAMES)},
    }
    return operation


def _bridge_paths() -> dict[str, Any]:
    anything = {"application/json": {"schema": {"type": "object", "additionalProperties": True}}}
    return {
        "/healthz": {
            "get": {
                "operationId": "healthz",
                "tags": ["bridge"],
                "summary": "Liveness: the bridge process is up",
                "responses": {"200": {"description": "up", "content": anything}},
            }
        },
        "/readyz": {
            "get": {
                "operationId": "readyz",
                "tags": ["bridge"],
                "summary": "Readiness: the gateway's gRPC health check is SERVING",
                "responses": {
                    "200": {"description": "ready", "content": anything},
                    "503": ref("Error503", "responses"),
                },
            }
        },
        "/openapi.json": {
            "get": {
                "operationId": "openapi",
                "tags": ["bridge"],
                "summary": "This document",
                "responses": {"200": {"description": "OpenAPI 3.0 document", "content": anything}},
            }
        },
    }


def build_document(comments: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The OpenAPI 3.0 document of every http rule in the contract (comments: see source_comments)."""
    schemas = Schemas(comments or {})
    schemas.schemas["Error"] = {
        "type": "object",
        "required": ["code", "message"],
        "properties": {
            "code": {"type": "string", "example": "INVALID_ARGUMENT", "description": "The gRPC status name"},
            "message": {"type": "string"},
        },
    }
    paths: dict[str, dict[str, Any]] = {}
    tags: dict[str, dict[str, str]] = {}
    for route in http_routes():
        verb = route.verb.lower()
        if verb in paths.get(route.template, {}):
            raise ValueError(f"two rules for {route.verb} {route.template}")
        paths.setdefault(route.template, {})[verb] = _operation(route, schemas)
        tag = {"name": route.service.name}
        if route.service.full_name in schemas.comments:
            tag["description"] = schemas.comments[route.service.full_name]
        tags.setdefault(route.service.name, tag)
    paths.update(_bridge_paths())
    return {
        "openapi": "3.0.3",
        "info": {
            "title": "TriBridRAG HTTP/JSON bridge",
            "version": PACKAGE,
            "description": f"The {PACKAGE} gRPC RPCs that carry a google.api.http rule, as JSON: "
            "request and response bodies are the protobuf messages in proto3 JSON (lowerCamelCase "
            "names; the proto field names are accepted too; unknown fields are rejected).",
        },
        "tags": [*tags.values(), {"name": "bridge", "description": "The bridge's own routes"}],
        "paths": paths,
        "components": {
            "schemas": dict(sorted(schemas.schemas.items())),
            "responses": _error_responses(),
            "parameters": _TIMEOUT_HEADERS,
        },
    }


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m services.bridge.openapi OUT.json", file=sys.stderr)
        return 2
    out = Path(argv[0])
    document = build_document(source_comments())
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(document, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
