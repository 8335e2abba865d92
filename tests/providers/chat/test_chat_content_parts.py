"""Content sent as a list of parts (Mistral's Magistral): text parts are the answer, thinking parts its
reasoning, other part types are skipped — streamed and blocking alike. Also the finish reasons some
compatible servers spell their own way."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from agentflow.http.sse import SseEvent
from agentflow.model.events import ModelCompleted, ReasoningDelta, TextDelta
from agentflow.model.response import ChatResponse, FinishReason
from agentflow.providers.openai.chat_codec import decode_chat_response, decode_finish_reason
from agentflow.providers.openai.chat_stream import ChatStreamDecoder

THINKING = {"type": "thinking", "thinking": [{"type": "text", "text": "user greets"}]}


def chunk(content: Any, **delta: Any) -> SseEvent:
    return SseEvent(
        orjson.dumps({"choices": [{"index": 0, "delta": {"content": content, **delta}}]}).decode()
    )


def streamed(*events: SseEvent) -> tuple[list[Any], ChatResponse]:
    decoder = ChatStreamDecoder()
    out = [event for e in events for event in decoder.feed(e)]
    out += decoder.feed(SseEvent('{"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}'))
    last = decoder.finish()[-1]
    assert isinstance(last, ModelCompleted)
    return out, last.response


def test_streamed_thinking_parts_are_reasoning_and_text_parts_text() -> None:
    events, response = streamed(chunk([THINKING]), chunk([{"type": "text", "text": "Hello"}]), chunk("!"))
    assert events == [ReasoningDelta("user greets"), TextDelta("Hello"), TextDelta("!")]
    assert response.message.text == "Hello!"
    assert response.message.reasoning == "user greets"
    assert response.message.reasoning_field is None  # nothing names a field to send it back in


def test_streamed_parts_keep_their_order_and_unknown_parts_are_skipped() -> None:
    parts = [
        {"type": "thinking", "thinking": "plain string thinking"},
        {"type": "reference", "reference_ids": [1]},
        {"type": "text", "text": "A"},
        "stray",
        {"type": "text", "text": ""},
        {"type": "text", "text": "B"},
    ]
    events, response = streamed(chunk(parts))
    assert events == [ReasoningDelta("plain string thinking"), TextDelta("A"), TextDelta("B")]
    assert response.message.text == "AB"


def test_a_streamed_content_that_is_neither_string_nor_list_is_a_protocol_error() -> None:
    from agentflow import ProtocolError

    event = chunk({"type": "text", "text": "a"})
    with pytest.raises(ProtocolError, match="neither a string, a list of parts nor null") as caught:
        ChatStreamDecoder().feed(event)
    assert caught.value.body == event.data


def test_blocking_thinking_parts_are_the_reasoning() -> None:
    body = {
        "choices": [
            {
                "message": {"content": [THINKING, {"type": "text", "text": "Hello!"}]},
                "finish_reason": "stop",
            }
        ]
    }
    message = decode_chat_response(body).message
    assert (message.text, message.reasoning, message.reasoning_field) == ("Hello!", "user greets", None)


def test_blocking_reasoning_content_wins_over_thinking_parts() -> None:
    body = {
        "choices": [
            {"message": {"content": [THINKING, {"type": "text", "text": "Hi"}], "reasoning_content": "own"}}
        ]
    }
    message = decode_chat_response(body).message
    assert (message.text, message.reasoning, message.reasoning_field) == ("Hi", "own", "reasoning_content")


def test_blocking_text_parts_only_have_no_reasoning() -> None:
    message = decode_chat_response(
        {"choices": [{"message": {"content": [{"type": "text", "text": "x"}]}}]}
    ).message
    assert (message.text, message.reasoning) == ("x", None)


@pytest.mark.parametrize(
    ("wire", "expected"),
    [
        ("tool_call", FinishReason.TOOL_EXECUTION),
        ("sensitive", FinishReason.CONTENT_FILTER),
        ("network_error", FinishReason.OTHER),
    ],
)
def test_finish_reasons_of_compatible_servers(wire: str, expected: FinishReason) -> None:
    assert decode_finish_reason(wire) is expected
    body = {"choices": [{"message": {"content": "x"}, "finish_reason": wire}]}
    assert decode_chat_response(body).finish_reason is expected
    decoder = ChatStreamDecoder()
    decoder.feed(
        SseEvent(orjson.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": wire}]}).decode())
    )
    assert decoder.response().finish_reason is expected
