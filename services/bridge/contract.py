"""What the bridge reads from the contract: the `google.api.http` rules of the tribrid.v1 services.

A public service is one with at least one http rule; each rule is one HTTP route (verb + path
template). The routes of the bridge and its OpenAPI document both come from here, so a new RPC with
an http rule is served and documented without touching the bridge.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, cast

import grpc
from google.api import annotations_pb2, http_pb2
from google.protobuf import message_factory
from google.protobuf.descriptor import (
    Descriptor,
    EnumDescriptor,
    FieldDescriptor,
    FileDescriptor,
    MethodDescriptor,
    ServiceDescriptor,
)
from google.protobuf.message import Message

import tribrid.v1
from services.bridge.proto_json import message_to_dict
from tribrid.legs import LEGS

if TYPE_CHECKING:
    from google.protobuf.descriptor_pb2 import MethodOptions
    from google.protobuf.internal.extension_dict import _ExtensionFieldDescriptor

# The `google.api.http` method option. googleapis-common-protos types it as a plain FieldDescriptor;
# the protobuf stubs take (and type the value of) an extension handle typed with its two messages.
_HTTP_OPTION = cast("_ExtensionFieldDescriptor[MethodOptions, http_pb2.HttpRule]", annotations_pb2.http)

# The grpc-gateway mapping of gRPC status codes to HTTP statuses; any other code is 500.
HTTP_STATUS: dict[grpc.StatusCode, int] = {
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.FAILED_PRECONDITION: 400,
    grpc.StatusCode.OUT_OF_RANGE: 400,
    grpc.StatusCode.UNAUTHENTICATED: 401,
    grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.ALREADY_EXISTS: 409,
    grpc.StatusCode.ABORTED: 409,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    grpc.StatusCode.CANCELLED: 499,
    grpc.StatusCode.UNIMPLEMENTED: 501,
    grpc.StatusCode.UNAVAILABLE: 503,
    grpc.StatusCode.DEADLINE_EXCEEDED: 504,
}
HTTP_STATUS_OTHER = 500

NDJSON = "application/x-ndjson"
# Query parameter of a server-streaming route: every message as NDJSON instead of the last one.
STREAM_PARAM = "stream"
# Verbs whose request comes from the path and the query string (no body).
NO_BODY_VERBS = frozenset({"GET", "DELETE"})

_VERBS = ("get", "put", "post", "delete", "patch")
# {field} or {field.sub}, optionally {field=*} or {field=**} (the rest of the path).
_PATH_PARAM = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.]*)(?:=(\*\*?))?\}")


def contract_files() -> list[FileDescriptor]:
    """The file descriptors of every generated tribrid.v1 module, by module name."""
    files = []
    for info in sorted(pkgutil.iter_modules(tribrid.v1.__path__), key=lambda i: i.name):
        if info.name.endswith("_pb2"):
            files.append(importlib.import_module(f"tribrid.v1.{info.name}").DESCRIPTOR)
    return files


def config_name(service: ServiceDescriptor) -> str:
    """The service's name in the config (`services.<name>_address`): a leg's name for a leg
    service ("tribrid.v1.GraphSearch" -> "graph"), else the service's name in lower case
    ("tribrid.v1.Fusion" -> "fusion")."""
    by_service = {leg.service: leg.name for leg in LEGS}
    return by_service.get(service.full_name, service.name.lower())


def message_class(descriptor: Descriptor) -> type[Message]:
    """The message class of a descriptor (the generated one for the contract's messages)."""
    return message_factory.GetMessageClass(descriptor)


def find_field(message: Descriptor, name: str) -> FieldDescriptor | None:
    """A field by its proto name or its JSON name."""
    field = message.fields_by_name.get(name)
    if field is not None:
        return field
    return next((f for f in message.fields if f.json_name == name), None)


def message_type(field: FieldDescriptor) -> Descriptor:
    """The type of a message field."""
    if field.message_type is None:
        raise TypeError(f"{field.full_name} is not a message field")
    return field.message_type


def enum_type(field: FieldDescriptor) -> EnumDescriptor:
    """The type of an enum field."""
    if field.enum_type is None:
        raise TypeError(f"{field.full_name} is not an enum field")
    return field.enum_type


def is_map(field: FieldDescriptor) -> bool:
    return field.type == FieldDescriptor.TYPE_MESSAGE and bool(message_type(field).GetOptions().map_entry)


def is_well_known(message: Descriptor) -> bool:
    return message.full_name.startswith("google.protobuf.")


def resolve_scalar(message: Descriptor, dotted: str) -> tuple[FieldDescriptor, ...] | None:
    """The fields along `a.b.c` (proto or JSON names) when it ends on a scalar or enum field, or a
    repeated one, reached through non-repeated message fields; None otherwise."""
    chain: list[FieldDescriptor] = []
    current: Descriptor | None = message
    for part in dotted.split("."):
        if current is None:
            return None
        field = find_field(current, part)
        if field is None:
            return None
        chain.append(field)
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            if field.is_repeated or is_well_known(message_type(field)):
                return None
            current = message_type(field)
        else:
            current = None
    return tuple(chain) if current is None else None


@dataclass(frozen=True, slots=True)
class QueryField:
    proto_path: str  # "filters.path_glob"
    json_path: str  # "filters.pathGlob"
    chain: tuple[FieldDescriptor, ...]  # the fields along the path; the last one is set


def query_fields(
    message: Descriptor,
    proto_prefix: str = "",
    json_prefix: str = "",
    chain: tuple[FieldDescriptor, ...] = (),
) -> Iterator[QueryField]:
    """Every field a query string can set: scalar, enum and repeated scalar fields, also through
    non-repeated message fields (dotted); a message type already on the way is not entered again."""
    on_the_way = {f.full_name.rpartition(".")[0] for f in chain} | {message.full_name}
    for field in message.fields:
        here = (*chain, field)
        proto_path, json_path = f"{proto_prefix}{field.name}", f"{json_prefix}{field.json_name}"
        if field.type != FieldDescriptor.TYPE_MESSAGE:
            yield QueryField(proto_path, json_path, here)
        elif (
            not field.is_repeated
            and not is_well_known(message_type(field))
            and message_type(field).full_name not in on_the_way
        ):
            yield from query_fields(message_type(field), f"{proto_path}.", f"{json_path}.", here)


@dataclass(frozen=True, slots=True)
class HttpRoute:
    service: ServiceDescriptor
    method: MethodDescriptor
    verb: str
    # As written in the http rule, with {field=*} shortened to {field}, e.g. "/v1/graph/{corpus_id}/stats".
    template: str
    # "*": the JSON body is the request message; "": the request comes from the path and query.
    body: str
    # Dotted proto field paths of the path parameters, in template order.
    path_fields: tuple[str, ...]
    # The same template with Starlette parameter names ("{a.b}" -> "{a__b}", "{x=**}" -> "{x:path}").
    starlette_path: str

    @property
    def grpc_path(self) -> str:
        return f"/{self.service.full_name}/{self.method.name}"

    @property
    def server_streaming(self) -> bool:
        return bool(self.method.server_streaming)

    @property
    def request_class(self) -> type[Message]:
        return message_class(self.method.input_type)

    @property
    def response_class(self) -> type[Message]:
        return message_class(self.method.output_type)


def starlette_param(field_path: str) -> str:
    return field_path.replace(".", "__")


def http_route(service: ServiceDescriptor, method: MethodDescriptor, rule: http_pb2.HttpRule) -> HttpRoute:
    """One rule as a route; ValueError for what the bridge does not serve (custom verbs, client
    streaming, `body: "field"`, response_body, path parameters that are no scalar request field)."""
    where = f"{service.full_name}/{method.name}"
    pattern = rule.WhichOneof("pattern")
    if pattern not in _VERBS:
        raise ValueError(f"{where}: http rule {pattern!r} is not supported (use get/put/post/delete/patch)")
    if method.client_streaming:
        raise ValueError(f"{where}: client-streaming RPCs cannot be served over HTTP")
    if rule.body not in ("", "*"):
        raise ValueError(f'{where}: body {rule.body!r} is not supported (use "*" or none)')
    if rule.response_body:
        raise ValueError(f"{where}: response_body is not supported")
    verb = pattern.upper()
    if verb in NO_BODY_VERBS and rule.body:
        raise ValueError(f"{where}: a {verb} rule cannot have a body")
    template: str = getattr(rule, pattern)
    fields: list[str] = []

    def to_starlette(match: re.Match[str]) -> str:
        field_path, wildcard = match.group(1), match.group(2)
        chain = resolve_scalar(method.input_type, field_path)
        if chain is None or chain[-1].is_repeated or field_path != ".".join(f.name for f in chain):
            raise ValueError(f"{where}: path parameter {{{field_path}}} is not a scalar request field")
        fields.append(field_path)
        return f"{{{starlette_param(field_path)}{':path' if wildcard == '**' else ''}}}"

    if len(_PATH_PARAM.findall(template)) != template.count("{"):
        raise ValueError(f"{where}: cannot read the path template {template!r}")
    starlette_path = _PATH_PARAM.sub(to_starlette, template)
    return HttpRoute(
        service=service,
        method=method,
        verb=verb,
        template=_PATH_PARAM.sub(lambda m: f"{{{m.group(1)}}}", template),
        body=rule.body,
        path_fields=tuple(fields),
        starlette_path=starlette_path,
    )


def _rules(rule: http_pb2.HttpRule) -> Iterator[http_pb2.HttpRule]:
    yield rule
    for extra in rule.additional_bindings:
        yield from _rules(extra)


@cache
def http_routes() -> tuple[HttpRoute, ...]:
    """One route per http rule (and additional binding) of every tribrid.v1 service, in the order
    of the files, services and methods."""
    routes: list[HttpRoute] = []
    for file in contract_files():
        for service in file.services_by_name.values():
            for method in service.methods:
                options = method.GetOptions()
                if options.HasExtension(_HTTP_OPTION):
                    routes.extend(
                        http_route(service, method, r) for r in _rules(options.Extensions[_HTTP_OPTION])
                    )
    return tuple(routes)


def public_services() -> list[ServiceDescriptor]:
    """The services with at least one http rule."""
    seen: dict[str, ServiceDescriptor] = {}
    for route in http_routes():
        seen.setdefault(route.service.full_name, route.service)
    return list(seen.values())


def to_json(message: Message) -> dict[str, Any]:
    """A message as its proto3 JSON, every field shown (as the HTTP routes answer)."""
    return message_to_dict(message)
