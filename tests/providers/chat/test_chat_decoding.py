"""Seed 003's response and finish-reason tables, malformed bodies, and the stream decoder's aggregation."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from agentflow import (
    BadRequestError,
    FinishReason,
    ModelCompleted,
    ModelError,
    ProtocolError,
    RateLimitError,
    ReasoningDelta,
    RefusalDelta,
    StreamCutOffError,
    TextDelta,
    TokenUsage,
    ToolCall,
    ToolCallArgumentsDelta,
    ToolCallReady,
    ToolCallStarted,
    UsageReported,
)
from agentflow.http.sse import SseEvent
from agentflow.model.events import ModelEvent
from agentflow.providers.openai.chat_codec import decode_chat_response, decode_finish_reason, decode_usage
from agentflow.providers.openai.chat_stream import ChatStreamDecoder


def completion(message: dict[str, Any], finish: str | None = "stop", **extra: Any) -> dict[str, Any]:
    return {
        "id": "c1",
        "model": "m",
        "created": 5,
        "choices": [{"message": message, "finish_reason": finish}],
        **extra,
    }


# --- 3.4 response mapping -------------------------------------------------------------------------


def test_text_none_when_only_tool_calls() -> None:
    calls = [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}]
    for content in (None, ""):
        response = decode_chat_response(completion({"content": content, "tool_calls": calls}, "tool_calls"))
        assert response.message.text is None
        assert response.message.tool_calls == (ToolCall("call_1", "f", '{"a": 1}'),)


def test_text_and_tool_calls_both_kept_arguments_raw() -> None:
    raw = '{ "city" :  "hangzhou" }'
    calls = [{"id": "call_1", "type": "function", "function": {"name": "getWeather", "arguments": raw}}]
    response = decode_chat_response(completion({"content": "checking", "tool_calls": calls}, "tool_calls"))
    assert response.message.text == "checking"
    assert response.message.tool_calls[0].arguments == raw


def test_metadata_id_model_created() -> None:
    response = decode_chat_response(completion({"content": "x"}))
    assert response.metadata == {"id": "c1", "model": "m", "created": 5}
    assert response.raw["id"] == "c1"


def test_reasoning_from_reasoning_content_or_reasoning_and_refusal() -> None:
    assert (
        decode_chat_response(completion({"content": "x", "reasoning_content": "r1"})).message.reasoning
        == "r1"
    )
    assert decode_chat_response(completion({"content": "x", "reasoning": "r2"})).message.reasoning == "r2"
    refused = decode_chat_response(completion({"content": None, "refusal": "no"}))
    assert (refused.message.text, refused.message.refusal) == (None, "no")


def test_usage_with_every_detail() -> None:
    usage = decode_usage(
        {
            "prompt_tokens": 100,
            "completion_tokens": 20,
            "total_tokens": 120,
            "prompt_tokens_details": {"cached_tokens": 60, "cache_write_tokens": 30},
            "completion_tokens_details": {"reasoning_tokens": 7},
        }
    )
    assert usage == TokenUsage(100, 20, 120, 60, 30, 7)
    assert usage.uncached_input_tokens == 40


def test_usage_deepseek_cache_hits_and_missing_fields() -> None:
    assert decode_usage(
        {"prompt_tokens": 10, "completion_tokens": 2, "prompt_cache_hit_tokens": 6}
    ) == TokenUsage(10, 2, 12, 6, 0, 0)
    assert decode_usage({"prompt_tokens": None, "prompt_tokens_details": None}) == TokenUsage()


def test_arguments_sent_as_an_object_become_json_text_and_legacy_function_call() -> None:
    calls = [{"id": "c", "function": {"name": "f", "arguments": {"a": 1}}}]
    assert (
        decode_chat_response(completion({"tool_calls": calls})).message.tool_calls[0].arguments == '{"a":1}'
    )
    legacy = decode_chat_response(
        completion({"function_call": {"name": "g", "arguments": "{}"}}, "function_call")
    )
    assert legacy.message.tool_calls == (ToolCall("function_call", "g", "{}"),)
    assert legacy.finish_reason is FinishReason.TOOL_EXECUTION


# --- 3.5 finish reasons ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("wire", "expected"),
    [
        ("stop", FinishReason.STOP),
        ("length", FinishReason.LENGTH),
        ("tool_calls", FinishReason.TOOL_EXECUTION),
        ("function_call", FinishReason.TOOL_EXECUTION),
        ("content_filter", FinishReason.CONTENT_FILTER),
        ("eos_token", FinishReason.OTHER),
        (["stop"], FinishReason.OTHER),
        ("", None),
        (None, None),
    ],
)
def test_finish_reason_mapping(wire: Any, expected: FinishReason | None) -> None:
    assert decode_finish_reason(wire) is expected
    assert decode_chat_response(completion({"content": "x"}, wire)).finish_reason is expected


# --- 3.6 malformed responses ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ([], "JSON object"),
        ({"id": "x"}, "no choices"),
        ({"choices": []}, "no choices"),
        ({"choices": {}}, "no choices"),
        ({"choices": [{"finish_reason": "stop"}]}, "choices\\[0\\].message"),
        ({"choices": ["x"]}, "choices\\[0\\].message"),
        ({"choices": [{"message": {"tool_calls": {}}}]}, "not a list"),
        ({"choices": [{"message": {"tool_calls": [{"id": "c"}]}}]}, "no function name"),
        ({"choices": [{"message": {"content": 5}}]}, "neither a string, a list of parts nor null"),
    ],
)
def test_malformed_responses_raise_protocol_error(payload: Any, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        decode_chat_response(payload)


def test_error_object_in_a_2xx_body_is_a_typed_error() -> None:
    with pytest.raises(RateLimitError, match="slow down"):
        decode_chat_response({"error": {"message": "slow down", "code": 429}})
    with pytest.raises(ModelError, match=r"^upstream unavailable$"):
        decode_chat_response({"error": "upstream unavailable"})  # the plain-string shape of some proxies


# --- streaming ------------------------------------------------------------------------------------


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> SseEvent:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return SseEvent(
        orjson.dumps({"id": "s1", "model": "m", "created": 9, "choices": choices, **extra}).decode()
    )


DONE = SseEvent("[DONE]")


def run(*events: SseEvent) -> list[ModelEvent]:
    decoder = ChatStreamDecoder()
    out: list[ModelEvent] = []
    for event in events:
        out += decoder.feed(event)
    return out + decoder.finish()


def fragment(
    index: int | None, *, id: str | None = None, name: str | None = None, args: str | None = None
) -> Any:
    out: dict[str, Any] = {"function": {}}
    if index is not None:
        out["index"] = index
    if id is not None:
        out["id"] = id
        out["type"] = "function"
    if name is not None:
        out["function"]["name"] = name
    if args is not None:
        out["function"]["arguments"] = args
    return out


def test_text_and_reasoning_deltas_are_emitted_immediately() -> None:
    decoder = ChatStreamDecoder()
    assert decoder.feed(chunk({"role": "assistant", "content": ""})) == []
    assert decoder.feed(chunk({"reasoning_content": "think"})) == [ReasoningDelta("think")]
    assert decoder.feed(chunk({"reasoning": "more"})) == [ReasoningDelta("more")]
    assert decoder.feed(chunk({"content": "Hi"})) == [TextDelta("Hi")]
    assert decoder.feed(chunk({"refusal": "no"})) == [RefusalDelta("no")]


def test_tool_calls_aggregate_by_index_with_started_delta_ready() -> None:
    events = run(
        chunk({"tool_calls": [fragment(0, id="a", name="f", args="")]}),
        chunk({"tool_calls": [fragment(0, args='{"x":')]}),
        chunk({"tool_calls": [fragment(0, args="1}")]}),
        chunk({"tool_calls": [fragment(1, id="b", name="g", args='{"y"')]}),
        chunk({"tool_calls": [fragment(1, args=":2}")]}),
        chunk({}, "tool_calls"),
        DONE,
    )
    assert events[:-1] == [
        ToolCallStarted(0, "a", "f"),
        ToolCallArgumentsDelta(0, '{"x":'),
        ToolCallArgumentsDelta(0, "1}"),
        ToolCallReady(0, ToolCall("a", "f", '{"x":1}')),
        ToolCallStarted(1, "b", "g"),
        ToolCallArgumentsDelta(1, '{"y"'),
        ToolCallArgumentsDelta(1, ":2}"),
        ToolCallReady(1, ToolCall("b", "g", '{"y":2}')),
    ]
    completed = events[-1]
    assert isinstance(completed, ModelCompleted)
    assert completed.response.message.text is None
    assert completed.response.finish_reason is FinishReason.TOOL_EXECUTION


def test_tool_call_started_waits_for_the_name_and_repeated_names_are_not_doubled() -> None:
    events = run(
        chunk({"tool_calls": [fragment(0, id="a", args='{"q"')]}),
        chunk({"tool_calls": [fragment(0, name="search", args=':"x"}')]}),
        chunk({"tool_calls": [fragment(0, name="search")]}),
        chunk({}, "tool_calls"),
    )
    # Fragments that came before the name are delivered, joined, right after ToolCallStarted.
    assert events[:3] == [
        ToolCallStarted(0, "a", "search"),
        ToolCallArgumentsDelta(0, '{"q":"x"}'),
        ToolCallReady(0, ToolCall("a", "search", '{"q":"x"}')),
    ]


def test_tool_calls_without_index_split_on_new_ids() -> None:
    events = run(
        chunk({"tool_calls": [fragment(None, id="a", name="f", args="{}")]}),
        chunk({"tool_calls": [fragment(None, id="b", name="g", args="{")]}),
        chunk({"tool_calls": [fragment(None, args="}")]}),
        chunk({}, "tool_calls"),
    )
    completed = events[-1]
    assert isinstance(completed, ModelCompleted)
    assert completed.response.message.tool_calls == (ToolCall("a", "f", "{}"), ToolCall("b", "g", "{}"))


def test_a_tool_call_that_never_got_a_name_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="without a function name"):
        run(chunk({"tool_calls": [fragment(0, id="a", args="{}")]}), chunk({}, "tool_calls"))


def test_usage_chunk_with_empty_choices_is_read() -> None:
    usage = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    events = run(chunk({"content": "a"}), chunk({}, "stop"), chunk(None, usage=usage), DONE)
    assert events[1] == UsageReported(TokenUsage(3, 2, 5))
    completed = events[-1]
    assert isinstance(completed, ModelCompleted)
    assert completed.response.usage == TokenUsage(3, 2, 5)
    assert completed.response.metadata == {"id": "s1", "model": "m", "created": 9}


def test_only_the_first_choice_is_aggregated() -> None:
    other = SseEvent(orjson.dumps({"choices": [{"index": 1, "delta": {"content": "B"}}]}).decode())
    events = run(chunk({"content": "A"}), other, chunk({}, "stop"), DONE)
    completed = events[-1]
    assert isinstance(completed, ModelCompleted)
    assert completed.response.message.text == "A"


def test_finish_reason_without_done_is_accepted() -> None:
    completed = run(chunk({"content": "A"}, "length"))[-1]
    assert isinstance(completed, ModelCompleted)
    assert completed.response.finish_reason is FinishReason.LENGTH


def test_done_without_finish_reason_is_accepted() -> None:
    completed = run(chunk({"content": "A"}), DONE)[-1]
    assert isinstance(completed, ModelCompleted)
    assert completed.response.finish_reason is None


def test_stream_cut_off_raises_with_the_partial_response() -> None:
    decoder = ChatStreamDecoder()
    decoder.feed(chunk({"content": "Hel"}))
    decoder.feed(chunk({"tool_calls": [fragment(0, id="a", name="f", args='{"x"')]}))
    with pytest.raises(StreamCutOffError) as caught:
        decoder.finish()
    assert caught.value.partial.message.text == "Hel"
    assert caught.value.partial.message.tool_calls == (ToolCall("a", "f", '{"x"'),)


def test_in_band_error_chunk_after_finish_reason_raises() -> None:
    decoder = ChatStreamDecoder()
    decoder.feed(chunk({"content": "x"}, "length"))
    with pytest.raises(BadRequestError, match="Token limit reached") as caught:
        decoder.feed(chunk({}, error={"code": 400, "message": "Token limit reached"}))
    assert caught.value.status == 400


def test_error_event_raises_typed_error() -> None:
    event = SseEvent(
        '{"error":{"message":"bad tool","type":"invalid_request_error","status_code":400}}', "error"
    )
    with pytest.raises(BadRequestError, match="bad tool"):
        ChatStreamDecoder().feed(event)
    with pytest.raises(ModelError, match="overloaded"):
        ChatStreamDecoder().feed(SseEvent("overloaded", "error"))


def test_malformed_chunks_raise_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="malformed JSON"):
        ChatStreamDecoder().feed(SseEvent('{"choices": [}'))
    with pytest.raises(ProtocolError, match="not a JSON object"):
        ChatStreamDecoder().feed(SseEvent("[1, 2]"))


@pytest.mark.parametrize(
    "chunk",
    [
        '{"choices": [1]}',
        '{"choices": "x"}',
        '{"choices": [{"index": 1, "delta": {}}, 3]}',
        '{"choices": [{"delta": "text"}]}',
        '{"choices": [{"delta": {"content": 5}}]}',
        '{"choices": [{"delta": {"content": {"type": "text", "text": "a"}}}]}',
        '{"choices": [{"delta": {"refusal": 3}}]}',
        '{"choices": [{"delta": {"tool_calls": "x"}}]}',
        '{"choices": [{"delta": {"tool_calls": [1]}}]}',
        '{"choices": [{"delta": {"tool_calls": [{"index": 0, "function": "f"}]}}]}',
        '{"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"name": 3}}]}}]}',
        '{"choices": [{"delta": {"tool_calls": [{"index": 0, "id": 5, "function": {"name": "f"}}]}}]}',
        '{"choices": [], "usage": 5}',
    ],
)
def test_chunks_with_fields_of_the_wrong_type_raise_protocol_error(chunk: str) -> None:
    with pytest.raises(ProtocolError):
        ChatStreamDecoder().feed(SseEvent(chunk))


def test_other_named_events_are_ignored() -> None:
    assert ChatStreamDecoder().feed(SseEvent("{}", "ping")) == []
