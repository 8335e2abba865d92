"""Responses streams whose ``output_item.added`` lacks the ``call_id`` (only the item ``id``, or neither):
calls are keyed by ``output_index`` and announced once their ``call_id`` is known, so every call gets
exactly one ``ToolCallStarted`` and one ``ToolCallReady``, under its real id. Before: two announcements
(under ``fc_1`` then ``call_1``), or a ``ProtocolError`` although ``output_item.done`` brought the
``call_id``."""

from __future__ import annotations

from typing import Any

import pytest
from responses_support import run_decoder, sse_body

from agentflow.model.events import ModelCompleted, ToolCallArgumentsDelta, ToolCallReady, ToolCallStarted
from agentflow.model.messages import ToolCall

DONE = {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "f", "arguments": '{"a":1}'}


def stream(added: dict[str, Any], *, arguments_done: bool = True) -> str:
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": "r", "status": "in_progress", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": added},
        {
            "type": "response.function_call_arguments.delta",
            "output_index": 0,
            "item_id": "fc_1",
            "delta": '{"a":',
        },
        {
            "type": "response.function_call_arguments.delta",
            "output_index": 0,
            "item_id": "fc_1",
            "delta": "1}",
        },
    ]
    if arguments_done:
        events.append(
            {"type": "response.function_call_arguments.done", "output_index": 0, "arguments": '{"a":1}'}
        )
    events += [
        {"type": "response.output_item.done", "output_index": 0, "item": {**DONE, "status": "completed"}},
        {
            "type": "response.completed",
            "response": {"id": "r", "status": "completed", "output": [{**DONE, "status": "completed"}]},
        },
    ]
    return sse_body(*events)


ADDED = {"type": "function_call", "name": "f", "arguments": "", "status": "in_progress"}


@pytest.mark.parametrize("arguments_done", [True, False])
@pytest.mark.parametrize("added", [{**ADDED, "id": "fc_1"}, ADDED], ids=["item-id-only", "neither-id"])
def test_the_call_is_announced_once_under_its_call_id(added: dict[str, Any], arguments_done: bool) -> None:
    events, error = run_decoder(stream(added, arguments_done=arguments_done))
    assert error is None
    call = ToolCall("call_1", "f", '{"a":1}')
    assert [e for e in events if isinstance(e, ToolCallStarted | ToolCallArgumentsDelta | ToolCallReady)] == [
        ToolCallStarted(0, "call_1", "f"),
        ToolCallArgumentsDelta(0, '{"a":1}'),  # the deltas held while the id was unknown, as one
        ToolCallReady(0, call),
    ]
    last = events[-1]
    assert isinstance(last, ModelCompleted)
    assert last.response.tool_calls == (call,)


def test_a_call_added_with_its_call_id_still_streams_its_deltas() -> None:
    events, error = run_decoder(stream({**ADDED, "id": "fc_1", "call_id": "call_1"}))
    assert error is None
    assert [e for e in events if isinstance(e, ToolCallStarted | ToolCallArgumentsDelta | ToolCallReady)] == [
        ToolCallStarted(0, "call_1", "f"),
        ToolCallArgumentsDelta(0, '{"a":'),
        ToolCallArgumentsDelta(0, "1}"),
        ToolCallReady(0, ToolCall("call_1", "f", '{"a":1}')),
    ]


def test_an_item_that_never_brings_a_call_id_uses_its_item_id_as_a_blocking_answer_does() -> None:
    done = {k: v for k, v in DONE.items() if k != "call_id"}
    body = stream({**ADDED, "id": "fc_1"}).replace('"call_id":"call_1",', "")
    assert "call_1" not in body
    events, error = run_decoder(body)
    assert error is None
    call = ToolCall("fc_1", "f", done["arguments"])
    assert [e for e in events if isinstance(e, ToolCallReady)] == [ToolCallReady(0, call)]
    assert sum(isinstance(e, ToolCallStarted) for e in events) == 1
