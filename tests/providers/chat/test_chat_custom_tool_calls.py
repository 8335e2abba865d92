"""GPT-5 custom (free-form) tool calls on Chat Completions: ``tool_calls`` entries of the shape
``{"type": "custom", "custom": {"name", "input"}}`` are tool calls of kind ``"custom"`` (their ``input`` as
the arguments), blocking and streamed alike, and go back in their own shape on the next request. They used
to raise ``ProtocolError``."""

from __future__ import annotations

from typing import Any

import orjson
from chat_local_server import LocalServer, json_reply, sse_body, sse_reply

from agentflow import UserMessage
from agentflow.http.retry import RetryPolicy
from agentflow.http.sse import SseEvent
from agentflow.model.events import (
    ModelCompleted,
    ModelEvent,
    ToolCallArgumentsDelta,
    ToolCallReady,
    ToolCallStarted,
)
from agentflow.model.messages import AiMessage, ToolCall, ToolResultMessage
from agentflow.model.response import FinishReason
from agentflow.providers.openai.chat_codec import decode_chat_response, encode_message
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.chat_stream import ChatStreamDecoder

CUSTOM = {"id": "call_c", "type": "custom", "custom": {"name": "code_exec", "input": "print(1)"}}
CALL = ToolCall("call_c", "code_exec", "print(1)", kind="custom")


def answer(*calls: dict[str, Any]) -> dict[str, Any]:
    message = {"role": "assistant", "content": None, "tool_calls": list(calls)}
    return {"id": "c1", "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "s1", "model": "gpt-5", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


STREAM = (
    chunk(
        {
            "role": "assistant",
            "tool_calls": [{**CUSTOM, "index": 0, "custom": {"name": "code_exec", "input": ""}}],
        }
    ),
    chunk({"tool_calls": [{"index": 0, "custom": {"input": "print"}}]}),
    chunk({"tool_calls": [{"index": 0, "custom": {"input": "(1)"}}]}),
    chunk({}, "tool_calls"),
)


def test_a_blocking_custom_call_is_a_tool_call() -> None:
    function = {"id": "call_f", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    response = decode_chat_response(answer(CUSTOM, function))
    assert response.message.tool_calls == (CALL, ToolCall("call_f", "f", "{}"))
    assert response.finish_reason is FinishReason.TOOL_EXECUTION


def test_a_streamed_custom_call_is_a_tool_call() -> None:
    decoder = ChatStreamDecoder()
    events: list[ModelEvent] = []
    for payload in STREAM:
        events += decoder.feed(SseEvent(orjson.dumps(payload).decode()))
    events += decoder.feed(SseEvent("[DONE]")) + decoder.finish()
    assert events[:-1] == [
        ToolCallStarted(0, "call_c", "code_exec"),
        ToolCallArgumentsDelta(0, "print"),
        ToolCallArgumentsDelta(0, "(1)"),
        ToolCallReady(0, CALL),
    ]
    last = events[-1]
    assert isinstance(last, ModelCompleted)
    assert last.response.message.tool_calls == (CALL,)


def test_a_custom_call_goes_back_in_its_own_shape() -> None:
    assert encode_message(AiMessage(tool_calls=[CALL])) == {
        "role": "assistant",
        "content": None,
        "tool_calls": [CUSTOM],
    }


async def test_a_custom_call_round_trips_over_http_blocking_and_streamed(server: LocalServer) -> None:
    done = {"id": "c2", "choices": [{"index": 0, "message": {"role": "assistant", "content": "1"}}]}
    server.add(json_reply(answer(CUSTOM)), sse_reply([sse_body(*STREAM)]), json_reply(done))
    question = UserMessage("run it")
    async with OpenAIChatModel(base_url=server.base_url, model="gpt-5", retry=RetryPolicy.none()) as model:
        blocking = await model.chat([question])
        streamed = await model.stream([question]).collect()
        assert blocking.message.tool_calls == streamed.message.tool_calls == (CALL,)
        await model.chat([question, streamed.message, ToolResultMessage("call_c", "1")])
    sent = server.requests[2].json()["messages"]
    assert sent[1] == {"role": "assistant", "content": None, "tool_calls": [CUSTOM]}
    assert sent[2] == {"role": "tool", "tool_call_id": "call_c", "content": "1"}
