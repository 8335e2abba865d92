"""Fixtures of the tracing tests: an SDK ``TracerProvider`` of their own, never the global one."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tracing_support import EndCounter


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def ends() -> EndCounter:
    return EndCounter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter, ends: EndCounter) -> Iterator[TracerProvider]:
    """Spans go to ``exporter`` as they end; ``ends`` counts the starts and ends of each."""
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(ends)
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield tracer_provider
    tracer_provider.shutdown()


@pytest.fixture(autouse=True)
def _no_ended_span_is_touched(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """The SDK ignores a second ``end()`` and an attribute set on an ended span, with a warning: none here."""
    caplog.set_level(logging.WARNING, logger="opentelemetry.sdk.trace")
    yield
    misuse = [
        r.getMessage()
        for r in caplog.get_records("call")
        if r.name.startswith("opentelemetry.sdk.trace") and "ended span" in r.getMessage()
    ]
    assert not misuse


@pytest.fixture(autouse=True)
def _content_capture_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    """Content capture as the tests say: not switched on by the environment the tests run in."""
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
