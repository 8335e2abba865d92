"""What a span records of a run's content when ``capture_content=True``: texts cut to a limit, and the
GenAI conventions' message shapes as JSON text.

Pure functions; the recorder calls them only when content is captured, so a run traced without content
never builds any of it. Texts are cut before they are put into JSON, so a long answer still gives valid
JSON (the tool arguments, the model's own JSON text, are cut as they are).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from ..model.messages import ToolCall
from ..model.response import FinishReason

__all__ = ["capped", "finish_reason", "input_messages", "output_messages"]

_FINISH_REASONS = {
    FinishReason.STOP: "stop",
    FinishReason.LENGTH: "length",
    FinishReason.TOOL_EXECUTION: "tool_call",
    FinishReason.CONTENT_FILTER: "content_filter",
    FinishReason.OTHER: "other",
}


def capped(text: str, limit: int) -> str:
    """``text``, cut to ``limit`` characters (the last one an ``…`` when it was cut).

    >>> capped("Paris, France", 6), capped("Paris", 6)
    ('Paris…', 'Paris')
    """
    return text if len(text) <= limit else text[: limit - 1] + "…"


def finish_reason(reason: object) -> str | None:
    """A ``FinishReason`` as the GenAI conventions name it (``stop``, ``length``, ``tool_call``…).

    >>> finish_reason(FinishReason.TOOL_EXECUTION), finish_reason(None)
    ('tool_call', None)
    """
    return _FINISH_REASONS.get(reason) if isinstance(reason, FinishReason) else None


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def input_messages(text: str, limit: int) -> str:
    """A run's input as ``gen_ai.input.messages``: one user message with one text part.

    >>> input_messages("Weather in Paris?", 100)
    '[{"role":"user","parts":[{"type":"text","content":"Weather in Paris?"}]}]'
    """
    return _json([{"role": "user", "parts": [{"type": "text", "content": capped(text, limit)}]}])


def output_messages(
    text: str | None,
    limit: int,
    *,
    reasoning: str | None = None,
    calls: Iterable[ToolCall] = (),
    finish: str | None = None,
) -> str:
    """A model's answer as ``gen_ai.output.messages``: one assistant message with its reasoning, text and
    tool calls as parts (the calls' arguments as the model wrote them, cut to ``limit``).

    >>> output_messages("Sunny.", 100, finish="stop")
    '[{"role":"assistant","parts":[{"type":"text","content":"Sunny."}],"finish_reason":"stop"}]'
    """
    parts: list[dict[str, str]] = []
    if reasoning:
        parts.append({"type": "reasoning", "content": capped(reasoning, limit)})
    if text:
        parts.append({"type": "text", "content": capped(text, limit)})
    for call in calls:
        arguments = capped(call.arguments, limit)
        parts.append({"type": "tool_call", "id": call.id, "name": call.name, "arguments": arguments})
    message: dict[str, Any] = {"role": "assistant", "parts": parts}
    if finish is not None:
        message["finish_reason"] = finish
    return _json([message])
