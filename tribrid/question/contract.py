"""A reading as the contract carries it (`QueryReading`, the `QueryKind` and `QueryIntent` enums)."""

from __future__ import annotations

from typing import get_args

from tribrid.options import invalid
from tribrid.question.families import Intent
from tribrid.question.reading import QueryKind, Reading
from tribrid.v1 import reading_pb2

KINDS: dict[QueryKind, reading_pb2.QueryKind.ValueType] = {
    kind: reading_pb2.QueryKind.Value(f"QUERY_KIND_{kind.upper()}") for kind in get_args(QueryKind)
}
INTENTS: dict[Intent, reading_pb2.QueryIntent.ValueType] = {
    intent: reading_pb2.QueryIntent.Value(f"QUERY_INTENT_{intent.upper()}") for intent in get_args(Intent)
}
_KIND_OF = {number: kind for kind, number in KINDS.items()}
_INTENT_OF = {number: intent for intent, number in INTENTS.items()}


def intent_value(intent: Intent | None) -> reading_pb2.QueryIntent.ValueType:
    return INTENTS[intent] if intent is not None else reading_pb2.QUERY_INTENT_UNSPECIFIED


def to_proto(reading: Reading) -> reading_pb2.QueryReading:
    return reading_pb2.QueryReading(
        kind=KINDS[reading.kind], intent=intent_value(reading.intent), question=reading.question
    )


def from_proto(message: reading_pb2.QueryReading, query: str) -> Reading | None:
    """The reading a request carries; None when it carries none (its kind unspecified)."""
    if message.kind == reading_pb2.QUERY_KIND_UNSPECIFIED:
        return None
    kind = _KIND_OF.get(message.kind)
    if kind is None:
        raise invalid(f"reading.kind: unknown value {message.kind}; allowed: 1..{len(KINDS)}")
    intent = _INTENT_OF.get(message.intent)
    if intent is None and message.intent != reading_pb2.QUERY_INTENT_UNSPECIFIED:
        raise invalid(f"reading.intent: unknown value {message.intent}; allowed: 0..{len(INTENTS)}")
    return Reading(kind, intent, message.question or query)
