"""Streams that go wrong or deviate: in-band errors, failed/incomplete responses, cut-offs, odd ordering.

Pure decoder cases feed synthetic bodies through ``SseDecoder``; the model cases run against the local server.
"""

from __future__ import annotations

from typing import Any

import pytest
from responses_support import LocalServer, Reply, Sleeps, kinds, load, run_decoder, sse_body

from agentflow.http.retry import RetryPolicy
from agentflow.http.sse import SseEvent
from agentflow.model.errors import (
    AuthenticationError,
    IncompleteResponseError,
    ModelError,
    ProtocolError,
    RateLimitError,
    ServerError,
    StreamCutOffError,
)
from agentflow.model.events import (
    ModelCompleted,
    ModelRetry,
    ReasoningDelta,
    RefusalDelta,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallReady,
    ToolCallStarted,
    UsageReported,
)
from agentflow.model.messages import ToolCall
from agentflow.model.response import ChatResponse, FinishReason, TokenUsage
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.providers.openai.responses_stream import ResponsesStreamDecoder
from agentflow.providers.openai.responses_types import ResponsesResponse

USAGE = {"input_tokens": 10, "output_tokens": 4, "total_tokens": 14}


def envelope(status: str = "in_progress", output: list[Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "model": "m",
        "status": status,
        "output": output or [],
        **extra,
    }


def created() -> dict[str, Any]:
    return {"type": "response.created", "response": envelope(), "sequence_number": 0}


def message(text: str, status: str = "completed", item_id: str = "msg_1") -> dict[str, Any]:
    content = [{"type": "output_text", "text": text, "annotations": []}] if status == "completed" else []
    return {"id": item_id, "type": "message", "role": "assistant", "status": status, "content": content}


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


def text_delta(delta: str, idx: int = 0, item_id: str = "msg_1") -> dict[str, Any]:
    return {"type": "response.output_text.delta", "output_index": idx, "item_id": item_id, "delta": delta}


def args_delta(idx: int, delta: str) -> dict[str, Any]:
    return {
        "type": "response.function_call_arguments.delta",
        "output_index": idx,
        "item_id": f"fc_{idx}",
        "delta": delta,
    }


def completed(output: list[Any], usage: dict[str, Any] | None = USAGE) -> dict[str, Any]:
    return {"type": "response.completed", "response": envelope("completed", output, usage=usage)}


# --- in-band errors -------------------------------------------------------------------------------------


def test_response_failed_raises_the_typed_error() -> None:
    failed = envelope("failed", error={"code": "server_error", "message": "The server had an error"})
    events, error = run_decoder(sse_body(created(), {"type": "response.failed", "response": failed}))
    assert events == []
    assert isinstance(error, ServerError)
    assert error.retryable
    assert error.code == "server_error"
    assert "The server had an error" in error.message


def test_response_failed_without_error_object_is_still_an_error() -> None:
    _events, error = run_decoder(
        sse_body(created(), {"type": "response.failed", "response": envelope("failed")})
    )
    assert type(error) is ModelError
    assert "failed" in str(error)


def test_flat_error_event_is_typed_and_its_event_type_is_not_the_error_type() -> None:
    flat = {
        "type": "error",
        "code": "rate_limit_exceeded",
        "message": "Slow down",
        "param": None,
        "sequence_number": 3,
    }
    events, error = run_decoder(
        sse_body(created(), added(0, message("", "in_progress")), text_delta("Hel"), flat)
    )
    assert events == [TextDelta("Hel")]
    assert isinstance(error, RateLimitError)
    assert error.message == "Slow down"
    assert error.error_type is None
    assert error.code == "rate_limit_exceeded"


def test_nested_error_event_with_an_unknown_code_is_a_model_error() -> None:
    nested = {
        "type": "error",
        "error": {"type": "weird", "code": "something_new", "message": "odd", "param": "x"},
    }
    _, error = run_decoder(sse_body(created(), nested))
    assert type(error) is ModelError
    assert (error.code, error.error_type, error.param) == ("something_new", "weird", "x")


def test_untyped_error_payload_from_a_compatible_server_is_an_error() -> None:
    _, error = run_decoder('data: {"error": {"message": "Provider returned error", "code": 502}}\n\n')
    assert isinstance(error, ServerError)
    assert error.status == 502
    assert error.message == "HTTP 502: Provider returned error"


def test_event_error_with_non_json_data_is_a_model_error() -> None:
    _, error = run_decoder("event: error\ndata: upstream exploded\n\n")
    assert type(error) is ModelError
    assert "upstream exploded" in str(error)


def test_malformed_json_is_a_protocol_error() -> None:
    _, error = run_decoder(
        'event: response.output_text.delta\ndata: {"type": "response.output_text.delta", oops\n\n'
    )
    assert isinstance(error, ProtocolError)


def test_non_object_payload_and_non_string_delta_are_protocol_errors() -> None:
    _, error = run_decoder("data: [1, 2]\n\n")
    assert isinstance(error, ProtocolError)
    _, error = run_decoder(sse_body(text_delta(5)))  # type: ignore[arg-type]
    assert isinstance(error, ProtocolError)


async def test_response_failed_after_text_is_raised_without_retry(
    server: LocalServer, model: OpenAIResponsesModel, sleeps: Sleeps
) -> None:
    failed = envelope("failed", error={"code": "server_error", "message": "boom"})
    body = sse_body(
        created(),
        added(0, message("", "in_progress")),
        text_delta("Hi"),
        {"type": "response.failed", "response": failed},
    )
    server.queue(Reply.sse(body))
    seen: list[Any] = []

    async def consume() -> None:
        async for event in model.create_stream("hi"):
            seen.append(event)

    with pytest.raises(ServerError):
        await consume()
    assert seen == [TextDelta("Hi")]
    assert len(server.requests) == 1  # something was emitted: never retried
    assert sleeps.delays == []


async def test_in_band_server_error_before_any_event_is_retried(
    server: LocalServer, model: OpenAIResponsesModel, sleeps: Sleeps
) -> None:
    failed = envelope("failed", error={"code": "server_error", "message": "boom"})
    server.queue(
        Reply.sse(sse_body(created(), {"type": "response.failed", "response": failed})),
        Reply.recording("responses_stream_text.json"),
    )
    events = [event async for event in model.create_stream("hi")]
    assert kinds(events) == ["model_retry", "text_delta", "usage_reported", "model_completed"]
    assert isinstance(events[0], ModelRetry)
    assert len(server.requests) == 2
    assert sleeps.delays == [0.5]


@pytest.mark.parametrize(("status", "error_type"), [(401, AuthenticationError), (500, ServerError)])
async def test_non_2xx_stream_answers_are_typed_errors(
    server: LocalServer, status: int, error_type: type[ModelError]
) -> None:
    body = {"error": {"message": "nope", "type": "x", "code": None}}
    server.queue(Reply.json(body, status))
    async with OpenAIResponsesModel(
        base_url=server.url, api_key="sk-hidden", model="m", retry=RetryPolicy.none()
    ) as no_retry:
        with pytest.raises(error_type) as caught:
            await no_retry.create_stream("hi").collect()
    assert caught.value.status == status
    assert caught.value.message == f"HTTP {status}: nope (POST {server.url}/responses)"
    assert "sk-hidden" not in str(caught.value)
    assert "sk-hidden" not in repr(caught.value)


# --- incomplete ---------------------------------------------------------------------------------------


def incomplete_body(reason: str) -> str:
    item = message("The answer is", "incomplete")
    item["content"] = [{"type": "output_text", "text": "The answer is", "annotations": []}]
    final = envelope("incomplete", [item], usage=USAGE, incomplete_details={"reason": reason})
    return sse_body(
        created(),
        added(0, message("", "in_progress")),
        text_delta("The answer"),
        text_delta(" is"),
        {"type": "response.incomplete", "response": final},
    )


def test_response_incomplete_raises_with_the_reason_and_the_partial() -> None:
    events, error = run_decoder(incomplete_body("max_output_tokens"))
    assert events == [TextDelta("The answer"), TextDelta(" is")]
    assert isinstance(error, IncompleteResponseError)
    assert error.reason == "max_output_tokens"
    assert isinstance(error.partial, ResponsesResponse)
    assert error.partial.output_text == "The answer is"
    assert error.partial.usage == TokenUsage(10, 4, 14)


@pytest.mark.parametrize(
    ("reason", "finish"),
    [("max_output_tokens", FinishReason.LENGTH), ("content_filter", FinishReason.CONTENT_FILTER)],
)
def test_response_incomplete_can_be_returned_as_a_typed_result(reason: str, finish: FinishReason) -> None:
    decoder = ResponsesStreamDecoder(ResponsesResponse.to_chat_response, on_incomplete="return")
    events, error = run_decoder(incomplete_body(reason), decoder)
    assert error is None
    assert kinds(events) == ["text_delta", "text_delta", "usage_reported", "model_completed"]
    last = events[-1]
    assert isinstance(last, ModelCompleted)
    assert isinstance(last.response, ChatResponse)
    assert last.response.finish_reason is finish
    assert last.response.message.text == "The answer is"
    assert last.response.metadata["incomplete_details"] == {"reason": reason}


async def test_incomplete_body_raises_by_default_and_returns_when_asked(server: LocalServer) -> None:
    item = message("Trunc")
    body = envelope("incomplete", [item], usage=USAGE, incomplete_details={"reason": "max_output_tokens"})
    server.queue(Reply.json(body), Reply.json(body), Reply.json(body))
    async with OpenAIResponsesModel(base_url=server.url, model="m") as strict:
        with pytest.raises(IncompleteResponseError) as caught:
            await strict.create("hi")
        assert caught.value.reason == "max_output_tokens"
        assert isinstance(caught.value.partial, ResponsesResponse)
        assert caught.value.partial.output_text == "Trunc"
        with pytest.raises(IncompleteResponseError) as chat_caught:
            await strict.chat([])
        assert isinstance(chat_caught.value.partial, ChatResponse)
    async with OpenAIResponsesModel(base_url=server.url, model="m", on_incomplete="return") as lenient:
        response = await lenient.create("hi")
    assert response.status == "incomplete"
    assert response.incomplete_reason == "max_output_tokens"
    assert response.to_chat_response().finish_reason is FinishReason.LENGTH


async def test_failed_body_with_status_200_is_a_typed_error(
    server: LocalServer, model: OpenAIResponsesModel
) -> None:
    body = envelope("failed", error={"code": "insufficient_quota", "message": "quota"})
    server.queue(Reply.json(body))
    with pytest.raises(RateLimitError) as caught:
        await model.create("hi")
    assert caught.value.retryable is False
    assert len(server.requests) == 1


async def test_malformed_body_is_a_protocol_error(server: LocalServer, model: OpenAIResponsesModel) -> None:
    server.queue(Reply.json({"id": "resp_1", "status": "completed"}))
    with pytest.raises(ProtocolError, match="output"):
        await model.create("hi")
    server.queue(
        Reply.json(envelope("completed", [{"type": "function_call", "call_id": "c", "arguments": "{}"}]))
    )
    with pytest.raises(ProtocolError, match="without a name"):
        await model.create("hi")


# --- cut-off streams --------------------------------------------------------------------------------------


def test_stream_without_completed_raises_cut_off_with_the_partial() -> None:
    body = sse_body(
        created(),
        added(0, message("", "in_progress")),
        text_delta("Let me "),
        text_delta("check."),
        done(0, message("Let me check.")),
        added(1, call_item(1, status="in_progress")),
        args_delta(1, '{"a":'),
        args_delta(1, "1}"),
        {
            "type": "response.function_call_arguments.done",
            "output_index": 1,
            "item_id": "fc_1",
            "arguments": '{"a":1}',
        },
        added(2, call_item(2, status="in_progress")),
        args_delta(2, '{"b":'),
    )
    events, error = run_decoder(body)
    assert events == [
        TextDelta("Let me "),
        TextDelta("check."),
        # Output items 1 and 2, the response's calls 0 and 1.
        ToolCallStarted(0, "call_1", "tool_1"),
        ToolCallArgumentsDelta(0, '{"a":'),
        ToolCallArgumentsDelta(0, "1}"),
        ToolCallReady(0, ToolCall("call_1", "tool_1", '{"a":1}')),
        ToolCallStarted(1, "call_2", "tool_2"),
        ToolCallArgumentsDelta(1, '{"b":'),
    ]
    assert isinstance(error, StreamCutOffError)
    partial = error.partial
    assert isinstance(partial, ResponsesResponse)
    assert partial.status == "in_progress"
    assert partial.id == "resp_1"
    assert partial.output_text == "Let me check."
    # The finished call is offered; the one cut mid-arguments stays in the raw output only.
    assert partial.tool_calls == (ToolCall("call_1", "tool_1", '{"a":1}'),)
    assert partial.output[2]["arguments"] == '{"b":'
    assert partial.output[2]["status"] == "in_progress"
    assert partial.usage is None


def test_cut_off_partial_keeps_unfinished_text_and_reasoning() -> None:
    reasoning = {"id": "rs_1", "type": "reasoning", "summary": []}
    body = sse_body(
        created(),
        added(0, reasoning),
        {"type": "response.reasoning_summary_part.added", "output_index": 0, "summary_index": 0},
        {
            "type": "response.reasoning_summary_text.delta",
            "output_index": 0,
            "summary_index": 0,
            "delta": "Think",
        },
        {"type": "response.reasoning_summary_part.added", "output_index": 0, "summary_index": 1},
        {
            "type": "response.reasoning_summary_text.delta",
            "output_index": 0,
            "summary_index": 1,
            "delta": "More",
        },
        added(1, message("", "in_progress", "msg_2")),
        text_delta("Par", 1, "msg_2"),
    )
    events, error = run_decoder(body)
    assert events == [
        ReasoningDelta("Think"),
        ReasoningDelta("\n\n"),
        ReasoningDelta("More"),
        TextDelta("Par"),
    ]
    assert isinstance(error, StreamCutOffError)
    assert error.partial.reasoning == "Think\n\nMore"
    assert error.partial.output_text == "Par"


def test_cut_off_partial_never_reads_as_completed_even_without_response_created() -> None:
    _, error = run_decoder(sse_body(added(0, message("", "in_progress")), text_delta("Hal")))
    assert isinstance(error, StreamCutOffError)
    assert error.partial.status == "in_progress"
    assert error.partial.output_text == "Hal"
    assert error.partial.finish_reason is FinishReason.OTHER


def test_empty_body_and_done_sentinel_alone_are_cut_off() -> None:
    _, error = run_decoder("")
    assert isinstance(error, StreamCutOffError)
    _, error = run_decoder(sse_body(created()) + "data: [DONE]\n\n")
    assert isinstance(error, StreamCutOffError)


async def test_cut_off_stream_through_the_chat_protocol_carries_a_chat_partial(
    server: LocalServer, model: OpenAIResponsesModel
) -> None:
    server.queue(Reply.sse(sse_body(created(), added(0, message("", "in_progress")), text_delta("Hal"))))
    with pytest.raises(StreamCutOffError) as caught:
        await model.stream([]).collect()
    assert isinstance(caught.value.partial, ChatResponse)
    assert caught.value.partial.message.text == "Hal"
    assert caught.value.partial.finish_reason is FinishReason.OTHER


# --- ordering and lenient servers ---------------------------------------------------------------------


def test_missing_or_shuffled_sequence_numbers_change_nothing() -> None:
    body = load("responses_stream_function_call.json")["response_body"]
    expected, _ = run_decoder(body)
    stripped = body.replace('"sequence_number":', '"seq_was":')
    assert run_decoder(stripped)[0] == expected
    shuffled = body
    for n in range(16):
        shuffled = shuffled.replace(f'"sequence_number":{n},', f'"sequence_number":{(n * 7) % 16},', 1)
    assert run_decoder(shuffled)[0] == expected


def test_events_without_output_index_are_correlated_by_item_id() -> None:
    body = sse_body(
        created(),
        added(0, message("", "in_progress")),
        added(1, call_item(1, status="in_progress")),
        {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": '{"x":'},
        {"type": "response.output_text.delta", "item_id": "msg_1", "delta": "Hi"},
        {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": "2}"},
        {"type": "response.function_call_arguments.done", "item_id": "fc_1", "arguments": '{"x":2}'},
    )
    events, error = run_decoder(body)
    assert events == [
        ToolCallStarted(0, "call_1", "tool_1"),
        ToolCallArgumentsDelta(0, '{"x":'),
        TextDelta("Hi"),
        ToolCallArgumentsDelta(0, "2}"),
        ToolCallReady(0, ToolCall("call_1", "tool_1", '{"x":2}')),
    ]
    assert isinstance(error, StreamCutOffError)
    assert error.partial.output_text == "Hi"


def test_events_that_arrive_before_their_item_are_not_lost() -> None:
    # Out of order: the text delta and the final arguments come before the items are announced.
    body = sse_body(
        created(),
        text_delta("Hi", 0),
        {"type": "response.function_call_arguments.done", "output_index": 1, "arguments": '{"n":1}'},
        added(0, message("", "in_progress")),
        added(1, call_item(1, status="in_progress")),
        done(0, message("Hi")),
    )
    events, error = run_decoder(body)
    call = ToolCall("call_1", "tool_1", '{"n":1}')
    assert events == [TextDelta("Hi"), ToolCallStarted(0, "call_1", "tool_1"), ToolCallReady(0, call)]
    assert isinstance(error, StreamCutOffError)
    assert error.partial.output_text == "Hi"
    assert error.partial.tool_calls == (call,)


def test_interleaved_parallel_calls_are_aggregated_per_index_and_ready_once() -> None:
    body = sse_body(
        created(),
        added(0, call_item(0, status="in_progress")),
        added(1, call_item(1, status="in_progress")),
        args_delta(0, '{"a"'),
        args_delta(1, '{"b"'),
        args_delta(0, ":0}"),
        args_delta(1, ":1}"),
        {"type": "response.function_call_arguments.done", "output_index": 1, "arguments": '{"b":1}'},
        done(1, call_item(1, '{"b":1}')),
        done(0, call_item(0, '{"a":0}')),
        completed([call_item(0, '{"a":0}'), call_item(1, '{"b":1}')]),
    )
    events, error = run_decoder(body)
    assert error is None
    ready = [e for e in events if isinstance(e, ToolCallReady)]
    assert ready == [
        ToolCallReady(1, ToolCall("call_1", "tool_1", '{"b":1}')),
        ToolCallReady(0, ToolCall("call_0", "tool_0", '{"a":0}')),
    ]
    assert kinds(events).count("tool_call_started") == 2


def test_server_that_sends_no_deltas_still_streams_the_content() -> None:
    body = sse_body(
        created(),
        done(0, message("Whole answer")),
        done(1, {"id": "rs", "type": "reasoning", "summary": [{"type": "summary_text", "text": "Why"}]}),
        done(2, {**message("", "completed", "msg_r"), "content": [{"type": "refusal", "refusal": "No."}]}),
        done(3, call_item(3, '{"q":1}')),
        completed([]),  # and leaves the final output empty
    )
    events, error = run_decoder(body)
    assert error is None
    assert events[:-2] == [
        TextDelta("Whole answer"),
        ReasoningDelta("Why"),
        RefusalDelta("No."),
        ToolCallStarted(0, "call_3", "tool_3"),
        ToolCallReady(0, ToolCall("call_3", "tool_3", '{"q":1}')),
    ]
    response = events[-1].response  # type: ignore[attr-defined]
    assert response.output_text == "Whole answer"
    assert response.refusal == "No."
    assert response.reasoning == "Why"
    assert len(response.output) == 4


def test_completed_with_an_empty_output_is_aggregated_from_the_deltas() -> None:
    # A lenient server: deltas only (no output_item.done, no arguments.done), then an empty final output.
    body = sse_body(
        text_delta("Hi"),
        added(1, call_item(1, status="in_progress")),
        args_delta(1, '{"q":'),
        args_delta(1, "1}"),
        completed([]),
    )
    events, error = run_decoder(body)
    assert error is None
    call = ToolCall("call_1", "tool_1", '{"q":1}')
    assert events[-3] == ToolCallReady(0, call)  # the response completed: its calls are finished
    response = events[-1].response  # type: ignore[attr-defined]
    assert response.output_text == "Hi"
    assert response.tool_calls == (call,)
    assert [item["status"] for item in response.output] == ["completed", "completed"]


def test_unfinished_call_is_never_ready_even_at_output_item_done() -> None:
    unfinished = call_item(0, '{"a":', status="incomplete")
    final = envelope("incomplete", [unfinished], incomplete_details={"reason": "max_output_tokens"})
    body = sse_body(
        created(),
        added(0, call_item(0, status="in_progress")),
        args_delta(0, '{"a":'),
        done(0, unfinished),
        {"type": "response.incomplete", "response": final},
    )
    decoder = ResponsesStreamDecoder.for_responses(on_incomplete="return")
    events, error = run_decoder(body, decoder)
    assert error is None
    assert kinds(events) == ["tool_call_started", "tool_call_arguments_delta", "model_completed"]
    response = events[-1].response  # type: ignore[attr-defined]
    assert response.tool_calls == ()
    assert response.output[0]["arguments"] == '{"a":'  # kept verbatim, not offered as a call


def test_completed_output_alone_yields_every_event_once() -> None:
    final = [message("Answer"), call_item(1, "{}")]
    events, error = run_decoder(sse_body(completed(final, usage=None)))
    assert error is None
    assert kinds(events) == ["text_delta", "tool_call_started", "tool_call_ready", "model_completed"]


def test_refusal_deltas_stream_and_aggregate() -> None:
    refusal_item = {**message("", "completed"), "content": [{"type": "refusal", "refusal": "I can't help."}]}
    body = sse_body(
        created(),
        added(0, message("", "in_progress")),
        {"type": "response.refusal.delta", "output_index": 0, "item_id": "msg_1", "delta": "I can't"},
        {"type": "response.refusal.delta", "output_index": 0, "item_id": "msg_1", "delta": " help."},
        done(0, refusal_item),
        completed([refusal_item]),
    )
    events, error = run_decoder(body)
    assert error is None
    assert events[:2] == [RefusalDelta("I can't"), RefusalDelta(" help.")]
    assert events[2] == UsageReported(TokenUsage(10, 4, 14))
    response = events[-1].response  # type: ignore[attr-defined]
    assert response.refusal == "I can't help."
    assert response.to_chat_response().message.refusal == "I can't help."


def test_usage_with_missing_details_and_total() -> None:
    events, _ = run_decoder(
        sse_body(completed([message("x")], usage={"input_tokens": 3, "output_tokens": 2}))
    )
    assert UsageReported(TokenUsage(3, 2, 5)) in events


def test_events_after_the_terminal_event_and_unknown_events_are_ignored() -> None:
    decoder = ResponsesStreamDecoder.for_responses()
    assert decoder.feed(SseEvent('{"type":"response.web_search_call.searching","output_index":0}')) == []
    decoder.feed(SseEvent(sse_body(completed([message("x")]))[len("event: response.completed\ndata: ") : -2]))
    assert decoder.done
    assert (
        decoder.feed(SseEvent('{"type":"response.output_text.delta","output_index":0,"delta":"late"}')) == []
    )
    assert decoder.finish() == []
