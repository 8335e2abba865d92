"""What a span records of a run's content when content is captured: texts cut to a limit, and the GenAI
conventions' message shapes as JSON text.

Pure functions; the recorder calls them only when content is captured, so a run traced without content
never builds any of it. Texts are cut before they are put into JSON, so a long answer still gives valid
JSON. A tool call's arguments (the model's own JSON text) become a JSON value when they are whole and valid,
as the conventions ask, and stay text, cut as they are, otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from ..model.events import to_jsonable
from ..model.messages import ToolCall
from ..model.response import FinishReason

__all__ = [
    "arguments_value",
    "assistant_message",
    "capped",
    "finish_reason",
    "input_messages",
    "json_text",
    "output_messages",
    "user_message",
]

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


def json_text(value: Any, limit: int) -> str:
    """Any value (a progress event's ``data``) as JSON text, cut to ``limit``.

    >>> json_text({"page": 2}, 100), json_text(list(range(50)), 10)
    ('{"page":2}', '[0,1,2,3,…')
    """
    return capped(orjson.dumps(to_jsonable(value)).decode(), limit)


def arguments_value(arguments: str, limit: int) -> Any:
    """A call's arguments (the model's JSON text) for a message part: the JSON value when whole and valid,
    else the text, cut.

    >>> arguments_value('{"a": 1}', 100), arguments_value("{oops", 100), arguments_value('{"a": 12345}', 5)
    ({'a': 1}, '{oops', '{"a"…')
    """
    if arguments and len(arguments) <= limit:
        try:
            return orjson.loads(arguments)
        except orjson.JSONDecodeError:
            pass
    return capped(arguments, limit)


def user_message(text: str, limit: int) -> dict[str, Any]:
    """A user message with one text part.

    >>> user_message("Weather in Paris?", 100)
    {'role': 'user', 'parts': [{'type': 'text', 'content': 'Weather in Paris?'}]}
    """
    return {"role": "user", "parts": [{"type": "text", "content": capped(text, limit)}]}


def assistant_message(
    text: str | None,
    limit: int,
    *,
    reasoning: str | None = None,
    calls: Iterable[ToolCall] = (),
    finish: str | None = None,
) -> dict[str, Any]:
    """A model's answer: one assistant message with its reasoning, text and tool calls as parts.

    >>> assistant_message("", 100, calls=[ToolCall("c1", "add", '{"a": 1}')])
    {'role': 'assistant', 'parts': [{'type': 'tool_call', 'id': 'c1', 'name': 'add', 'arguments': {'a': 1}}]}
    """
    parts: list[dict[str, Any]] = []
    if reasoning:
        parts.append({"type": "reasoning", "content": capped(reasoning, limit)})
    if text:
        parts.append({"type": "text", "content": capped(text, limit)})
    for call in calls:
        arguments = arguments_value(call.arguments, limit)
        parts.append({"type": "tool_call", "id": call.id, "name": call.name, "arguments": arguments})
    message: dict[str, Any] = {"role": "assistant", "parts": parts}
    if finish is not None:
        message["finish_reason"] = finish
    return message


def input_messages(text: str, limit: int) -> str:
    """A run's input as ``gen_ai.input.messages``: one user message with one text part.

    >>> input_messages("Weather in Paris?", 100)
    '[{"role":"user","parts":[{"type":"text","content":"Weather in Paris?"}]}]'
    """
    return _json([user_message(text, limit)])


def output_messages(
    text: str | None,
    limit: int,
    *,
    reasoning: str | None = None,
    calls: Iterable[ToolCall] = (),
    finish: str | None = None,
) -> str:
    """A model's answer as ``gen_ai.output.messages`` (see ``assistant_message``).

    >>> output_messages("Sunny.", 100, finish="stop")
    '[{"role":"assistant","parts":[{"type":"text","content":"Sunny."}],"finish_reason":"stop"}]'
    """
    return _json([assistant_message(text, limit, reasoning=reasoning, calls=calls, finish=finish)])
