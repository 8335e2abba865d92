"""Conformance: every Responses recording in ``shared/wire`` decodes to the right typed result and events.

Each recording has an explicit expectation below; ``test_every_recording_has_an_expectation`` fails when a
new recording appears without one, so nothing is skipped silently. The streams are fed through the real
``SseDecoder`` (whole and in 7-byte chunks, which split lines and UTF-8 characters) and, end to end, through
``OpenAIResponsesModel`` against a local aiohttp server playing the recorded body.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import pytest
from responses_support import LocalServer, Reply, kinds, load, payloads, responses_recordings, run_decoder

from agentflow.model.errors import BadRequestError, RateLimitError
from agentflow.model.events import (
    ModelCompleted,
    ModelEvent,
    ReasoningDelta,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallReady,
    ToolCallStarted,
    UsageReported,
)
from agentflow.model.messages import ToolCall
from agentflow.model.response import ChatResponse, FinishReason, TokenUsage
from agentflow.providers.openai.responses_codec import check_response, decode_response
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.providers.openai.responses_types import ResponsesResponse

# --- blocking bodies ------------------------------------------------------------------------------------


def _decoded(name: str) -> tuple[ResponsesResponse, dict[str, Any]]:
    data = load(name)
    payload = orjson.loads(data["response_body"])
    return check_response(decode_response(payload)), payload


def check_message() -> None:
    response, payload = _decoded("responses_message.json")
    assert response.output_text == "pong"
    assert response.status == "completed"
    assert response.tool_calls == ()
    assert response.reasoning is None
    assert response.refusal is None
    assert response.usage == TokenUsage(11, 5, 16, cached_input_tokens=0, reasoning_tokens=0)
    assert response.id == "resp_08ddf351751647d60169fab1b8a7ac81a081b9e2400e87fb63"
    assert response.model == "gpt-5.5-2026-04-23"
    assert list(response.output) == payload["output"]  # verbatim, "phase" and "logprobs" included
    assert response.output[0]["phase"] == "final_answer"
    chat = response.to_chat_response()
    assert chat.message.text == "pong"
    assert chat.finish_reason is FinishReason.STOP
    assert chat.metadata == {
        "id": response.id,
        "model": "gpt-5.5-2026-04-23",
        "created": 1778037176,
        "status": "completed",
    }


def check_function_call() -> None:
    response, _ = _decoded("responses_function_call.json")
    assert response.tool_calls == (
        ToolCall("call_nJmCK7SJe3ajdYYplIbH0KgL", "multiply", '{"a":1231,"b":2331}'),
    )
    assert response.output_text == ""
    assert response.usage == TokenUsage(58, 23, 81)
    chat = response.to_chat_response()
    assert chat.message.text is None
    assert chat.message.tool_calls == response.tool_calls
    assert chat.finish_reason is FinishReason.TOOL_EXECUTION


def check_reasoning_parallel_function_calls() -> None:
    response, payload = _decoded("responses_reasoning_parallel_function_calls.json")
    assert [(c.name, c.arguments) for c in response.tool_calls] == [
        ("db_lookup", '{"key":"begin"}'),
        ("db_lookup", '{"key":"value"}'),
        ("db_lookup", '{"key":"the value 7"}'),
        ("db_lookup", '{"key":"Begin with the value 7."}'),
        ("db_lookup", '{"key":"start2"}'),
    ]
    assert [c.id for c in response.tool_calls] == [
        "call_WbWwKw4J6EXQ7Sn93fgmuZe3",
        "call_et3hsNc1ipjCfuBylmAwqkEy",
        "call_J4rpPS0QEz4CIdsVGKEKG6k3",
        "call_gd2cYY61KkICSgB6qNd7ZC66",
        "call_nInKAmdZObYpqc3OR3WC61K3",
    ]
    reasoning_item = response.output[0]
    assert reasoning_item["type"] == "reasoning"
    assert reasoning_item["encrypted_content"] == payload["output"][0]["encrypted_content"]
    assert response.reasoning is None  # an empty summary: nothing readable
    assert response.usage == TokenUsage(532, 119, 651, reasoning_tokens=17)
    assert response.to_chat_response().finish_reason is FinishReason.TOOL_EXECUTION


def check_reasoning_summary_message() -> None:
    response, payload = _decoded("responses_reasoning_summary_message.json")
    summary = payload["output"][0]["summary"]
    assert len(summary) >= 1
    assert response.reasoning == "\n\n".join(part["text"] for part in summary)
    assert response.reasoning.startswith("**Explaining sky color**")
    assert response.output_text.startswith(
        "The sky looks blue mainly because of a phenomenon called Rayleigh"
    )
    assert response.usage == TokenUsage(12, 841, 853, reasoning_tokens=576)
    chat = response.to_chat_response()
    assert chat.message.reasoning == response.reasoning
    assert chat.finish_reason is FinishReason.STOP


# --- streams --------------------------------------------------------------------------------------------


def _stream(name: str) -> tuple[list[ModelEvent], ResponsesResponse, dict[str, Any]]:
    body = load(name)["response_body"]
    events, error = run_decoder(body)
    assert error is None, repr(error)
    chunked, chunked_error = run_decoder(body, chunk=7)
    assert chunked_error is None
    assert chunked == events, "chunking must not change the events"
    last = events[-1]
    assert isinstance(last, ModelCompleted)
    completed = next(p for p in payloads(body) if p["type"] == "response.completed")
    return events, last.response, completed["response"]


def check_stream_text() -> None:
    events, response, final = _stream("responses_stream_text.json")
    usage = TokenUsage(11, 5, 16)
    assert events[:-1] == [TextDelta("pong"), UsageReported(usage)]
    assert response.output_text == "pong"
    assert response.usage == usage
    assert list(response.output) == final["output"]


def check_stream_function_call() -> None:
    events, response, _ = _stream("responses_stream_function_call.json")
    call = ToolCall("call_sVidsfFJ6zlzRpelrPkTPlpd", "multiply", '{"a":1231,"b":2331}')
    fragments = ['{"', "a", '":', "123", "1", ',"', "b", '":', "233", "1", "}"]
    assert events[:-1] == [
        ToolCallStarted(0, call.id, "multiply"),
        *(ToolCallArgumentsDelta(0, fragment) for fragment in fragments),
        ToolCallReady(0, call),
        UsageReported(TokenUsage(58, 23, 81)),
    ]
    assert response.tool_calls == (call,)
    assert response.to_chat_response().finish_reason is FinishReason.TOOL_EXECUTION


def check_stream_deepseek_reasoning_text() -> None:
    events, response, _ = _stream("responses_stream_deepseek_reasoning_text.json")
    thinking = ["We", " need", " answer", " capital", " of", " France", "."]
    answer = ["The", " capital", " of", " France", " is", " Paris", "."]
    assert events[:-1] == [
        *(ReasoningDelta(t) for t in thinking),
        *(TextDelta(t) for t in answer),
        UsageReported(TokenUsage(90, 15, 105, reasoning_tokens=7)),
    ]
    assert response.reasoning == "We need answer capital of France."
    assert response.output_text == "The capital of France is Paris."
    assert response.id == "bf5e7791-6c05-44ca-b7e0-56aa217150b1"


def check_stream_multi_item_phase() -> None:
    events, response, final = _stream("responses_stream_multi_item_phase.json")
    text = [
        "I",
        "’ll",
        " check",
        " the",
        " capital",
        " lookup",
        " tool",
        " for",
        " “",
        "Pot",
        "ato",
        "Land",
        ".”",
    ]
    call = ToolCall("call_LabG58Uhrq9kZvR52BYKjToD", "get_capital", '{"country":"PotatoLand"}')
    fragments = ['{"', "country", '":"', "Pot", "ato", "Land", '"}']
    assert events[:-1] == [
        *(TextDelta(t) for t in text),
        # The call is output item 2 (after reasoning and a message) but the response's first call: index 0.
        ToolCallStarted(0, call.id, "get_capital"),
        *(ToolCallArgumentsDelta(0, f) for f in fragments),
        ToolCallReady(0, call),
        UsageReported(TokenUsage(63, 69, 132, reasoning_tokens=26)),
    ]
    assert response.output_text == "I’ll check the capital lookup tool for “PotatoLand.”"
    assert response.tool_calls == (call,)
    assert [item["type"] for item in response.output] == ["reasoning", "message", "function_call"]
    assert response.output[0]["encrypted_content"] == final["output"][0]["encrypted_content"]
    assert response.output[1]["phase"] == "commentary"


def check_stream_reasoning_summary_function_call() -> None:
    events, response, _ = _stream("responses_stream_reasoning_summary_function_call.json")
    summary = (
        "**Calculating step-by-step using calculator**\n\nI'll compute 12 plus 7, then multiply the result "
        "by 3, and finally multiply that by 10, reporting the final product."
    )
    call = ToolCall("call_AB6AaRZ1FYZB2RwS6A5vbdqn", "calculator", '{"a":12,"b":7,"op":"add"}')
    reasoning = [e for e in events if isinstance(e, ReasoningDelta)]
    assert len(reasoning) == 32
    assert "".join(e.text for e in reasoning) == summary
    rest = [e for e in events[:-1] if not isinstance(e, ReasoningDelta)]
    assert rest[0] == ToolCallStarted(0, call.id, "calculator")
    assert "".join(e.delta for e in rest if isinstance(e, ToolCallArgumentsDelta)) == call.arguments
    assert rest[-2:] == [ToolCallReady(0, call), UsageReported(TokenUsage(134, 28, 162))]
    assert kinds(events).index("tool_call_started") == 32  # all reasoning first, in stream order
    assert response.reasoning == summary
    assert response.tool_calls == (call,)


def check_stream_reasoning_summary() -> None:
    events, response, final = _stream("responses_stream_reasoning_summary.json")
    summaries = [part["text"] for part in final["output"][0]["summary"]]
    assert len(summaries) == 4
    reasoning = [e.text for e in events if isinstance(e, ReasoningDelta)]
    text = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(reasoning) == 383 + 3  # every delta, plus one separator between consecutive summary parts
    assert reasoning.count("\n\n") == 3
    assert "".join(reasoning) == "\n\n".join(summaries) == response.reasoning
    assert len(text) == 271
    assert "".join(text) == response.output_text == final["output"][1]["content"][0]["text"]
    assert kinds(events) == ["reasoning_delta"] * 386 + ["text_delta"] * 271 + [
        "usage_reported",
        "model_completed",
    ]
    assert response.usage == TokenUsage(13, 1680, 1693, reasoning_tokens=1408)


def check_stream_error_event() -> None:
    body = load("responses_stream_error_event.json")["response_body"]
    events, error = run_decoder(body)
    assert events == []
    assert isinstance(error, RateLimitError)
    assert error.retryable is False
    assert error.code == "insufficient_quota"
    assert error.error_type == "insufficient_quota"
    assert error.status is None
    assert error.message.startswith("You exceeded your current quota")


def check_error_400_stream_request() -> None:
    data = load("error_responses_400_stream_request.json")
    assert data["status"] == 400  # the end-to-end test below checks the typed error


def check_error_429_insufficient_quota() -> None:
    data = load("error_responses_429_insufficient_quota.json")
    assert data["status"] == 429  # the end-to-end test below checks the typed error


EXPECTATIONS: dict[str, Callable[[], None]] = {
    "responses_message.json": check_message,
    "responses_function_call.json": check_function_call,
    "responses_reasoning_parallel_function_calls.json": check_reasoning_parallel_function_calls,
    "responses_reasoning_summary_message.json": check_reasoning_summary_message,
    "responses_stream_text.json": check_stream_text,
    "responses_stream_function_call.json": check_stream_function_call,
    "responses_stream_deepseek_reasoning_text.json": check_stream_deepseek_reasoning_text,
    "responses_stream_multi_item_phase.json": check_stream_multi_item_phase,
    "responses_stream_reasoning_summary_function_call.json": check_stream_reasoning_summary_function_call,
    "responses_stream_reasoning_summary.json": check_stream_reasoning_summary,
    "responses_stream_error_event.json": check_stream_error_event,
    "error_responses_400_stream_request.json": check_error_400_stream_request,
    "error_responses_429_insufficient_quota.json": check_error_429_insufficient_quota,
}


def test_every_recording_has_an_expectation() -> None:
    assert sorted(EXPECTATIONS) == sorted(responses_recordings())


@pytest.mark.parametrize("name", sorted(EXPECTATIONS))
def test_recording_decodes_to_the_expected_result(name: str) -> None:
    EXPECTATIONS[name]()


# --- end to end through the model ----------------------------------------------------------------------

STREAMS = [n for n in responses_recordings() if load(n)["stream"] and load(n)["status"] == 200]
BODIES = [n for n in responses_recordings() if not load(n)["stream"] and load(n)["status"] == 200]


@pytest.mark.parametrize("name", [n for n in STREAMS if "error" not in n])
async def test_recorded_stream_through_the_model_matches_the_pure_decoder(
    name: str, server: LocalServer, model: OpenAIResponsesModel
) -> None:
    body = load(name)["response_body"]
    expected, _ = run_decoder(body)
    server.queue(Reply.recording(name, chunk_size=97))
    async with model.create_stream([]) as stream:
        events = [event async for event in stream]
    assert events[:-1] == expected[:-1]
    assert isinstance(events[-1], ModelCompleted)
    assert events[-1].response == expected[-1].response  # type: ignore[attr-defined]
    assert stream.response == events[-1].response
    assert server.body["stream"] is True


@pytest.mark.parametrize("name", [n for n in STREAMS if "error" not in n])
async def test_recorded_stream_through_the_chat_protocol_ends_with_a_chat_response(
    name: str, server: LocalServer, model: OpenAIResponsesModel
) -> None:
    body = load(name)["response_body"]
    expected, _ = run_decoder(body)
    server.queue(Reply.recording(name, chunk_size=1024))
    events = [event async for event in model.stream([])]
    assert events[:-1] == expected[:-1]
    last = events[-1]
    assert isinstance(last, ModelCompleted)
    assert isinstance(last.response, ChatResponse)
    assert last.response == expected[-1].response.to_chat_response()  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", BODIES)
async def test_recorded_body_through_the_model(
    name: str, server: LocalServer, model: OpenAIResponsesModel
) -> None:
    server.queue(Reply.recording(name), Reply.recording(name))
    response = await model.create("hi")
    assert response == decode_response(orjson.loads(load(name)["response_body"]))
    chat = await model.chat([])
    assert chat == response.to_chat_response()
    assert "stream" not in server.requests[0].json


async def test_recorded_error_event_stream_is_a_final_rate_limit_error(
    server: LocalServer, model: OpenAIResponsesModel, sleeps: Any
) -> None:
    server.queue(Reply.recording("responses_stream_error_event.json"))
    with pytest.raises(RateLimitError) as caught:
        await model.create_stream("hi").collect()
    assert caught.value.retryable is False
    assert caught.value.code == "insufficient_quota"
    assert len(server.requests) == 1
    assert sleeps.delays == []


async def test_recorded_400_json_answer_to_a_stream_request(
    server: LocalServer, model: OpenAIResponsesModel
) -> None:
    server.queue(Reply.recording("error_responses_400_stream_request.json"))
    stream = model.create_stream("What is the capital of France?", temperature=-1)
    with pytest.raises(BadRequestError) as caught:
        await stream.collect()
    error = caught.value
    assert error.status == 400
    assert error.code == "decimal_below_min_value"
    assert error.param == "temperature"
    assert error.error_type == "invalid_request_error"
    assert "decimal below minimum value" in error.message
    assert error.body is not None
    assert "decimal_below_min_value" in error.body
    assert len(server.requests) == 1  # a 400 is never retried


async def test_recorded_429_insufficient_quota_is_not_retried(
    server: LocalServer, model: OpenAIResponsesModel, sleeps: Any
) -> None:
    server.queue(Reply.recording("error_responses_429_insufficient_quota.json"))
    with pytest.raises(RateLimitError) as caught:
        await model.create("hi")
    error = caught.value
    assert (error.status, error.code, error.retryable) == (429, "insufficient_quota", False)
    assert error.message.startswith("HTTP 429: You exceeded your current quota")
    assert len(server.requests) == 1
    assert sleeps.delays == []
