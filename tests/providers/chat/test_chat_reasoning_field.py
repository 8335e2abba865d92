"""The Chat codecs note the wire field an answer's reasoning came in, and send it back under that field only.

DeepSeek sends ``reasoning_content`` and wants it back (its thinking mode answers 400 otherwise), OpenRouter
and Groq send ``reasoning``; OpenAI sends neither and rejects message fields it does not know. Blocking bodies
and streams, read from the recordings in ``shared/wire`` and from small hand-made payloads.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from chat_local_server import load_wire, wire_files

from agentflow.http.sse import SseDecoder, SseEvent
from agentflow.model.errors import ModelError
from agentflow.model.messages import AiMessage, ToolCall
from agentflow.model.response import ChatResponse
from agentflow.providers.openai.chat_codec import decode_chat_response, encode_message
from agentflow.providers.openai.chat_stream import ChatStreamDecoder

# The field each recording's answer carries its reasoning in (None: no reasoning field at all).
FIELDS = {
    "chat_deepseek_reasoning_content_tool_calls.json": "reasoning_content",
    "chat_stream_deepseek_reasoning_content.json": "reasoning_content",
    "chat_stream_openrouter_reasoning.json": "reasoning",
    "chat_stream_groq_error_event.json": "reasoning",
    "chat_stream_openrouter_error_chunk.json": "reasoning",
}


def decoded(name: str) -> ChatResponse:
    """The response a recording decodes to (for a stream cut by an in-band error: the part before it)."""
    record = load_wire(name)
    if not record["stream"]:
        return decode_chat_response(orjson.loads(record["response_body"]))
    decoder = ChatStreamDecoder()
    sse = SseDecoder()
    try:
        for event in [*sse.feed(record["response_body"].encode()), *sse.close()]:
            decoder.feed(event)
    except ModelError:
        return decoder.response()
    return decoder.finish()[-1].response  # type: ignore[attr-defined, no-any-return]


def answer(**message: Any) -> dict[str, Any]:
    return {"choices": [{"message": {"role": "assistant", **message}, "finish_reason": "stop"}]}


def stream_of(*deltas: dict[str, Any]) -> ChatResponse:
    decoder = ChatStreamDecoder()
    for delta in deltas:
        decoder.feed(SseEvent(orjson.dumps({"choices": [{"index": 0, "delta": delta}]}).decode()))
    decoder.feed(SseEvent('{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}'))
    decoder.feed(SseEvent("[DONE]"))
    return decoder.finish()[-1].response  # type: ignore[attr-defined, no-any-return]


@pytest.mark.parametrize("name", wire_files("chat_*.json"))
def test_every_recording_notes_the_field_its_reasoning_came_in(name: str) -> None:
    message = decoded(name).message
    assert message.reasoning_field == FIELDS.get(name)
    assert (message.reasoning is not None) == (name in FIELDS)


@pytest.mark.parametrize("name", sorted(FIELDS))
def test_a_decoded_answer_encodes_back_with_its_reasoning_under_the_same_field(name: str) -> None:
    message = decoded(name).message
    field = FIELDS[name]
    other = "reasoning" if field == "reasoning_content" else "reasoning_content"
    sent = encode_message(message)
    assert sent[field] == message.reasoning
    assert other not in sent


def test_the_deepseek_answer_goes_back_exactly_as_received() -> None:
    record = load_wire("chat_deepseek_reasoning_content_tool_calls.json")
    received = orjson.loads(record["response_body"])["choices"][0]["message"]
    sent = encode_message(decoded("chat_deepseek_reasoning_content_tool_calls.json").message)
    assert sent["reasoning_content"] == received["reasoning_content"]
    assert sent["content"] == received["content"]
    assert sent["tool_calls"] == [
        {k: v for k, v in c.items() if k != "index"} for c in received["tool_calls"]
    ]


@pytest.mark.parametrize(
    "name", ["chat_text_stop.json", "chat_tool_calls_parallel.json", "chat_stream_tool_call_single.json"]
)
def test_an_openai_answer_encodes_back_without_any_reasoning_key(name: str) -> None:
    sent = encode_message(decoded(name).message)
    assert "reasoning_content" not in sent
    assert "reasoning" not in sent


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ({"content": "4", "reasoning_content": "2+2"}, ("2+2", "reasoning_content")),
        ({"content": "4", "reasoning": "2+2"}, ("2+2", "reasoning")),
        ({"content": "4", "reasoning": "2+2", "reasoning_details": []}, ("2+2", "reasoning")),
        # DeepSeek sends the field empty on a thinking-mode turn it thought nothing on, and wants it back.
        ({"content": "4", "reasoning_content": ""}, (None, "reasoning_content")),
        ({"content": "4", "reasoning_content": "", "reasoning": "2+2"}, ("2+2", "reasoning")),
        ({"content": "4", "reasoning_content": None, "reasoning": "2+2"}, ("2+2", "reasoning")),
        ({"content": "4", "reasoning_content": "2+2", "reasoning": "other"}, ("2+2", "reasoning_content")),
        ({"content": "4", "reasoning": None}, (None, None)),
        ({"content": "4", "reasoning_content": None}, (None, None)),
        ({"content": "4", "reasoning_content": 7}, (None, None)),
        ({"content": "4"}, (None, None)),
    ],
)
def test_a_blocking_answer_notes_the_field_it_sent(
    message: dict[str, Any], expected: tuple[str | None, str | None]
) -> None:
    decoded_message = decode_chat_response(answer(**message)).message
    assert (decoded_message.reasoning, decoded_message.reasoning_field) == expected


@pytest.mark.parametrize(
    ("deltas", "expected"),
    [
        (
            [
                {"role": "assistant", "content": None, "reasoning_content": ""},
                {"reasoning_content": "2+"},
                {"content": None, "reasoning_content": "2"},
                {"content": "4", "reasoning_content": None},
            ],
            ("2+2", "reasoning_content"),
        ),
        (
            [{"reasoning": "2+", "channel": "analysis"}, {"reasoning": "2"}, {"content": "4"}],
            ("2+2", "reasoning"),
        ),
        ([{"content": "", "reasoning": None}, {"content": "4", "reasoning": None}], (None, None)),
        (
            [{"role": "assistant", "content": None, "reasoning_content": ""}, {"content": "4"}],
            (None, "reasoning_content"),
        ),
        ([{"role": "assistant", "content": ""}, {"content": "4"}], (None, None)),
    ],
    ids=["deepseek", "groq", "openrouter-without-reasoning", "deepseek-empty", "openai"],
)
def test_a_stream_notes_the_field_its_reasoning_came_in(
    deltas: list[dict[str, Any]], expected: tuple[str | None, str | None]
) -> None:
    message = stream_of(*deltas).message
    assert (message.reasoning, message.reasoning_field) == expected


def test_a_blocking_answer_and_its_stream_agree() -> None:
    blocking = decode_chat_response(answer(content="4", reasoning_content="2+2")).message
    streamed = stream_of({"reasoning_content": "2+"}, {"reasoning_content": "2"}, {"content": "4"}).message
    assert blocking == streamed
    assert encode_message(blocking) == {"role": "assistant", "content": "4", "reasoning_content": "2+2"}


def test_an_empty_field_goes_back_empty_and_no_field_goes_back_not_at_all() -> None:
    call = ToolCall("call_1", "roll", "{}")
    empty = AiMessage(None, [call], None, None, "reasoning_content")
    assert encode_message(empty)["reasoning_content"] == ""
    # Reasoning with no field (built by hand, or by the Responses model) is not sent: no server asked for it.
    assert "reasoning" not in encode_message(AiMessage("4", reasoning="2+2"))
    assert "reasoning_content" not in encode_message(AiMessage("4", reasoning="2+2"))


def test_an_unknown_reasoning_field_is_refused_when_the_message_is_sent() -> None:
    with pytest.raises(ValueError, match="reasoning_field must be one of 'reasoning_content', 'reasoning'"):
        encode_message(AiMessage("4", reasoning="2+2", reasoning_field="content"))
