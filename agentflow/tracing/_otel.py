"""The one place ``agentflow.tracing`` imports OpenTelemetry from: the API only, never the SDK.

Without ``opentelemetry-api`` installed, importing this module raises a ``ModuleNotFoundError`` that says
what to install, instead of a bare "No module named 'opentelemetry'".
"""

from __future__ import annotations

try:
    from opentelemetry import context as otel_context
    from opentelemetry import trace
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer, TracerProvider
    from opentelemetry.util.types import AttributeValue
except ModuleNotFoundError as exc:
    if not (exc.name or "").startswith("opentelemetry"):
        raise
    raise ModuleNotFoundError(
        "agentflow.tracing needs the OpenTelemetry API: pip install 'agentflow[otel]' (or "
        "opentelemetry-api); to export the spans, install opentelemetry-sdk and an exporter as well",
        name=exc.name,
    ) from exc

__all__ = [
    "AttributeValue",
    "Context",
    "Span",
    "SpanKind",
    "Status",
    "StatusCode",
    "Tracer",
    "TracerProvider",
    "otel_context",
    "trace",
]
