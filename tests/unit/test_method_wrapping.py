"""The services' server interceptor wraps each method's handler once, and every call still goes
through the wrapper: counted, its request errors answered, its admission checked."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from tribrid import telemetry
from tribrid.method_wrapping import Handler, WrapsMethods
from tribrid.options import RequestError
from tribrid.server import CallPolicy
from tribrid.v1 import common_pb2, sparse_pb2_grpc

METHOD = "/tribrid.v1.SparseSearch/Search"


class CountingWraps(WrapsMethods):
    """Wraps with a handler that counts its calls; counts how often it wrapped."""

    def __init__(self) -> None:
        super().__init__()
        self.wraps: list[str] = []
        self.calls = 0

    def wrap(self, method: str, handler: Handler) -> Handler:
        self.wraps.append(method)
        inner = handler.unary_unary
        assert inner is not None

        async def counted(request: Any, context: Any) -> Any:
            self.calls += 1
            return await inner(request, context)

        return grpc.unary_unary_rpc_method_handler(
            counted, handler.request_deserializer, handler.response_serializer
        )


class Answers(sparse_pb2_grpc.SparseSearchServicer):
    async def Search(self, request: common_pb2.SearchRequest, context: Any) -> common_pb2.SearchResponse:
        if request.top_k > 100:
            raise RequestError(grpc.StatusCode.INVALID_ARGUMENT, "top_k must be at most 100")
        if request.query == "slow store":  # as asyncpg raises past its statement timeout
            raise TimeoutError
        if request.query == "store down":
            raise ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 5432)")
        if request.query == "unreadable file":  # an OSError, but no store's
            raise PermissionError(13, "Permission denied")
        return common_pb2.SearchResponse(took_ms=float(request.top_k))


async def _serve(*interceptors: grpc.aio.ServerInterceptor) -> tuple[grpc.aio.Server, int]:
    server = grpc.aio.server(interceptors=list(interceptors))
    sparse_pb2_grpc.add_SparseSearchServicer_to_server(Answers(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, port


async def test_a_method_is_wrapped_once_and_every_call_runs_the_wrapper() -> None:
    counting = CountingWraps()
    server, port = await _serve(counting, CallPolicy(max_in_flight=4))
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = sparse_pb2_grpc.SparseSearchStub(channel)
            answers = [await stub.Search(common_pb2.SearchRequest(top_k=k)) for k in (1, 2, 3)]
            with pytest.raises(grpc.aio.AioRpcError) as rejected:
                await stub.Search(common_pb2.SearchRequest(top_k=101))
    finally:
        await server.stop(None)
    assert [a.took_ms for a in answers] == [1.0, 2.0, 3.0]
    assert counting.wraps == [METHOD]  # four calls, one wrapper
    assert counting.calls == 4
    # the wrappers under it are kept as well, and still answer what the caller must fix
    assert rejected.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert rejected.value.details() == "top_k must be at most 100"


async def test_the_call_policy_counts_each_call_with_its_code() -> None:
    requests = telemetry.METRICS.requests
    before = {code: requests.labels(METHOD, code)._value.get() for code in ("OK", "INVALID_ARGUMENT")}
    server, port = await _serve(CallPolicy())
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = sparse_pb2_grpc.SparseSearchStub(channel)
            for k in (1, 2):
                await stub.Search(common_pb2.SearchRequest(top_k=k))
            with pytest.raises(grpc.aio.AioRpcError):
                await stub.Search(common_pb2.SearchRequest(top_k=101))
    finally:
        await server.stop(None)
    after = {code: requests.labels(METHOD, code)._value.get() for code in before}
    assert after["OK"] - before["OK"] == 2
    assert after["INVALID_ARGUMENT"] - before["INVALID_ARGUMENT"] == 1


async def test_a_store_that_failed_is_unavailable_naming_what_it_raised() -> None:
    server, port = await _serve(CallPolicy())
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = sparse_pb2_grpc.SparseSearchStub(channel)
            failed = []
            for query in ("slow store", "store down"):
                with pytest.raises(grpc.aio.AioRpcError) as raised:
                    await stub.Search(common_pb2.SearchRequest(query=query, top_k=1))
                failed.append(raised.value)
            with pytest.raises(grpc.aio.AioRpcError) as unknown:
                await stub.Search(common_pb2.SearchRequest(query="unreadable file", top_k=1))
            answered = await stub.Search(common_pb2.SearchRequest(query="fine", top_k=2))
    finally:
        await server.stop(None)
    assert [f.code() for f in failed] == [grpc.StatusCode.UNAVAILABLE] * 2
    assert failed[0].details() == "a store did not answer (TimeoutError)"
    assert failed[1].details() == (
        "a store did not answer (ConnectionRefusedError: [Errno 111] Connect call failed ('127.0.0.1', 5432))"
    )
    assert unknown.value.code() == grpc.StatusCode.UNKNOWN
    assert answered.took_ms == 2.0
