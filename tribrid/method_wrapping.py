"""Server interceptors that wrap a method's handler once, not on every call.

grpc.aio asks every server interceptor for the handler of each call it serves. An interceptor that
built its wrapper there built closures and a new `RpcMethodHandler` per call, per interceptor.
`WrapsMethods` builds a method's wrapper the first time the method is called and hands the same
one out after. (That alone saved little: what each call costs is each interceptor and each wrapper
layer it runs through, which is why the services have one, `tribrid.server.CallPolicy`.)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeAlias

import grpc

if TYPE_CHECKING:  # generic in the type stubs only
    Handler: TypeAlias = grpc.RpcMethodHandler[Any, Any]
else:
    Handler = grpc.RpcMethodHandler


class WrapsMethods(grpc.aio.ServerInterceptor):
    """A server interceptor defined by `wrap(method, handler)`, called once per method (and again
    only if the handler under it changes)."""

    def __init__(self) -> None:
        # method -> (the handler wrapped, its wrapper); a server has a fixed set of methods
        self._wrapped: dict[str, tuple[Handler, Handler]] = {}

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Handler | None]],
        details: grpc.HandlerCallDetails,
    ) -> Handler | None:
        handler = await continuation(details)
        if handler is None:  # no such method: nothing to keep
            return None
        method: str = details.method  # type: ignore[attr-defined]
        known = self._wrapped.get(method)
        if known is None or known[0] is not handler:
            known = (handler, self.wrap(method, handler))
            self._wrapped[method] = known
        return known[1]

    def wrap(self, method: str, handler: Handler) -> Handler:
        """The handler that serves `method`'s calls in place of `handler`."""
        raise NotImplementedError
