"""Structured logging and OpenTelemetry tracing, set up once per process."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Sequence
from typing import Any

import grpc
from opentelemetry import trace
from opentelemetry.instrumentation.grpc import aio_client_interceptors, aio_server_interceptor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

from tribrid.config import TelemetryConfig

_STANDARD_RECORD_KEYS = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """One JSON object per line; `extra={...}` fields become top-level keys."""

    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        payload.update({k: v for k, v in record.__dict__.items() if k not in _STANDARD_RECORD_KEYS})
        if record.exc_info:
            payload["exc"] = self.formatException(record.exc_info)
        return json.dumps(payload, default=str)


def setup_logging(cfg: TelemetryConfig) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if cfg.log_json:
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(cfg.log_level)


_tracing_ready = False


def setup_tracing(cfg: TelemetryConfig, service_name: str | None = None) -> None:
    """Install a tracer provider exporting to OTLP and/or the console, if configured."""
    global _tracing_ready
    if _tracing_ready:
        return
    _tracing_ready = True
    if not cfg.otlp_endpoint and not cfg.console_exporter:
        return  # the API's no-op tracer: interceptors cost next to nothing
    provider = TracerProvider(resource=Resource.create({"service.name": service_name or cfg.service_name}))
    if cfg.otlp_endpoint:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (  # type: ignore[import-not-found]
            OTLPSpanExporter,
        )

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=cfg.otlp_endpoint)))
    if cfg.console_exporter:
        provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
    trace.set_tracer_provider(provider)


def server_interceptors() -> Sequence[grpc.aio.ServerInterceptor]:
    return [aio_server_interceptor()]  # type: ignore[no-untyped-call]


def client_interceptors() -> Sequence[grpc.aio.ClientInterceptor]:
    return list(aio_client_interceptors())  # type: ignore[no-untyped-call]


tracer = trace.get_tracer("tribrid")
