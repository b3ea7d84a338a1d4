"""The bridge's JSON printer gives json_format's dicts, on every message of the contract."""

from __future__ import annotations

import json
import math
import random
from typing import Any

import pytest
from google.protobuf import json_format, struct_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from services.bridge.contract import contract_files, message_class
from services.bridge.proto_json import dumps, message_to_dict
from tribrid.v1 import common_pb2, legs_pb2

F = FieldDescriptor


def _messages() -> list[Descriptor]:
    return [m for file in contract_files() for m in file.message_types_by_name.values()]


def _scalar(field: Any, rng: random.Random) -> Any:
    if field.cpp_type == F.CPPTYPE_ENUM:
        numbers = [v.number for v in field.enum_type.values]
        return rng.choice([*numbers, 97])  # an unknown number too: open enums keep it
    if field.type == F.TYPE_BYTES:
        return rng.randbytes(rng.randrange(6))
    if field.cpp_type == F.CPPTYPE_STRING:
        return rng.choice(["", "a", "恰斯卡", 'quote " and \\ slash', "Zürich\n"])
    if field.cpp_type == F.CPPTYPE_BOOL:
        return rng.random() < 0.5
    if field.cpp_type in (F.CPPTYPE_INT64, F.CPPTYPE_UINT64):
        return rng.choice([0, 1, 2**53 + 1, 2**62])
    if field.cpp_type in (F.CPPTYPE_INT32, F.CPPTYPE_UINT32):
        return rng.choice([0, 7, 2**31 - 1])
    return rng.choice([0.0, 0.1, -2.5, 1e-300, math.inf, -math.inf, math.nan, 1 / 3])


def _fill(message: Any, rng: random.Random, depth: int = 0) -> None:
    """Sets a random part of the message's fields, nested messages down to depth 3."""
    if message.DESCRIPTOR.full_name == "google.protobuf.Struct":
        message.update({"role": "member", "strength": 0.5, "tags": ["a", None, True]})  # type: ignore[attr-defined]
        return
    for field in message.DESCRIPTOR.fields:
        if rng.random() < 0.3:
            continue  # left unset: defaults and presence are part of the check
        value_field = field.message_type.fields_by_name["value"] if _is_map(field) else field
        if value_field.cpp_type == F.CPPTYPE_MESSAGE and depth >= 3:
            continue
        target = getattr(message, field.name)
        if _is_map(field):
            for i in range(rng.randrange(3)):
                key = _map_key(field.message_type.fields_by_name["key"], i)
                if value_field.cpp_type == F.CPPTYPE_MESSAGE:
                    _fill(target[key], rng, depth + 1)
                else:
                    target[key] = _scalar(value_field, rng)
        elif field.is_repeated:
            for _ in range(rng.randrange(3)):
                if field.cpp_type == F.CPPTYPE_MESSAGE:
                    _fill(target.add(), rng, depth + 1)
                else:
                    target.append(_scalar(field, rng))
        elif field.cpp_type == F.CPPTYPE_MESSAGE:
            _fill(target, rng, depth + 1)
            target.SetInParent()
        else:
            setattr(message, field.name, _scalar(field, rng))


def _is_map(field: Any) -> bool:
    return field.message_type is not None and field.message_type.GetOptions().map_entry


def _map_key(field: Any, i: int) -> Any:
    if field.cpp_type == F.CPPTYPE_STRING:
        return f"k{i}"
    if field.cpp_type == F.CPPTYPE_BOOL:
        return bool(i % 2)
    return i


def _reference(message: Message) -> dict[str, Any]:
    return json_format.MessageToDict(message, always_print_fields_with_no_presence=True)


def _same(a: Any, b: Any) -> bool:
    """Equal, with NaN equal to NaN (json_format prints it as the string "NaN" anyway)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


@pytest.mark.parametrize("descriptor", _messages(), ids=lambda d: d.full_name)
def test_every_contract_message_prints_as_json_format_does(descriptor: Descriptor) -> None:
    rng = random.Random(descriptor.full_name)
    cls = message_class(descriptor)
    empty = cls()
    assert _same(message_to_dict(empty), _reference(empty))
    for _ in range(25):
        message = cls()
        _fill(message, rng)
        assert _same(message_to_dict(message), _reference(message)), message


def test_a_search_answer_prints_as_json_format_does_and_writes_as_json() -> None:
    match = common_pb2.ChunkMatch(chunk_id="c1", file_path="a.py", content="déjà vu", score=0.5)
    match.explain.add(leg=legs_pb2.LEG_SPARSE, rank=1, raw_score=math.nan)
    reply = common_pb2.SearchResponse(matches=[match])
    printed = message_to_dict(reply)
    assert printed == _reference(reply)
    assert printed["matches"][0]["explain"][0]["rawScore"] == "NaN"
    assert json.loads(dumps(printed)) == json.loads(json.dumps(_reference(reply)))


def test_a_struct_inside_a_message_is_printed_by_json_format() -> None:
    attributes = struct_pb2.Struct()
    attributes.update({"role": "member", "since": 1999})
    edge = common_pb2.EdgeProperties(count=2, attributes=attributes)
    assert message_to_dict(edge) == {
        "count": 2,
        "strength": 0.0,
        "similarity": 0.0,
        "inferred": False,
        "confidence": 0.0,
        "attributes": {"role": "member", "since": 1999.0},
    }


def _odd_message() -> type[Message]:
    """A message with what the contract does not use yet: float32, 64-bit and bool map keys,
    bytes, a oneof, a proto3 optional and a field of its own type."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    file = descriptor_pb2.FileDescriptorProto(name="odd_test.proto", package="oddtest", syntax="proto3")
    odd = file.message_type.add(name="Odd")
    T, L = descriptor_pb2.FieldDescriptorProto, descriptor_pb2.FieldDescriptorProto
    fields = [
        ("ratio", T.TYPE_FLOAT, L.LABEL_OPTIONAL, ""),
        ("ratios", T.TYPE_FLOAT, L.LABEL_REPEATED, ""),
        ("big", T.TYPE_SINT64, L.LABEL_OPTIONAL, ""),
        ("blob", T.TYPE_BYTES, L.LABEL_OPTIONAL, ""),
        ("child", T.TYPE_MESSAGE, L.LABEL_OPTIONAL, ".oddtest.Odd"),
        ("by_id", T.TYPE_MESSAGE, L.LABEL_REPEATED, ".oddtest.Odd.ByIdEntry"),
        ("by_flag", T.TYPE_MESSAGE, L.LABEL_REPEATED, ".oddtest.Odd.ByFlagEntry"),
        ("name", T.TYPE_STRING, L.LABEL_OPTIONAL, ""),
        ("number", T.TYPE_UINT64, L.LABEL_OPTIONAL, ""),
        ("maybe", T.TYPE_DOUBLE, L.LABEL_OPTIONAL, ""),
    ]
    for number, (name, kind, label, type_name) in enumerate(fields, 1):
        odd.field.add(name=name, number=number, type=kind, label=label)
        if type_name:
            odd.field[-1].type_name = type_name
    odd.oneof_decl.add(name="choice")
    odd.oneof_decl.add(name="_maybe")
    odd.field[7].oneof_index = 0  # name
    odd.field[8].oneof_index = 0  # number
    odd.field[9].oneof_index = 1
    odd.field[9].proto3_optional = True
    for entry, key in (("ByIdEntry", T.TYPE_INT64), ("ByFlagEntry", T.TYPE_BOOL)):
        nested = odd.nested_type.add(name=entry)
        nested.options.map_entry = True
        nested.field.add(name="key", number=1, type=key, label=L.LABEL_OPTIONAL)
        nested.field.add(name="value", number=2, type=T.TYPE_FLOAT, label=L.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("oddtest.Odd"))


def test_fields_the_contract_does_not_use_yet_print_as_json_format_does() -> None:
    cls = _odd_message()
    rng = random.Random(5)
    for _ in range(200):
        message = cls()
        _fill(message, rng)
        assert _same(message_to_dict(message), _reference(message)), message
    made: Any = cls  # a class made at run time: its fields are unknown to the type checker
    odd: Any = made(ratio=0.1, big=-(2**62), number=2**64 - 1, blob=b"\x00\xff", maybe=0.0)
    odd.by_flag[True] = 0.9
    odd.by_id[-3] = math.inf
    printed = message_to_dict(odd)
    assert printed["ratio"] == 0.1 and printed["maybe"] == 0.0  # float32 shortest; optional set to 0
    assert printed["big"] == str(-(2**62)) and printed["number"] == str(2**64 - 1)
    assert printed["byFlag"] == {"true": 0.9} and printed["byId"] == {"-3": "Infinity"}
    assert printed == _reference(odd)
