"""Helpers of the tracing tests: reading a span tree, counting span ends, a tool and scripts."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import anyio.lowlevel
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from agentflow.testing.fake import reply
from agentflow.tools import tool


class EndCounter(SpanProcessor):
    """A span processor counting, per span, how often it started and ended. The SDK ignores a second
    ``end()`` (with a warning, which the ``conftest`` fixture turns into a failure), so this tells a span that
    never ended."""

    def __init__(self) -> None:
        self.started: Counter[int] = Counter()
        self.ended: Counter[int] = Counter()

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self.started[span.context.span_id] += 1

    def on_end(self, span: ReadableSpan) -> None:
        assert span.context is not None
        self.ended[span.context.span_id] += 1

    def assert_all_ended_once(self) -> None:
        assert self.started, "no span was started"
        assert set(self.started) == set(self.ended), "a span was never ended"
        assert set(self.ended.values()) == {1}


def tree(spans: Sequence[ReadableSpan]) -> list[str]:
    """The spans as an indented outline, children in start order: ``["run", "  chat", …]``."""
    children: dict[int | None, list[ReadableSpan]] = {}
    ids = {s.context.span_id for s in spans if s.context is not None}
    for span in spans:
        parent = span.parent.span_id if span.parent is not None else None
        children.setdefault(parent if parent in ids else None, []).append(span)
    lines: list[str] = []

    def walk(parent: int | None, depth: int) -> None:
        for span in sorted(children.get(parent, []), key=lambda s: (s.start_time or 0, s.name)):
            lines.append("  " * depth + span.name)
            assert span.context is not None
            walk(span.context.span_id, depth + 1)

    walk(None, 0)
    return lines


def named(spans: Sequence[ReadableSpan], name: str) -> list[ReadableSpan]:
    """The spans called ``name``, in start order."""
    return sorted((s for s in spans if s.name == name), key=lambda s: s.start_time or 0)


def one(spans: Sequence[ReadableSpan], name: str) -> ReadableSpan:
    """The one span called ``name``."""
    (span,) = named(spans, name)
    return span


def parent_of(span: ReadableSpan, spans: Sequence[ReadableSpan]) -> ReadableSpan:
    """``span``'s parent among ``spans``."""
    assert span.parent is not None, f"{span.name} has no parent"
    (parent,) = [s for s in spans if s.context is not None and s.context.span_id == span.parent.span_id]
    return parent


def attributes(span: ReadableSpan) -> dict[str, Any]:
    """The span's attributes as a plain dict."""
    return dict(span.attributes or {})


CONTENT_KEYS = {
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.definitions",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "agentflow.plan.text",
    "agentflow.code.source",
    "agentflow.code.stdout",
    "agentflow.code.stderr",
    "agentflow.output.error",
}
"""The attributes that hold content: set only with ``capture_content=True``."""


@tool
async def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    await anyio.lowlevel.checkpoint()  # a tool that waits, so the step's calls run side by side
    return a + b


def tool_loop_script() -> list[Any]:
    """Two calls to ``add`` in one step, then the answer."""
    return [
        reply(tool_calls=[("add", {"a": 1, "b": 2}), ("add", {"a": 3, "b": 4})], usage=(100, 20)),
        reply("3 and 7.", usage=(150, 10)),
    ]
