"""``ToolCallReady`` comes once no more fragments can come for a call: when the next call starts and the
call's arguments are a complete JSON object (the sequential case: no later than before), else at the finish
(a server interleaving the fragments of parallel calls: index 0, 1, 0, 1)."""

from __future__ import annotations

from typing import Any

import orjson

from agentflow.http.sse import SseEvent
from agentflow.model.events import (
    ModelCompleted,
    ModelEvent,
    ToolCallArgumentsDelta,
    ToolCallReady,
    ToolCallStarted,
)
from agentflow.model.messages import ToolCall
from agentflow.providers.openai.chat_stream import ChatStreamDecoder


def fragment(index: int, arguments: str, *, id: str | None = None, name: str | None = None) -> SseEvent:
    function: dict[str, Any] = {"arguments": arguments}
    if name is not None:
        function["name"] = name
    call: dict[str, Any] = {"index": index, "function": function}
    if id is not None:
        call["id"] = id
    return SseEvent(orjson.dumps({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}).decode())


FINISH = SseEvent('{"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}')


def shape(events: list[ModelEvent]) -> list[tuple[str, int, str]]:
    out = []
    for e in events:
        if isinstance(e, ToolCallStarted):
            out.append(("started", e.index, e.name))
        elif isinstance(e, ToolCallArgumentsDelta):
            out.append(("delta", e.index, e.delta))
        elif isinstance(e, ToolCallReady):
            out.append(("ready", e.index, e.call.arguments))
    return out


def test_interleaved_fragments_come_before_their_calls_ready() -> None:
    decoder = ChatStreamDecoder()
    events: list[ModelEvent] = []
    for event in (
        fragment(0, "", id="a", name="f"),
        fragment(1, "", id="b", name="g"),
        fragment(0, '{"x":1}'),
        fragment(1, '{"y":2}'),
        FINISH,
    ):
        events += decoder.feed(event)
    events += decoder.finish()
    assert shape(events) == [
        ("started", 0, "f"),
        ("started", 1, "g"),
        ("delta", 0, '{"x":1}'),
        ("delta", 1, '{"y":2}'),
        ("ready", 0, '{"x":1}'),
        ("ready", 1, '{"y":2}'),
    ]
    completed = events[-1]
    assert isinstance(completed, ModelCompleted)
    assert completed.response.message.tool_calls == (
        ToolCall("a", "f", '{"x":1}'),
        ToolCall("b", "g", '{"y":2}'),
    )


def test_a_sequential_call_is_ready_as_soon_as_the_next_starts() -> None:
    decoder = ChatStreamDecoder()
    decoder.feed(fragment(0, '{"x":', id="a", name="f"))
    decoder.feed(fragment(0, "1}"))
    assert shape(decoder.feed(fragment(1, "", id="b", name="g"))) == [
        ("ready", 0, '{"x":1}'),
        ("started", 1, "g"),
    ]


def test_an_interleaved_call_is_ready_once_complete_when_another_starts() -> None:
    decoder = ChatStreamDecoder()
    decoder.feed(fragment(0, '{"x":', id="a", name="f"))
    assert shape(decoder.feed(fragment(1, "{}", id="b", name="g"))) == [
        ("started", 1, "g"),
        ("delta", 1, "{}"),
    ]
    assert shape(decoder.feed(fragment(0, "1}"))) == [("delta", 0, "1}")]
    assert shape(decoder.feed(fragment(2, "{}", id="c", name="h"))) == [
        ("ready", 0, '{"x":1}'),
        ("ready", 1, "{}"),
        ("started", 2, "h"),
        ("delta", 2, "{}"),
    ]


def test_calls_displaced_from_their_index_are_ready_at_once() -> None:
    # Ollama sends parallel calls all at index 0: a new id there means the call before it is over.
    decoder = ChatStreamDecoder()
    decoder.feed(fragment(0, "", id="a", name="f"))
    events = decoder.feed(fragment(0, "{}", id="b", name="g"))
    assert shape(events)[0] == ("ready", 0, "")
    assert shape(decoder.feed(FINISH)) == [("ready", 1, "{}")]
