"""GPT-5 custom (free-form) tool calls on Responses: a ``custom_tool_call`` item (``call_id``, ``name``,
``input``) is a tool call of kind ``"custom"``, blocking and streamed
(``response.custom_tool_call_input.delta`` / ``.done``), so an answer holding only one is a tool call, not an
empty STOP. On the next request the call goes back as a ``custom_tool_call`` item and its result as a
``custom_tool_call_output``."""

from __future__ import annotations

from typing import Any

from responses_support import LocalServer, Reply, run_decoder, sse_body

from agentflow import UserMessage
from agentflow.model.events import (
    ModelCompleted,
    ToolCallArgumentsDelta,
    ToolCallReady,
    ToolCallStarted,
)
from agentflow.model.messages import AiMessage, ToolCall, ToolResultMessage
from agentflow.model.response import FinishReason
from agentflow.providers.openai.responses_codec import decode_response, encode_input
from agentflow.providers.openai.responses_model import OpenAIResponsesModel

ITEM = {"id": "ctc_1", "type": "custom_tool_call", "call_id": "call_1", "name": "exec", "input": "ls -la"}
CALL = ToolCall("call_1", "exec", "ls -la", kind="custom")


def envelope(*output: dict[str, Any], status: str = "completed") -> dict[str, Any]:
    return {"id": "resp_1", "status": status, "model": "gpt-5", "output": list(output)}


def events_of(item: dict[str, Any]) -> list[dict[str, Any]]:
    """A stream announcing ``item`` with its input in two deltas."""
    added = {**item, "input": "", "status": "in_progress"}
    return [
        {"type": "response.created", "response": envelope(status="in_progress")},
        {"type": "response.output_item.added", "output_index": 0, "item": added},
        {
            "type": "response.custom_tool_call_input.delta",
            "output_index": 0,
            "item_id": "ctc_1",
            "delta": "ls",
        },
        {
            "type": "response.custom_tool_call_input.delta",
            "output_index": 0,
            "item_id": "ctc_1",
            "delta": " -la",
        },
        {
            "type": "response.custom_tool_call_input.done",
            "output_index": 0,
            "item_id": "ctc_1",
            "input": "ls -la",
        },
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": envelope(item)},
    ]


def test_a_blocking_answer_holding_only_a_custom_call_is_a_tool_call() -> None:
    response = decode_response(envelope(ITEM))
    assert response.tool_calls == (CALL,)
    assert response.finish_reason is FinishReason.TOOL_EXECUTION
    chat = response.to_chat_response()
    assert chat.message.tool_calls == (CALL,)
    assert chat.finish_reason is FinishReason.TOOL_EXECUTION


def test_an_unfinished_custom_call_is_not_offered() -> None:
    assert decode_response(envelope({**ITEM, "status": "incomplete"})).tool_calls == ()


def test_a_streamed_custom_call_is_announced_like_a_function_call() -> None:
    events, error = run_decoder(sse_body(*events_of(ITEM)))
    assert error is None
    calls = [e for e in events if isinstance(e, ToolCallStarted | ToolCallArgumentsDelta | ToolCallReady)]
    assert calls == [
        ToolCallStarted(0, "call_1", "exec"),
        ToolCallArgumentsDelta(0, "ls"),
        ToolCallArgumentsDelta(0, " -la"),
        ToolCallReady(0, CALL),
    ]
    last = events[-1]
    assert isinstance(last, ModelCompleted)
    assert last.response.tool_calls == (CALL,)


def test_a_stream_cut_after_the_input_offers_the_call_in_its_partial() -> None:
    body = sse_body(*events_of(ITEM)[:5])  # up to custom_tool_call_input.done
    events, error = run_decoder(body)
    assert [e for e in events if isinstance(e, ToolCallReady)] == [ToolCallReady(0, CALL)]
    assert error is not None
    assert error.partial.tool_calls == (CALL,)  # type: ignore[attr-defined]


def test_a_custom_call_and_its_result_go_back_in_their_own_item_types() -> None:
    wire = encode_input(
        [
            UserMessage("list files"),
            AiMessage(tool_calls=[CALL, ToolCall("call_2", "f", "{}")]),
            ToolResultMessage("call_1", "a.txt"),
            ToolResultMessage("call_2", "ok"),
        ]
    )
    assert wire[1:] == [
        {"type": "custom_tool_call", "call_id": "call_1", "name": "exec", "input": "ls -la"},
        {"type": "function_call", "call_id": "call_2", "name": "f", "arguments": "{}"},
        {"type": "custom_tool_call_output", "call_id": "call_1", "output": "a.txt"},
        {"type": "function_call_output", "call_id": "call_2", "output": "ok"},
    ]


async def test_the_chat_view_round_trips_a_custom_call(
    server: LocalServer, model: OpenAIResponsesModel
) -> None:
    server.queue(Reply.json(envelope(ITEM)), Reply.sse(sse_body(*events_of(ITEM))))
    question = UserMessage("list files")
    first = await model.chat([question])
    assert first.message.tool_calls == (CALL,)
    async with model.stream([question, first.message, ToolResultMessage("call_1", "a.txt")]) as stream:
        async for _ in stream:
            pass
    assert stream.response.message.tool_calls == (CALL,)
    sent = server.requests[1].json["input"]
    assert sent[1:] == [
        {"type": "custom_tool_call", "call_id": "call_1", "name": "exec", "input": "ls -la"},
        {"type": "custom_tool_call_output", "call_id": "call_1", "output": "a.txt"},
    ]
