"""The ``execute_tool`` span a task is running, for what starts inside the tool call: a nested agent run's
span (``Agent.as_tool``) and spans of the tool's own (``tool_span_context``).

``ToolStarted`` is published in the task that then runs the tool, so the recorder notes the tool's span in a
context variable there. The note is only read while the tool's span is open, and only through a weak
reference, so one left behind in a task changes nothing.
"""

from __future__ import annotations

import weakref
from contextvars import ContextVar

from ._otel import Context, Span

__all__ = ["CALLING_TOOL", "ToolSpan", "tool_span_context"]


class ToolSpan:
    """An ``execute_tool`` span in flight; what a nested run needs to nest under it."""

    __slots__ = ("__weakref__", "ambient", "context", "open", "progress", "span")

    def __init__(self, span: Span, context: Context, ambient: Span) -> None:
        self.span = span
        self.context = context  # the span's context, for a nested run's span
        self.ambient = ambient  # the span current where the calling run started (see ``RunRecorder._parent``)
        self.open = True
        self.progress = 0  # the ToolProgress events seen (recorded up to a cap)


CALLING_TOOL: ContextVar[weakref.ref[ToolSpan] | None] = ContextVar(
    "agentflow_tracing_calling_tool", default=None
)
"""The tool call a task is running, as its ``ToolStarted`` left it."""


def tool_span_context() -> Context | None:
    """Inside a tool of a traced run: the OpenTelemetry context of its ``execute_tool`` span, else ``None``.

    The tracer never makes its spans current (a step's tools run concurrently, in tasks of their own), so a
    span a tool starts is by default a sibling of the run's, under the caller's span. To nest it under the
    tool call instead, start it in this context::

        @tool
        async def search(query: str) -> list[str]:
            with tracer.start_as_current_span("search index", context=tool_span_context()):
                ...  # spans of instrumented libraries (HTTP, databases) nest here too

    ``None`` (outside a traced tool call) makes OpenTelemetry use the current context, as without it. An
    instrumented agent run inside a tool (``Agent.as_tool``) finds its parent this way by itself.
    """
    ref = CALLING_TOOL.get()
    tool = ref() if ref is not None else None
    return tool.context if tool is not None and tool.open else None
