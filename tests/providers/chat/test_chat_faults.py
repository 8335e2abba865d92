"""Faults against a real local aiohttp server: error statuses, refused and reset connections, stalls past the
read timeout, Retry-After, truncated and malformed bodies, and the retry-only-before-the-first-event rule."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest
from chat_local_server import (
    LocalServer,
    SleepRecorder,
    collect,
    free_port,
    json_reply,
    raw_reply,
    sse_body,
    sse_reply,
    stall_reply,
)

from agentflow import (
    AuthenticationError,
    BadRequestError,
    ModelCompleted,
    ModelConnectionError,
    ModelError,
    ModelRetry,
    ModelTimeoutError,
    NotFoundError,
    ProtocolError,
    RateLimitError,
    ServerError,
    StreamCutOffError,
    TextDelta,
    UserMessage,
)
from agentflow.http.retry import RetryPolicy
from agentflow.http.timeouts import Timeout
from agentflow.providers.openai.chat_model import OpenAIChatModel

OK = {"id": "c", "choices": [{"index": 0, "message": {"content": "ok"}, "finish_reason": "stop"}]}
HI = [UserMessage("hi")]


def text(content: str, finish: str | None = None) -> dict[str, Any]:
    return {"id": "s", "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": finish}]}


def model_for(server: LocalServer, sleeps: SleepRecorder, **options: Any) -> OpenAIChatModel:
    options.setdefault("retry", RetryPolicy(jitter=0))
    return OpenAIChatModel(
        base_url=server.base_url, model="m", api_key="sk-secret-key", sleep=sleeps, **options
    )


ERROR_CLASSES = [
    (400, BadRequestError),
    (401, AuthenticationError),
    (403, AuthenticationError),
    (404, NotFoundError),
    (408, ServerError),
    (409, ServerError),
    (422, BadRequestError),
    (429, RateLimitError),
    (500, ServerError),
    (503, ServerError),
]


@pytest.mark.parametrize(("status", "kind"), ERROR_CLASSES)
async def test_error_status_becomes_typed_error_with_status_and_body(
    server: LocalServer, sleeps: SleepRecorder, status: int, kind: type[ModelError]
) -> None:
    body = {"error": {"message": f"failure {status}", "type": "some_error", "code": "some_code"}}
    server.add(json_reply(body, status=status), json_reply(body, status=status))
    async with model_for(server, sleeps, retry=RetryPolicy.none()) as model:
        with pytest.raises(kind) as caught:
            await model.chat(HI)
        events, streamed = await collect(model)
    for error in (caught.value, streamed):
        assert type(error) is kind
        assert error.status == status
        # The URL (redacted) is named, so a wrong base_url shows in the message.
        assert (
            error.message == f"HTTP {status}: failure {status} (POST {server.base_url}/v1/chat/completions)"
        )
        assert error.body is not None
        assert "failure" in error.body
    assert events == []


@pytest.mark.parametrize("status", [400, 401, 403, 404])
async def test_client_errors_are_sent_once(server: LocalServer, sleeps: SleepRecorder, status: int) -> None:
    server.add(json_reply({"error": {"message": "no"}}, status=status, headers={"Retry-After": "1"}))
    async with model_for(server, sleeps) as model:
        with pytest.raises(ModelError):
            await model.chat(HI)
    assert len(server.requests) == 1
    assert sleeps.delays == []


async def test_server_errors_are_retried_twice_then_raised(
    server: LocalServer, sleeps: SleepRecorder
) -> None:
    server.add(*[json_reply({"error": {"message": "boom"}}, status=500)] * 3)
    retries: list[ModelRetry] = []
    async with model_for(server, sleeps, on_retry=retries.append) as model:
        with pytest.raises(ServerError, match="boom"):
            await model.chat(HI)
    assert len(server.requests) == 3
    assert sleeps.delays == [0.5, 1.0]
    assert [(r.attempt, r.max_attempts, r.delay) for r in retries] == [(2, 3, 0.5), (3, 3, 1.0)]
    assert retries[0].reason == f"HTTP 500: boom (POST {server.base_url}/v1/chat/completions)"


async def test_429_with_retry_after_then_success(server: LocalServer, sleeps: SleepRecorder) -> None:
    limited = json_reply({"error": {"message": "slow down"}}, status=429, headers={"Retry-After": "2"})
    server.add(limited, json_reply(OK))
    async with model_for(server, sleeps) as model:
        response = await model.chat(HI)
    assert response.message.text == "ok"
    assert sleeps.delays == [2.0]


async def test_stream_429_with_retry_after_ms_yields_model_retry_then_succeeds(
    server: LocalServer, sleeps: SleepRecorder
) -> None:
    limited = json_reply({"error": {"message": "slow down"}}, status=429, headers={"retry-after-ms": "250"})
    server.add(limited, sse_reply([sse_body(text("hello", "stop"))]))
    async with model_for(server, sleeps) as model:
        events, error = await collect(model)
    assert error is None
    reason = f"HTTP 429: slow down (POST {server.base_url}/v1/chat/completions)"
    assert events[0] == ModelRetry(attempt=2, max_attempts=3, delay=0.25, reason=reason)
    assert events[1] == TextDelta("hello")
    assert isinstance(events[-1], ModelCompleted)
    assert sleeps.delays == [0.25]


async def test_connection_refused_is_a_connection_error_with_cause(sleeps: SleepRecorder) -> None:
    model = OpenAIChatModel(
        base_url=f"http://127.0.0.1:{free_port()}", model="m", api_key="sk-secret-key", sleep=sleeps
    )
    async with model:
        with pytest.raises(ModelConnectionError) as caught:
            await model.chat(HI)
        events, streamed = await collect(model)
    assert isinstance(caught.value.__cause__, aiohttp.ClientError)
    assert isinstance(streamed, ModelConnectionError)
    assert [type(e) for e in events] == [ModelRetry, ModelRetry]
    assert len(sleeps.delays) == 4  # two retries for each call
    assert "sk-secret-key" not in str(caught.value) + repr(caught.value) + str(caught.value.__cause__)


async def test_reset_mid_stream_after_an_event_is_not_retried(
    server: LocalServer, sleeps: SleepRecorder
) -> None:
    server.add(sse_reply([sse_body(text("partial"), done=False)], end="reset"), json_reply(OK))
    async with model_for(server, sleeps) as model:
        events, error = await collect(model)
    assert events == [TextDelta("partial")]
    assert isinstance(error, ModelConnectionError)
    assert len(server.requests) == 1
    assert sleeps.delays == []


async def test_reset_before_the_first_event_is_retried(server: LocalServer, sleeps: SleepRecorder) -> None:
    server.add(
        sse_reply([b": keep-alive\n\n"], end="reset"), sse_reply([sse_body(text("fine", "stop"))], end="eof")
    )
    async with model_for(server, sleeps) as model:
        events, error = await collect(model)
    assert error is None
    assert isinstance(events[0], ModelRetry)
    assert events[1] == TextDelta("fine")
    assert len(server.requests) == 2


async def test_stream_retried_only_before_first_event(server: LocalServer, sleeps: SleepRecorder) -> None:
    server.add(
        json_reply({"error": {"message": "busy"}}, status=503),
        sse_reply([sse_body(text("one"), done=False)], end="reset"),
        sse_reply([sse_body(text("never", "stop"))]),
    )
    async with model_for(server, sleeps) as model:
        events, error = await collect(model)
    assert [type(e) for e in events] == [ModelRetry, TextDelta]
    assert isinstance(error, ModelConnectionError)
    assert len(server.requests) == 2


@pytest.fixture
def unaccepting_port() -> Iterator[int]:
    """A port whose listener never accepts and whose accept queue is full: a connect there hangs."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port: int = listener.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)):  # fills the queue of length 0 (+1)
            yield port


@pytest.mark.skipif(sys.platform != "linux", reason="relies on Linux dropping SYNs to a full accept queue")
async def test_connect_timeout_when_the_server_never_accepts(
    unaccepting_port: int, sleeps: SleepRecorder
) -> None:
    model = OpenAIChatModel(
        base_url=f"http://127.0.0.1:{unaccepting_port}",
        model="m",
        sleep=sleeps,
        retry=RetryPolicy(max_retries=1, jitter=0),
        connect_timeout=0.05,
    )
    async with model:
        with pytest.raises(ModelTimeoutError, match=r"connecting to .* timed out after 0\.05 s") as caught:
            await model.chat(HI)
        events, streamed = await collect(model)
    assert isinstance(caught.value.__cause__, aiohttp.ConnectionTimeoutError)
    assert caught.value.retryable
    assert [type(e) for e in events] == [ModelRetry]
    assert isinstance(streamed, ModelTimeoutError)
    assert sleeps.delays == [0.5, 0.5]  # one retry for each call, through the injected sleep


async def test_stall_before_headers_past_the_read_timeout(server: LocalServer, sleeps: SleepRecorder) -> None:
    server.add(stall_reply(), stall_reply())
    limits = Timeout(connect=0.05, read=0.05)
    async with model_for(server, sleeps, retry=RetryPolicy.none(), timeout=limits) as model:
        with pytest.raises(ModelTimeoutError, match=r"no answer from .* read timeout of 0\.05 s") as caught:
            await model.chat(HI)
        events, error = await collect(model)
    assert caught.value.limit == "read"
    assert events == []
    assert isinstance(error, ModelTimeoutError)
    assert error.limit == "read"
    assert "no response headers" in error.message  # a stream waits at most connect + read for them


async def test_stall_mid_stream_past_the_read_timeout(server: LocalServer, sleeps: SleepRecorder) -> None:
    server.add(sse_reply([sse_body(text("slow"), done=False)], end="stall"))
    async with model_for(server, sleeps, read_timeout=0.05) as model:
        events, error = await collect(model)
    assert events == [TextDelta("slow")]
    assert isinstance(error, ModelTimeoutError)
    assert error.limit == "idle"  # read bounds the gaps of a stream too, when it is the shorter limit
    assert "stalled: no data for 0.05 s" in error.message
    assert error.retryable


async def test_stall_is_retried_as_a_timeout_before_any_event_when_the_policy_says_so(
    server: LocalServer, sleeps: SleepRecorder
) -> None:
    server.add(stall_reply(), json_reply(OK))
    policy = RetryPolicy(jitter=0, retry_read_timeouts=True)
    async with model_for(server, sleeps, timeout=Timeout(read=0.05), retry=policy) as model:
        assert (await model.chat(HI)).message.text == "ok"
    assert len(sleeps.delays) == 1


async def test_total_timeout_bounds_the_whole_call(server: LocalServer, sleeps: SleepRecorder) -> None:
    server.add(sse_reply([sse_body(text("a"), done=False)], end="stall"))
    async with model_for(server, sleeps, timeout=Timeout(read=30, total=0.1)) as model:
        events, error = await collect(model)
    assert events == [TextDelta("a")]
    assert isinstance(error, ModelTimeoutError)
    assert "total timeout" in error.message


async def test_truncated_stream_is_cut_off_with_partial(server: LocalServer, sleeps: SleepRecorder) -> None:
    server.add(sse_reply([sse_body(text("Hel"), text("lo"), done=False)]))
    async with model_for(server, sleeps) as model:
        events, error = await collect(model)
    assert events == [TextDelta("Hel"), TextDelta("lo")]
    assert isinstance(error, StreamCutOffError)
    assert error.partial.message.text == "Hello"
    assert len(server.requests) == 1


async def test_malformed_json_body_is_a_protocol_error(server: LocalServer, sleeps: SleepRecorder) -> None:
    server.add(raw_reply("{not json"), json_reply({"object": "chat.completion"}))
    async with model_for(server, sleeps) as model:
        with pytest.raises(ProtocolError, match="not valid JSON") as caught:
            await model.chat(HI)
        assert caught.value.body == "{not json"
        with pytest.raises(ProtocolError, match="no choices"):
            await model.chat(HI)
    assert len(server.requests) == 2


async def test_an_html_page_answering_a_call_is_named_as_such(
    server: LocalServer, sleeps: SleepRecorder
) -> None:
    server.add(raw_reply("<html><body>Sign in to the proxy</body></html>", content_type="text/html"))
    async with model_for(server, sleeps) as model:
        with pytest.raises(ProtocolError, match=r"not valid JSON.*it is text/html.*Sign in to the proxy"):
            await model.chat(HI)
    assert len(server.requests) == 1


async def test_malformed_stream_chunk_is_a_protocol_error(server: LocalServer, sleeps: SleepRecorder) -> None:
    server.add(sse_reply([sse_body(text("ok")), b"data: {bad\n\n"]))
    server.replies.insert(0, sse_reply([sse_body(text("a"), done=False) + b"data: {bad\n\n"]))
    async with model_for(server, sleeps) as model:
        events, error = await collect(model)
    assert events == [TextDelta("a")]
    assert isinstance(error, ProtocolError)
    assert error.body == "{bad"


async def test_stream_error_status_carries_the_body(server: LocalServer, sleeps: SleepRecorder) -> None:
    server.add(raw_reply('{"error": {"message": "quota", "type": "insufficient_quota"}}', status=429))
    async with model_for(server, sleeps) as model:
        events, error = await collect(model)
    assert events == []
    assert isinstance(error, RateLimitError)
    assert not error.retryable
    assert error.body is not None
    assert "insufficient_quota" in error.body
    assert len(server.requests) == 1


async def test_stream_request_answered_with_json(server: LocalServer, sleeps: SleepRecorder) -> None:
    server.add(json_reply({"error": {"message": "bad stream", "code": 400}}), json_reply(OK))
    async with model_for(server, sleeps) as model:
        _, first = await collect(model)
        _, second = await collect(model)
    assert isinstance(first, BadRequestError)
    assert isinstance(second, ProtocolError)
    assert "expected an event stream" in second.message


async def test_in_band_error_chunk_over_http(server: LocalServer, sleeps: SleepRecorder) -> None:
    body = sse_body(
        text("x", "length"), {"error": {"code": 400, "message": "Token limit reached"}, "choices": []}
    )
    server.add(sse_reply([body]))
    async with model_for(server, sleeps) as model:
        events, error = await collect(model)
    assert events == [TextDelta("x")]
    assert isinstance(error, BadRequestError)
    assert error.status == 400
    # What had arrived before the error goes with it, as with a dropped connection.
    assert error.partial is not None
    assert error.partial.message.text == "x"


async def test_event_error_over_http(server: LocalServer, sleeps: SleepRecorder) -> None:
    body = b'event: error\ndata: {"error": {"message": "overloaded", "type": "server_error"}}\n\n'
    server.add(sse_reply([body]))
    async with model_for(server, sleeps, retry=RetryPolicy.none()) as model:
        _, error = await collect(model)
    assert isinstance(error, ServerError)
    assert error.message == "overloaded"
