"""schemathesis drives the HTTP bridge from its generated OpenAPI document: no operation answers 5xx.

TRIBRID_FUZZ_EXAMPLES sets the examples per operation, as for tests/e2e/test_fuzz.py. Indexing and
deleting are left to the gRPC fuzzer, which keeps them off the real filesystem and the shared
corpora; here every other operation runs against the in-process stack.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections import Counter
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

from services.bridge.service import BridgeServer, start_bridge
from tests import REPO_ROOT
from tests.stack import Stack
from tribrid.v1 import indexer_pb2

EXAMPLES_PER_OPERATION = int(os.environ.get("TRIBRID_FUZZ_EXAMPLES", "12"))
SCHEMA = schemathesis.openapi.from_dict(
    json.loads((REPO_ROOT / "tribrid" / "v1" / "openapi.json").read_text())
)
LEFT_TO_GRPC_FUZZER = {("POST", "/v1/index"), ("DELETE", "/v1/corpora/{corpus_id}")}
OPERATIONS: list[schemathesis.APIOperation[Any, Any, Any, Any]] = [
    op
    for op in (result.ok() for result in SCHEMA.get_all_operations())  # type: ignore[union-attr]
    if (op.method.upper(), op.path) not in LEFT_TO_GRPC_FUZZER
]
STATUSES: Counter[tuple[str, int]] = Counter()


async def _bridge(stack: Stack) -> BridgeServer:
    update = {f"{name}_address": f"127.0.0.1:{server.port}" for name, server in stack.servers.items()}
    cfg = stack.cfg.model_copy(update={"services": stack.cfg.services.model_copy(update=update)})
    return await start_bridge(cfg, "127.0.0.1", 0)


@pytest.mark.parametrize("operation", OPERATIONS, ids=[f"{op.method.upper()} {op.path}" for op in OPERATIONS])
async def test_bridge_operation_never_answers_5xx(
    stack: Stack,
    sample_corpus: indexer_pb2.IndexProgress,
    operation: schemathesis.APIOperation[Any, Any, Any, Any],
) -> None:
    bridge = await _bridge(stack)
    base_url = f"http://127.0.0.1:{bridge.port}"
    label = f"{operation.method.upper()} {operation.path}"

    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy())
    def property_holds(case: schemathesis.Case[Any]) -> None:
        # a blocking client in a worker thread: the bridge runs on this test's event loop
        response = case.call(base_url=base_url, timeout=30)
        STATUSES[(label, response.status_code)] += 1
        headers = {name.lower() for name in case.headers or {}}
        # a deadline the caller set (grpc-timeout, X-Request-Timeout-Ms) may pass: 504 is its answer
        caller_deadline = bool(headers & {"grpc-timeout", "x-request-timeout-ms"})
        assert response.status_code < 500 or (response.status_code == 504 and caller_deadline), (
            f"{label} answered {response.status_code}: {response.text[:500]} to"
            f" {case.path_parameters} {case.query} {case.headers} {str(case.body)[:500]}"
        )
        if response.status_code >= 400:
            assert response.text, f"{label} answered {response.status_code} without a message"

    try:
        await asyncio.to_thread(property_holds)
    finally:
        await bridge.stop(0)
    print(
        f"\n{label}: "
        + ", ".join(f"{status}: {n}" for (op, status), n in sorted(STATUSES.items()) if op == label)
    )
