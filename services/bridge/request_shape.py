"""Where a JSON request body gives a message field something other than an object.

json_format reads a string given for a message field as that message's field names, one per
character: `{"entity": "宝钗"}` fails with 'EntityRef has no field named "宝"'. The bridge checks
the body's shape first and names the field, what it takes and what it got.
"""

from __future__ import annotations

import functools
from typing import Any

from google.protobuf.descriptor import Descriptor

# Well-known types have JSON forms of their own (a Struct is an object, a Value anything, a
# Timestamp a string): json_format checks them.
_OWN_JSON_FORM = "google.protobuf."


def shape_error(body: Any, descriptor: Any, path: str = "") -> str | None:
    """The first message field of `body` (a parsed JSON object for `descriptor`) whose value has
    the wrong shape, as "field.path: expected ..., got ..."; None when every one is right.
    Unknown fields and scalar values are left to json_format. `descriptor`: a message's
    Descriptor (the C implementation's type is not the pure-Python one that stubs name)."""
    if not isinstance(body, dict):
        return None
    fields = _fields(descriptor)
    for key, value in body.items():
        field = fields.get(key)
        if field is None or value is None or field.message_type is None:
            continue
        where = f"{path}{key}"
        kind = field.message_type
        if kind.GetOptions().map_entry:
            error = _map_error(value, kind, where)
        elif kind.full_name.startswith(_OWN_JSON_FORM):
            continue
        elif field.is_repeated:
            error = _list_error(value, kind, where)
        else:
            error = _object_error(value, kind, where)
        if error:
            return error
    return None


@functools.cache  # one per message type of the contract
def _fields(descriptor: Any) -> dict[str, Any]:
    """A message's fields by proto name and by JSON name."""
    return {**descriptor.fields_by_name, **{f.json_name: f for f in descriptor.fields}}


def _object_error(value: Any, kind: Descriptor, where: str) -> str | None:
    if not isinstance(value, dict):
        return f"{where}: expected a JSON object ({_takes(kind)}), got {_got(value)}"
    return shape_error(value, kind, f"{where}.")


def _list_error(value: Any, kind: Descriptor, where: str) -> str | None:
    if not isinstance(value, list):
        return f"{where}: expected a JSON array of objects ({_takes(kind)}), got {_got(value)}"
    for i, item in enumerate(value):
        if item is not None and (error := _object_error(item, kind, f"{where}[{i}]")):
            return error
    return None


def _map_error(value: Any, entry: Descriptor, where: str) -> str | None:
    if not isinstance(value, dict):
        return f"{where}: expected a JSON object (a map), got {_got(value)}"
    kind = entry.fields_by_name["value"].message_type
    if kind is None or kind.full_name.startswith(_OWN_JSON_FORM):
        return None
    for key, item in value.items():
        if item is not None and (error := _object_error(item, kind, f"{where}.{key}")):
            return error
    return None


def _takes(kind: Descriptor) -> str:
    names = [f.json_name for f in kind.fields]
    listed = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")
    return f"{kind.name}: {listed}" if names else kind.name


def _got(value: Any) -> str:
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"a string ({shown!r})"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "an array" if isinstance(value, list) else "an object"
