"""Every RPC of every service, driven with random and boundary messages built from the proto
descriptors (hypothesis): the answer is a result or a client-side rejection with a message, never
INTERNAL/UNKNOWN, never a crash or a hang.

TRIBRID_FUZZ_EXAMPLES sets the examples per RPC (small by default so `make test` stays short;
`make fuzz` runs the long campaign and prints the counts per RPC and per status code).
"""

from __future__ import annotations

import asyncio
import math
import os
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import grpc
import pytest
from google.protobuf import message as pb_message
from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor, MethodDescriptor, ServiceDescriptor
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.stack import SAMPLE_CORPUS, Stack
from tribrid.v1 import (
    common_pb2,
    fusion_options_pb2,
    fusion_pb2,
    graph_pb2,
    indexer_pb2,
    indexer_pb2_grpc,
    legs_pb2,
    sparse_pb2,
    vector_pb2,
)

EXAMPLES_PER_RPC = int(os.environ.get("TRIBRID_FUZZ_EXAMPLES", "12"))
# short, so a hang shows up as DEADLINE_EXCEEDED rather than stalling the run
DEADLINE_S = float(os.environ.get("TRIBRID_FUZZ_DEADLINE_S", "10"))
# how deep nested messages go (filters inside options inside requests)
MAX_DEPTH = 4

# The answers a client can cause: anything else (INTERNAL, UNKNOWN, UNAVAILABLE...) is a bug.
CLIENT_ERRORS = frozenset(
    {
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.OUT_OF_RANGE,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        # allowed only when the deadline is actually reached (a slow but finite answer)
        grpc.StatusCode.DEADLINE_EXCEEDED,
    }
)

SERVICES: dict[str, ServiceDescriptor] = {
    "fusion": fusion_pb2.DESCRIPTOR.services_by_name["Fusion"],
    "vector": vector_pb2.DESCRIPTOR.services_by_name["VectorSearch"],
    "sparse": sparse_pb2.DESCRIPTOR.services_by_name["SparseSearch"],
    "graph": graph_pb2.DESCRIPTOR.services_by_name["GraphSearch"],
    "indexer": indexer_pb2.DESCRIPTOR.services_by_name["Indexer"],
}

# Corpora the fuzzer may index into or delete: never one another test of this session uses.
FUZZ_CORPUS_PREFIX = "fuzz-"

# --- strategies from the descriptors ------------------------------------------------------------

BOUNDARY_TEXT = st.sampled_from(
    [
        "",
        " ",
        "\x00",
        "a\x00b",
        "*",
        "**/*",
        "[",
        "\\",
        "'",
        '"',
        "%",
        "..",
        "/",
        "\u202e",
        "\U0001d518\U0001d52b\U0001d526",
        "é" * 3,
    ]
)
# names and words of the indexed sample corpus, so entity RPCs and searches also find something
CORPUS_TEXT = st.sampled_from(
    [
        "Cart",
        "compute_discount",
        "apply_tax",
        "validate_card_number",
        "PaymentGateway",
        "Inventory",
        "cart total",
    ]
)
TEXT = st.one_of(
    BOUNDARY_TEXT,
    CORPUS_TEXT,
    st.text(max_size=40),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=8).map(lambda s: s * 5000),
)

INT_BOUNDS: dict[int, tuple[int, int]] = {
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SINT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_INT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SINT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_FIXED32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1),
    FieldDescriptor.TYPE_FIXED64: (0, 2**64 - 1),
}


def _int(low: int, high: int) -> st.SearchStrategy[int]:
    edges = [v for v in (low, high, -1, 0, 1, 2, 1000, high // 2) if low <= v <= high]
    return st.one_of(st.sampled_from(edges), st.integers(min_value=low, max_value=min(high, 10_000)))


FLOAT = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0, 1e308, -1e308, 5e-324, 1.0, -1.0]),
    st.floats(allow_nan=True, allow_infinity=True),
)


def _scalar(field: FieldDescriptor) -> st.SearchStrategy[Any]:
    if field.type == FieldDescriptor.TYPE_STRING:
        return TEXT
    if field.type == FieldDescriptor.TYPE_BYTES:
        return st.binary(max_size=64)
    if field.type == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if field.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return FLOAT
    if field.type == FieldDescriptor.TYPE_ENUM:
        assert field.enum_type is not None
        known = [v.number for v in field.enum_type.values]
        # open enums (proto3) carry unknown numbers through: a server must reject or ignore them
        return st.one_of(st.sampled_from(known), _int(-(2**31), 2**31 - 1))
    if field.type in INT_BOUNDS:
        return _int(*INT_BOUNDS[field.type])
    raise AssertionError(f"no strategy for {field.full_name} (type {field.type})")


def _value(field: FieldDescriptor, depth: int) -> st.SearchStrategy[Any]:
    if field.message_type is not None:
        return message_dicts(field.message_type, depth + 1) if depth < MAX_DEPTH else st.just({})
    return _scalar(field)


@st.composite
def message_dicts(draw: st.DrawFn, descriptor: Descriptor, depth: int = 0) -> dict[str, Any]:
    """Field values for one message: each field set or left at its default; repeated fields and
    maps with several entries; nested messages down to MAX_DEPTH."""
    values: dict[str, Any] = {}
    # dense (each field a coin flip) or sparse (at most two fields): one bad value rejects the
    # whole request, so sparse messages are the ones that get past validation to the search
    every: list[FieldDescriptor] = list(descriptor.fields)
    sparse: bool = draw(st.booleans())
    chosen: list[FieldDescriptor]
    if every and sparse:
        picked: set[FieldDescriptor] = draw(st.sets(st.sampled_from(every), max_size=2))
        chosen = [field for field in every if field in picked]
    else:
        chosen = [field for field in every if draw(st.booleans())]
    for field in chosen:
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            key_field = field.message_type.fields_by_name["key"]
            value_field = field.message_type.fields_by_name["value"]
            values[field.name] = draw(
                st.dictionaries(_scalar(key_field), _value(value_field, depth), max_size=4)
            )
        elif field.is_repeated:
            values[field.name] = draw(st.lists(_value(field, depth), max_size=4))
        else:
            values[field.name] = draw(_value(field, depth))
    return values


def _message_class(descriptor: Descriptor) -> type[pb_message.Message]:
    return message_factory.GetMessageClass(descriptor)


def _build(descriptor: Descriptor, values: dict[str, Any]) -> pb_message.Message:
    message = _message_class(descriptor)()
    for name, value in values.items():
        field = descriptor.fields_by_name[name]
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            target = getattr(message, name)
            value_field = field.message_type.fields_by_name["value"]
            for key, entry in value.items():
                if value_field.message_type is not None:
                    target[key].CopyFrom(_build(value_field.message_type, entry))
                else:
                    target[key] = entry
        elif field.is_repeated:
            target = getattr(message, name)
            for entry in value:
                if field.message_type is not None:
                    target.add().CopyFrom(_build(field.message_type, entry))
                else:
                    target.append(entry)
        elif field.message_type is not None:
            getattr(message, name).CopyFrom(_build(field.message_type, value))
        else:
            setattr(message, name, value)
    return message


def requests_for(method: MethodDescriptor, scratch: Path) -> st.SearchStrategy[pb_message.Message]:
    """Random requests for `method`, kept off the other tests' corpora and the real filesystem."""
    descriptor = method.input_type

    @st.composite
    def build(draw: st.DrawFn) -> pb_message.Message:
        values = draw(message_dicts(descriptor))
        if "corpus_id" in descriptor.fields_by_name:
            if method.name in ("IndexCorpus", "DeleteCorpus"):
                # a throwaway corpus: the session's others stay as they are
                suffix = st.one_of(st.from_regex(r"[a-z0-9_-]{1,20}", fullmatch=True), TEXT)
                values["corpus_id"] = FUZZ_CORPUS_PREFIX + draw(suffix)
            elif draw(st.booleans()):
                # the indexed corpus, so the fuzzed options reach the search itself
                values["corpus_id"] = SAMPLE_CORPUS
        if method.name == "IndexCorpus":
            # a path that does not exist, or an empty scratch directory: never the real filesystem
            values["path"] = draw(
                st.one_of(
                    st.just(str(scratch)),
                    TEXT.filter(lambda s: len(s) < 200).map(lambda s: str(scratch / "missing") + "/" + s),
                )
            )
        return _build(descriptor, values)

    return build()


def rpcs() -> Iterator[tuple[str, MethodDescriptor]]:
    for service, descriptor in SERVICES.items():
        for method in descriptor.methods:
            yield service, method


# Requests the fuzzer once answered with INTERNAL/UNKNOWN (now fixed): always tried first.
REGRESSIONS: dict[str, list[pb_message.Message]] = {
    # an unknown Leg number in the fusion options: UNKNOWN ("Enum Leg has no name defined")
    "fusion.Search": [
        # 40,000 characters read by the question reader before the length check: each phrasing
        # pattern tried at every position held the event loop for minutes
        common_pb2.SearchRequest(corpus_id=SAMPLE_CORPUS, query="'s" * 20_000),
        common_pb2.SearchRequest(
            options=common_pb2.SearchOptions(
                fusion=fusion_options_pb2.FusionOptions(
                    legs=[fusion_options_pb2.LegSetting(leg=cast(legs_pb2.Leg.ValueType, -(2**31)))]
                )
            )
        ),
    ],
    # a corpus id of 30,000 characters echoed in the status message: the client dropped the
    # oversized trailer and answered RESOURCE_EXHAUSTED "Stream removed"
    # a NUL in the path glob or a language reached PostgreSQL, which rejects it in text: UNKNOWN
    "sparse.Search": [
        common_pb2.SearchRequest(
            corpus_id=SAMPLE_CORPUS, query="a\x00b", filters=common_pb2.SearchFilters(path_glob="\x00")
        ),
        common_pb2.SearchRequest(
            corpus_id=SAMPLE_CORPUS, query="cart", filters=common_pb2.SearchFilters(languages=["py\x00"])
        ),
    ],
    "graph.Stats": [graph_pb2.GraphStatsRequest(corpus_id="\U0001d518" * 30_000)],
    # a NUL in a chunk id reached PostgreSQL as a parameter: UNKNOWN (CharacterNotInRepertoireError)
    "graph.ChunkEntities": [graph_pb2.ChunkEntitiesRequest(corpus_id=SAMPLE_CORPUS, chunk_id="a\x00b")],
}

RPC_IDS = [f"{service}.{method.name}" for service, method in rpcs()]
# the counts of the whole run, per RPC and status code (printed by test_zz_report)
OUTCOMES: Counter[tuple[str, str]] = Counter()
# one message per status code, to show what kind of rejection each is
SAMPLE_DETAILS: dict[str, str] = {}


def _call(
    channel: grpc.Channel, service: str, method: MethodDescriptor
) -> Callable[[pb_message.Message], None]:
    path = f"/{method.containing_service.full_name}/{method.name}"
    response_class = _message_class(method.output_type)
    serialize: Callable[[pb_message.Message], bytes] = lambda m: m.SerializeToString()  # noqa: E731
    if method.server_streaming:
        stream = channel.unary_stream(path, serialize, response_class.FromString)

        def call_stream(request: pb_message.Message) -> None:
            for _ in stream(request, timeout=DEADLINE_S):
                pass

        return call_stream
    unary = channel.unary_unary(path, serialize, response_class.FromString)

    def call_unary(request: pb_message.Message) -> None:
        unary(request, timeout=DEADLINE_S)

    return call_unary


@pytest.mark.parametrize(("service", "method"), list(rpcs()), ids=RPC_IDS)
async def test_rpc_answers_fuzzed_requests_without_internal_errors(
    stack: Stack,
    sample_corpus: indexer_pb2.IndexProgress,
    tmp_path: Path,
    service: str,
    method: MethodDescriptor,
) -> None:
    rpc_id = f"{service}.{method.name}"
    # A blocking client in a worker thread: the servers keep running on this test's event loop.
    channel = grpc.insecure_channel(f"127.0.0.1:{stack.servers[service].port}")
    call = _call(channel, service, method)

    @settings(
        max_examples=EXAMPLES_PER_RPC,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(request=requests_for(method, tmp_path))
    def property_holds(request: pb_message.Message) -> None:
        try:
            call(request)
        except grpc.RpcError as error:
            code = error.code()  # type: ignore[attr-defined]
            details = error.details()  # type: ignore[attr-defined]
            OUTCOMES[(rpc_id, code.name)] += 1
            SAMPLE_DETAILS.setdefault(f"{rpc_id} {code.name}", str(details)[:160])
            assert code in CLIENT_ERRORS, f"{rpc_id} answered {code.name}: {details!r} to {request!r:.2000}"
            assert details, f"{rpc_id} rejected with {code.name} and no message: {request!r:.2000}"
            # the transport dropping the answer (e.g. an oversized status trailer) is no rejection
            assert "Stream removed" not in details, f"{rpc_id}: {details!r} to {request!r:.2000}"
        else:
            OUTCOMES[(rpc_id, "OK")] += 1

    for regression in REGRESSIONS.get(rpc_id, []):
        property_holds = example(request=regression)(property_holds)
    try:
        await asyncio.to_thread(property_holds)
    finally:
        channel.close()
        await _drop_fuzz_corpora(stack)
    # the server is still up and the shared corpus untouched after the run
    async with stack.channel("indexer") as aio_channel:
        listed = await indexer_pb2_grpc.IndexerStub(aio_channel).ListCorpora(indexer_pb2.ListCorporaRequest())
    assert SAMPLE_CORPUS in {c.corpus_id for c in listed.corpora}


async def _drop_fuzz_corpora(stack: Stack) -> None:
    async with stack.channel("indexer") as channel:
        stub = indexer_pb2_grpc.IndexerStub(channel)
        listed = await stub.ListCorpora(indexer_pb2.ListCorporaRequest())
        for corpus in listed.corpora:
            if corpus.corpus_id.startswith(FUZZ_CORPUS_PREFIX):
                await stub.DeleteCorpus(indexer_pb2.DeleteCorpusRequest(corpus_id=corpus.corpus_id))


def test_zz_report(capsys: pytest.CaptureFixture[str]) -> None:
    """The counts per RPC and status code of this run (shown with -s; `make fuzz` does)."""
    codes = sorted({code for _, code in OUTCOMES})
    rows = sorted({rpc for rpc, _ in OUTCOMES})
    width = max([len(r) for r in rows] + [len("rpc")])
    lines = [f"{'rpc':<{width}} " + " ".join(f"{c:>17}" for c in codes) + f" {'total':>7}"]
    for rpc in rows:
        counts = [OUTCOMES[(rpc, c)] for c in codes]
        lines.append(f"{rpc:<{width}} " + " ".join(f"{n:>17}" for n in counts) + f" {sum(counts):>7}")
    lines.append(
        f"{'total':<{width}} "
        + " ".join(f"{sum(OUTCOMES[(r, c)] for r in rows):>17}" for c in codes)
        + f" {sum(OUTCOMES.values()):>7}"
    )
    with capsys.disabled():
        print("\nfuzzed requests per RPC and status code\n" + "\n".join(lines))
        print(
            "a message of each rejection\n"
            + "\n".join(f"{k}: {v}" for k, v in sorted(SAMPLE_DETAILS.items()))
        )
    assert all(code == "OK" or grpc.StatusCode[code] in CLIENT_ERRORS for code in codes)
