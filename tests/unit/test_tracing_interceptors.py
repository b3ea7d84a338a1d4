"""OpenTelemetry's gRPC interceptors are installed only while spans are recorded."""

from __future__ import annotations

import pytest
from opentelemetry.instrumentation.grpc._aio_client import UnaryUnaryAioClientInterceptor
from opentelemetry.instrumentation.grpc._aio_server import OpenTelemetryAioServerInterceptor

from tribrid import telemetry


def test_without_a_recording_tracer_no_tracing_interceptor_is_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(telemetry, "tracing_on", lambda: False)
    assert telemetry.server_interceptors() == []  # metrics: tribrid.server.CallPolicy
    assert telemetry.client_interceptors() == []


def test_with_a_recording_tracer_every_hop_is_traced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(telemetry, "tracing_on", lambda: True)
    server = [type(i) for i in telemetry.server_interceptors()]
    assert server == [OpenTelemetryAioServerInterceptor]
    assert any(isinstance(i, UnaryUnaryAioClientInterceptor) for i in telemetry.client_interceptors())
