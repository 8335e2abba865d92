"""The ``index`` of the Responses tool-call events is the call's position among the response's function calls.

Chat Completions numbers calls 0, 1, … within a reply; ``output_index`` also counts the reasoning and message
items before the calls, so using it would give the same reply different indexes on the two protocols.
"""

from __future__ import annotations

from typing import Any

from responses_support import run_decoder, sse_body

from agentflow.model.events import ModelEvent, ToolCallArgumentsDelta, ToolCallReady, ToolCallStarted
from agentflow.model.messages import ToolCall

REASONING = {"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "Why"}]}


def created() -> dict[str, Any]:
    envelope = {"id": "resp_1", "object": "response", "model": "m", "status": "in_progress", "output": []}
    return {"type": "response.created", "response": envelope}


def completed(output: list[Any]) -> dict[str, Any]:
    envelope = {"id": "resp_1", "object": "response", "model": "m", "status": "completed", "output": output}
    return {"type": "response.completed", "response": envelope}


def message(text: str) -> dict[str, Any]:
    content = [{"type": "output_text", "text": text, "annotations": []}]
    return {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed", "content": content}


def call_item(idx: int, arguments: str = "", status: str = "completed") -> dict[str, Any]:
    return {
        "id": f"fc_{idx}",
        "type": "function_call",
        "status": status,
        "call_id": f"call_{idx}",
        "name": f"tool_{idx}",
        "arguments": arguments,
    }


def added(idx: int, item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "response.output_item.added", "output_index": idx, "item": item}


def done(idx: int, item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "response.output_item.done", "output_index": idx, "item": item}


def args_delta(idx: int, delta: str) -> dict[str, Any]:
    return {
        "type": "response.function_call_arguments.delta",
        "output_index": idx,
        "item_id": f"fc_{idx}",
        "delta": delta,
    }


def _call_events(events: list[ModelEvent]) -> list[tuple[str, int]]:
    names = {ToolCallStarted: "started", ToolCallArgumentsDelta: "delta", ToolCallReady: "ready"}
    return [(names[type(e)], e.index) for e in events if type(e) in names]  # type: ignore[attr-defined]


def _arguments_done(idx: int, arguments: str) -> dict[str, Any]:
    return {
        "type": "response.function_call_arguments.done",
        "output_index": idx,
        "item_id": f"fc_{idx}",
        "arguments": arguments,
    }


def test_calls_after_reasoning_and_a_message_are_indexed_from_zero_in_every_event() -> None:
    # Output items: reasoning (0), message (1), then the calls (2 and 3): the events say 0 and 1.
    body = sse_body(
        created(),
        done(0, REASONING),
        done(1, message("Let me check.")),
        added(2, call_item(2, status="in_progress")),
        args_delta(2, '{"x":'),
        args_delta(2, '"a"}'),
        _arguments_done(2, '{"x":"a"}'),
        done(2, call_item(2, '{"x":"a"}')),
        added(3, call_item(3, status="in_progress")),
        args_delta(3, '{"x":"b"}'),
        _arguments_done(3, '{"x":"b"}'),
        done(3, call_item(3, '{"x":"b"}')),
        completed(
            [REASONING, message("Let me check."), call_item(2, '{"x":"a"}'), call_item(3, '{"x":"b"}')]
        ),
    )
    events, error = run_decoder(body)
    assert error is None
    assert _call_events(events) == [
        ("started", 0),
        ("delta", 0),
        ("delta", 0),
        ("ready", 0),
        ("started", 1),
        ("delta", 1),
        ("ready", 1),
    ]
    ready = [e for e in events if isinstance(e, ToolCallReady)]
    assert [e.call for e in ready] == [
        ToolCall("call_2", "tool_2", '{"x":"a"}'),
        ToolCall("call_3", "tool_3", '{"x":"b"}'),
    ]


def test_calls_announced_only_at_completion_are_indexed_by_their_position() -> None:
    # A server that streams no call events at all: the calls are caught up from the final output.
    output = [message("Hi"), REASONING, call_item(2, "{}"), call_item(3, "{}")]
    events, error = run_decoder(sse_body(created(), completed(output)))
    assert error is None
    assert _call_events(events) == [("started", 0), ("ready", 0), ("started", 1), ("ready", 1)]


def test_an_aggregated_output_keeps_each_calls_index_from_started_to_ready() -> None:
    # A lenient server: arguments for an item that never gets a name (left out of the aggregated output),
    # then a named call, then an empty final output. The named call's Ready carries its Started index,
    # although the aggregated output list puts it first.
    body = sse_body(
        args_delta(0, '{"a":1}'),
        added(1, call_item(1, status="in_progress")),
        args_delta(1, "{}"),
        completed([]),
    )
    events, error = run_decoder(body)
    assert error is None
    assert _call_events(events) == [("delta", 0), ("started", 1), ("delta", 1), ("ready", 1)]
