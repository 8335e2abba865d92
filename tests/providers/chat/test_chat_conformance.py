"""Every recorded Chat Completions body (../shared/wire/chat_*.json, error_chat_*.json) decodes to the right
typed result — by the pure codecs, and end to end through OpenAIChatModel and a real local server."""

from __future__ import annotations

from typing import Any

import attrs
import orjson
import pytest
from chat_local_server import LocalServer, load_wire, pieces, raw_reply, sse_reply, wire_files

from agentflow import (
    AuthenticationError,
    BadRequestError,
    ChatResponse,
    FinishReason,
    ModelCompleted,
    ModelError,
    NotFoundError,
    RateLimitError,
    ReasoningDelta,
    TextDelta,
    TokenUsage,
    ToolCall,
    ToolCallArgumentsDelta,
    ToolCallReady,
    ToolCallStarted,
    UsageReported,
    UserMessage,
)
from agentflow.http.retry import RetryPolicy
from agentflow.http.sse import SseDecoder
from agentflow.model.errors import error_from_status
from agentflow.model.events import ModelEvent
from agentflow.providers.openai.chat_codec import decode_chat_response
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.chat_stream import ChatStreamDecoder


@attrs.frozen
class Expect:
    text: str | None
    finish: FinishReason | None
    usage: tuple[int, ...]  # input, output, total, cached, cache_write, reasoning
    calls: tuple[ToolCall, ...] = ()
    reasoning_start: str | None = None
    reasoning_len: int | None = None
    refusal: str | None = None
    response_id: str | None = None


@attrs.frozen
class ExpectError:
    kind: type[ModelError]
    status: int
    message: str
    code: str | None = None
    events_before: int = 0


EXPECTED: dict[str, Expect | ExpectError] = {
    "chat_deepseek_reasoning_content_tool_calls.json": Expect(
        "Let me get your name and roll the die!",
        FinishReason.TOOL_EXECUTION,
        (875, 79, 954, 0, 0, 26),
        calls=(
            ToolCall("call_00_6edlnw3Z1MgeMfey687g8451", "get_player_name", "{}"),
            ToolCall("call_01_km02sac7sHxNDPATKLZy7705", "roll_dice", "{}"),
        ),
        reasoning_start="Great, now I have access to the dice roll tool.",
        response_id="6b3446f6-7bd6-491f-a44c-0993ad3d67cf",
    ),
    "chat_finish_length.json": Expect(
        "**Title: The Last Ember of Eldoria**\n\n",
        FinishReason.LENGTH,
        (16, 10, 26, 0, 0, 0),
        response_id="chatcmpl-ChrU8RBawYyEMyrvlZTsV90yo7uCl",
    ),
    "chat_refusal.json": Expect(
        None,
        FinishReason.STOP,
        (65, 13, 78, 0, 0, 0),
        refusal="I'm very sorry, but I can't assist with that request.",
    ),
    "chat_stream_deepseek_reasoning_content.json": Expect(
        "Hello there! 😊 How can I help you today?",
        FinishReason.STOP,
        (6, 212, 218, 0, 0, 198),
        reasoning_start='Hmm, the user just said "Hello".',
        response_id="33be18fc-3842-486c-8c29-dd8e578f7f20",
    ),
    "chat_stream_groq_error_event.json": ExpectError(
        BadRequestError,
        400,
        "HTTP 400: Tool call validation failed: tool call validation failed: parameters for tool "
        "get_something_by_name did not match schema",
        code="tool_use_failed",
        events_before=1,
    ),
    "chat_stream_openrouter_error_chunk.json": ExpectError(
        BadRequestError, 400, "HTTP 400: Token limit reached", code="400", events_before=1
    ),
    "chat_stream_openrouter_reasoning.json": Expect(
        "2 + 2 = 4",
        FinishReason.STOP,
        (43, 36, 79, 0, 0, 13),
        reasoning_start="This is a simple arithmetic question. 2+2 equals 4.",
        reasoning_len=len("This is a simple arithmetic question. 2+2 equals 4."),
    ),
    "chat_stream_parallel_tool_calls_usage.json": Expect(
        None,
        FinishReason.TOOL_EXECUTION,
        (75, 51, 126, 0, 0, 0),
        calls=(
            ToolCall("call_fHCjJqt9Pysde6vcJcvbXGBx", "get_current_weather", '{"location": "Seattle, WA"}'),
            ToolCall(
                "call_3J9foSw3CUb48lrqIXoTky6U", "get_current_weather", '{"location": "San Francisco, CA"}'
            ),
        ),
        response_id="chatcmpl-ASYMbACebDoWcuraMEWQhU48q4dAp",
    ),
    "chat_stream_text_usage.json": Expect(
        "The capital of the UK is London.",
        FinishReason.STOP,
        (78, 9, 87, 0, 0, 0),
        response_id="chatcmpl-Dx0Xq5Xx9rHB2ehcHZCRDsnuymUXc",
    ),
    "chat_stream_tool_call_single.json": Expect(
        None,
        FinishReason.TOOL_EXECUTION,
        (53, 15, 68, 0, 0, 0),
        calls=(ToolCall("call_ZR5UUuTt3pf61kjwAJIYdVMj", "get_capital", '{"country":"UK"}'),),
    ),
    "chat_text_stop.json": Expect(
        "YES", FinishReason.STOP, (146, 3, 149, 0, 0, 0), response_id="chatcmpl-BWpGTZY785VsZipCO0bAvF7Z7tjdA"
    ),
    "chat_tool_call_single.json": Expect(
        None,
        FinishReason.TOOL_EXECUTION,
        (92, 17, 109, 0, 0, 0),
        calls=(ToolCall("call_TTY8UFNo7rNCaOBUNtlRSvMG", "lookup_population", '{"country":"Crumpet"}'),),
    ),
    "chat_tool_calls_parallel.json": Expect(
        None,
        FinishReason.TOOL_EXECUTION,
        (259, 78, 337, 0, 0, 0),
        calls=(
            ToolCall(
                "call_kz1qLLRsugXwWiQMeH9oFAep",
                "parallel_local_search_one",
                '{"query": "latest OpenAI model release notes"}',
            ),
            ToolCall(
                "call_yNouGq1Kv6P5W9fhTng6acZi",
                "parallel_local_search_two",
                '{"query": "latest Anthropic model release notes"}',
            ),
            ToolCall(
                "call_O7MqnuniDmyT6a0BS31GTunB",
                "parallel_local_search_three",
                '{"query": "latest Gemini model release notes"}',
            ),
        ),
    ),
    "error_chat_400_unsupported_parameter.json": ExpectError(
        BadRequestError,
        400,
        "HTTP 400: Unsupported parameter: 'stop' is not supported with this model.",
        code="unsupported_parameter",
    ),
    "error_chat_401_openrouter.json": ExpectError(
        AuthenticationError, 401, "HTTP 401: No cookie auth credentials found", code="401"
    ),
    "error_chat_404_model_not_found.json": ExpectError(
        NotFoundError,
        404,
        "HTTP 404: The model `non-existent-model` does not exist or you do not have access to it.",
        code="model_not_found",
    ),
    "error_chat_429_openrouter.json": ExpectError(
        RateLimitError, 429, "HTTP 429: Provider returned error", code="429"
    ),
}

RECORDINGS = wire_files("chat_*.json") + wire_files("error_chat_*.json")


def test_every_recording_has_an_expectation() -> None:
    assert sorted(EXPECTED) == sorted(RECORDINGS)


def check_response(response: ChatResponse, expect: Expect) -> None:
    message = response.message
    assert message.text == expect.text
    assert message.tool_calls == expect.calls
    assert message.refusal == expect.refusal
    if expect.reasoning_start is None:
        assert message.reasoning is None
    else:
        assert message.reasoning is not None
        assert message.reasoning.startswith(expect.reasoning_start)
        if expect.reasoning_len is not None:
            assert len(message.reasoning) == expect.reasoning_len
    assert response.finish_reason is expect.finish
    assert response.usage == TokenUsage(*expect.usage)
    if expect.response_id is not None:
        assert response.metadata["id"] == expect.response_id
    assert {"id", "model", "created"} <= set(response.metadata)


def check_events(events: list[ModelEvent], expect: Expect) -> None:
    """The streamed events tell the same story as the aggregated response."""
    assert isinstance(events[-1], ModelCompleted)
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    assert text == (expect.text or "")
    assert reasoning == (events[-1].response.message.reasoning or "")
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    ready = [e.call for e in events if isinstance(e, ToolCallReady)]
    assert [(e.id, e.name) for e in started] == [(c.id, c.name) for c in expect.calls]
    assert tuple(ready) == expect.calls
    for index, call in enumerate(expect.calls):
        fragments = [e.delta for e in events if isinstance(e, ToolCallArgumentsDelta) and e.index == index]
        assert "".join(fragments) == call.arguments
    # Each call is ready before the next one starts.
    order = [(type(e).__name__, getattr(e, "index", None)) for e in events if hasattr(e, "index")]
    for index in range(1, len(expect.calls)):
        assert order.index(("ToolCallReady", index - 1)) < order.index(("ToolCallStarted", index))
    usage = [e.usage for e in events if isinstance(e, UsageReported)]
    assert usage == [TokenUsage(*expect.usage)]


def decode_stream(body: str) -> tuple[list[ModelEvent], ModelError | None]:
    sse = SseDecoder()
    decoder = ChatStreamDecoder()
    events: list[ModelEvent] = []
    try:
        for event in sse.feed(body.encode()) + sse.close():
            events += decoder.feed(event)
        events += decoder.finish()
    except ModelError as error:
        return events, error
    return events, None


def check_error(error: BaseException | None, expect: ExpectError) -> None:
    assert isinstance(error, expect.kind)
    assert error.status == expect.status
    assert error.message.startswith(expect.message)
    assert error.code == expect.code


@pytest.mark.parametrize("name", RECORDINGS)
def test_recording_decodes_with_the_pure_codecs(name: str) -> None:
    record = load_wire(name)
    expect = EXPECTED[name]
    body: str = record["response_body"]
    if record["status"] >= 400:
        assert isinstance(expect, ExpectError)
        error = error_from_status(record["status"], body, record["response_headers"])
        check_error(error, expect)
        assert error.body == body
        return
    if record["stream"]:
        events, error = decode_stream(body)
        if isinstance(expect, ExpectError):
            check_error(error, expect)
            assert len(events) >= expect.events_before
            return
        assert error is None
        assert isinstance(events[-1], ModelCompleted)
        check_response(events[-1].response, expect)
        check_events(events, expect)
        return
    assert isinstance(expect, Expect)
    check_response(decode_chat_response(orjson.loads(body)), expect)


def _serve(server: LocalServer, record: dict[str, Any], chunk_size: int) -> None:
    content_type = record["response_headers"].get("content-type", "application/json")
    body: str = record["response_body"]
    if record["stream"] and record["status"] < 400:
        server.add(sse_reply(pieces(body, chunk_size), content_type=content_type))
    else:
        server.add(raw_reply(body, status=record["status"], content_type=content_type))


@pytest.mark.parametrize("chunk_size", [7, 4096])
@pytest.mark.parametrize("name", RECORDINGS)
async def test_recording_replayed_through_openai_chat_model(
    server: LocalServer, name: str, chunk_size: int
) -> None:
    record = load_wire(name)
    expect = EXPECTED[name]
    _serve(server, record, chunk_size)
    events: list[ModelEvent] = []
    async with OpenAIChatModel(base_url=server.base_url, model="m", retry=RetryPolicy.none()) as model:
        if record["stream"]:
            error: ModelError | None = None
            try:
                async with model.stream([UserMessage("hi")]) as stream:
                    async for event in stream:
                        events.append(event)
            except ModelError as caught:
                error = caught
            if isinstance(expect, ExpectError):
                check_error(error, expect)
                assert len(events) >= expect.events_before
                return
            assert error is None
            assert isinstance(expect, Expect)
            assert isinstance(events[-1], ModelCompleted)
            check_response(events[-1].response, expect)
            check_events(events, expect)
        elif isinstance(expect, ExpectError):
            with pytest.raises(ModelError) as caught:
                await model.chat([UserMessage("hi")])
            check_error(caught.value, expect)
        else:
            check_response(await model.chat([UserMessage("hi")]), expect)
    assert server.requests[0].path == "/v1/chat/completions"
