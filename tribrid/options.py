"""Request options, validated the way the config file is: merged into the service's own section.

An options message (`VectorOptions`, `FusionOptions`, ...) names its fields as its config section
does. The fields a request sets replace the configured values and the section's pydantic model
checks the result, so one set of bounds holds for the file, the environment and every request.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar, cast

import grpc
from google.protobuf.descriptor import EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message
from pydantic import BaseModel, ValidationError

from tribrid.config import describe_errors
from tribrid.legs import BY_VALUE, LEG_NAMES
from tribrid.v1 import legs_pb2

S = TypeVar("S", bound=BaseModel)


class RequestError(Exception):
    """A request the caller must fix; carries the gRPC status code to answer with."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def invalid(message: str) -> RequestError:
    return RequestError(grpc.StatusCode.INVALID_ARGUMENT, message)


def not_found(message: str) -> RequestError:
    return RequestError(grpc.StatusCode.NOT_FOUND, message)


def validation_error(error: ValidationError, prefix: str) -> RequestError:
    return invalid("; ".join(describe_errors(error, prefix)))


def _enum_prefix(enum: EnumDescriptor) -> str:
    """FusionMethod -> FUSION_METHOD_, the prefix of its values' names (protobuf style)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", enum.name).upper() + "_"


def enum_value_name(enum: EnumDescriptor, number: int, path: str) -> str:
    """The config spelling of an enum value: FUSION_METHOD_RRF -> "rrf"."""
    value = enum.values_by_number.get(number)
    if value is None or number == 0:
        allowed = ", ".join(v.name for v in enum.values if v.number)
        raise invalid(f"{path}: unknown value {number}; allowed: {allowed}")
    return value.name.removeprefix(_enum_prefix(enum)).lower()


def spelling(enum: EnumDescriptor, number: int) -> str:
    """The config spelling of a value in an answer ("rrf", "structural"); "" when unspecified."""
    value = enum.values_by_number.get(number)
    return value.name.removeprefix(_enum_prefix(enum)).lower() if value is not None and number else ""


def _value(field: FieldDescriptor, value: Any, path: str) -> Any:
    if field.enum_type is not None:
        if field.enum_type.full_name == legs_pb2.Leg.DESCRIPTOR.full_name:
            # unset (0) is left to the caller, which says the entry needs a leg
            return enum_value_name(field.enum_type, value, path) if value else ""
        return enum_value_name(field.enum_type, value, path)
    if field.message_type is not None:
        return option_values(value, path)
    return value


def _by_leg(field: FieldDescriptor, items: Any, path: str) -> dict[str, Any]:
    """A repeated message with a `leg` field: by leg name, the rest of each entry's fields."""
    by_leg: dict[str, Any] = {}
    for item in items:
        values = option_values(item, path)
        leg = values.pop("leg", "")
        if not leg:
            raise invalid(f"{path}: every entry needs a leg")
        if leg in by_leg:
            raise invalid(f"{path}: leg {leg!r} appears twice")
        by_leg[leg] = values
    return by_leg


def option_values(options: Message, path: str = "options") -> dict[str, Any]:
    """The fields a request set, in config terms: enums by name, repeated fields as lists, a
    repeated message keyed by a `leg` field as a mapping by leg name."""
    values: dict[str, Any] = {}
    for field, value in options.ListFields():
        field_path = f"{path}.{field.name}"
        if field.is_repeated:
            if field.message_type is not None and "leg" in field.message_type.fields_by_name:
                values[field.name] = _by_leg(field, value, field_path)
            else:
                values[field.name] = [_value(field, v, field_path) for v in value]
        else:
            values[field.name] = _value(field, value, field_path)
    return values


def _merge(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def merge_options(section: S, values: dict[str, Any], path: str) -> S:
    """`section` with `values` (from option_values) in place of its own, validated as a whole."""
    if not values:
        return section
    try:
        return type(section).model_validate(_merge(section.model_dump(), values))
    except ValidationError as err:
        raise validation_error(err, path) from None


def with_options(section: S, options: Message, path: str) -> S:
    """The config section this request runs with: `options` (the request's message for this
    service) merged in, or the section itself when the request sets none."""
    return merge_options(section, option_values(options, path), path)


def _scalar(field: FieldDescriptor, raw: str, path: str) -> Any:
    """A command-line value for `field`: enums by config spelling, name or number."""
    if field.enum_type is not None:
        if raw.lstrip("-").isdigit():
            return int(raw)
        is_leg = field.enum_type.full_name == legs_pb2.Leg.DESCRIPTOR.full_name
        prefix = "LEG_" if is_leg else _enum_prefix(field.enum_type)
        name = raw.upper() if raw.upper().startswith(prefix) else prefix + raw.upper()
        value = field.enum_type.values_by_name.get(name)
        if value is None or (is_leg and value.number not in BY_VALUE):
            spellings = (
                LEG_NAMES if is_leg else [v.name.removeprefix(prefix).lower() for v in field.enum_type.values]
            )
            allowed = ", ".join(v for v in spellings if v != "unspecified")
            raise invalid(f"{path}: unknown value {raw!r}; allowed: {allowed}")
        return value.number
    try:
        if field.type == FieldDescriptor.TYPE_BOOL:
            if raw.lower() not in ("true", "false"):
                raise ValueError(raw)
            return raw.lower() == "true"
        if field.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
            return float(raw)
        if field.type == FieldDescriptor.TYPE_STRING:
            return raw
        return int(raw)
    except ValueError:
        raise invalid(f"{path}: {raw!r} is not a valid value for this field") from None


def set_option(options: Message, setting: str) -> None:
    """Apply one `SECTION.FIELD=VALUE` setting (`vector.ef_search=200`, `fusion.method=weighted`,
    `fusion.legs.graph.enabled=false`, `graph.relationship_types=calls,inherits`) to `options`."""
    path, sep, raw = setting.partition("=")
    if not sep or not path:
        raise invalid(f"option {setting!r}: write SECTION.FIELD=VALUE, e.g. vector.ef_search=200")
    names = path.split(".")
    message = options
    i = 0
    while True:
        name = names[i]
        field = cast(FieldDescriptor | None, message.DESCRIPTOR.fields_by_name.get(name))
        if field is None:
            allowed = ", ".join(message.DESCRIPTOR.fields_by_name)
            raise invalid(f"option {path!r}: no {name!r} here; one of: {allowed}")
        last = i == len(names) - 1
        if (
            field.message_type is not None
            and field.is_repeated
            and "leg" in field.message_type.fields_by_name
        ):
            if i + 1 >= len(names) - 1:
                raise invalid(
                    f"option {path!r}: write {name}.LEG.FIELD=VALUE, e.g. fusion.legs.graph.weight=2"
                )
            leg_field = field.message_type.fields_by_name["leg"]
            leg = _scalar(leg_field, names[i + 1], path)
            entries = getattr(message, name)
            message = next((e for e in entries if e.leg == leg), None) or entries.add(leg=leg)
            i += 2
            continue
        if field.message_type is not None:
            if last:
                raise invalid(f"option {path!r}: name a field of {name}")
            message = getattr(message, name)
            i += 1
            continue
        if not last:
            raise invalid(f"option {path!r}: {name} has no fields")
        if field.is_repeated:
            target = getattr(message, name)
            del target[:]
            target.extend(_scalar(field, part.strip(), path) for part in raw.split(",") if part.strip())
        else:
            setattr(message, name, _scalar(field, raw, path))
        return
