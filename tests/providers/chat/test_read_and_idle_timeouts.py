"""The read and idle limits against a real local server: how long a model may think, and what a timeout costs.

- A call that is not streamed gets its answer only once all of it is generated: ``Timeout.read`` bounds that
  wait (600 s by default, as in the openai SDK), and a read timeout is *not* sent again, since the server got
  the request and may still be generating (and billing) it. The error says it made one attempt and what to
  change. ``RetryPolicy(retry_read_timeouts=True)`` retries it, as the openai SDK does.
- A stream whose headers or first event take longer than ``read`` is not retried either, for the same
  reason. Until its first event (a role-only chunk, Responses' ``response.created`` are none) it may wait
  ``read``; once the answer began, a gap longer than ``Timeout.idle`` (60 s by default) fails it.

The servers here pause for real to play a model that thinks (the pause *is* the behaviour under test): the
limits are a few hundredths of a second and the pauses several times longer, so the outcome never depends on
scheduling luck.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from aiohttp import web
from chat_local_server import (
    LocalServer,
    SleepRecorder,
    collect,
    json_reply,
    load_wire,
    sse_body,
    sse_reply,
    stall_reply,
)

from agentflow import ModelCompleted, ModelRetry, ModelTimeoutError, TextDelta, UserMessage
from agentflow.http.retry import RetryPolicy
from agentflow.http.timeouts import Timeout
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.responses_model import OpenAIResponsesModel

HI = [UserMessage("hi")]
OK = {"id": "c", "choices": [{"index": 0, "message": {"content": "ok"}, "finish_reason": "stop"}]}
ROLE_ONLY = {"id": "s", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}
THINKING = 0.3  # seconds a "model" pauses: several times the short limits below
SHORT = 0.05


def text(content: str, finish: str | None = None) -> dict[str, Any]:
    return {"id": "s", "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": finish}]}


def chat_model(server: LocalServer, sleeps: SleepRecorder, **options: Any) -> OpenAIChatModel:
    options.setdefault("retry", RetryPolicy(jitter=0))
    return OpenAIChatModel(base_url=server.base_url, model="m", sleep=sleeps, **options)


def paused_stream(before: bytes, after: bytes) -> Any:
    """An SSE reply that sends ``before``, thinks for ``THINKING`` seconds, then sends ``after``."""

    async def reply(request: web.Request, server: LocalServer) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(before)
        await anyio.sleep(THINKING)  # the model thinking: the pause under test, not a wait for something
        await response.write(after)
        await response.write_eof()
        return response

    return reply


async def test_a_blocking_call_past_the_read_timeout_is_sent_once_and_says_what_to_change(
    server: LocalServer, sleeps: SleepRecorder
) -> None:
    server.add(stall_reply(), json_reply(OK), json_reply(OK))
    async with chat_model(server, sleeps, read_timeout=SHORT) as model:
        with pytest.raises(ModelTimeoutError) as caught:
            await model.chat(HI)
    error = caught.value
    assert len(server.requests) == 1  # not sent again: it may be generating, and billed, on the server
    assert sleeps.delays == []
    assert error.limit == "read"
    assert not error.retryable
    for advice in ("read timeout of 0.05 s", "1 attempt", "read_timeout=", "stream the call"):
        assert advice in error.message


async def test_a_stream_whose_headers_never_come_is_not_retried(
    server: LocalServer, sleeps: SleepRecorder
) -> None:
    server.add(stall_reply(), json_reply(OK))
    async with chat_model(server, sleeps, timeout=Timeout(connect=SHORT, read=SHORT)) as model:
        events, error = await collect(model)
    assert events == []  # no ModelRetry
    assert isinstance(error, ModelTimeoutError)
    assert error.limit == "read"
    assert "1 attempt" in error.message
    assert len(server.requests) == 1


async def test_a_stream_whose_answer_does_not_begin_within_read_is_not_retried(
    server: LocalServer, sleeps: SleepRecorder
) -> None:
    # Headers and a role-only chunk at once, then nothing: the answer never began.
    server.add(sse_reply([sse_body(ROLE_ONLY, done=False)], end="stall"), json_reply(OK))
    async with chat_model(server, sleeps, timeout=Timeout(read=SHORT, idle=10)) as model:
        events, error = await collect(model)
    assert events == []
    assert isinstance(error, ModelTimeoutError)
    assert error.limit == "read"
    assert "its answer did not" in error.message
    assert len(server.requests) == 1


async def test_read_timeouts_are_retried_when_the_policy_asks(
    server: LocalServer, sleeps: SleepRecorder
) -> None:
    server.add(stall_reply(), json_reply(OK), stall_reply(), sse_reply([sse_body(text("ok", "stop"))]))
    policy = RetryPolicy(jitter=0, retry_read_timeouts=True)
    async with chat_model(server, sleeps, read_timeout=SHORT, retry=policy) as model:
        assert (await model.chat(HI)).message.text == "ok"
        events, error = await collect(model)
    assert error is None
    assert isinstance(events[0], ModelRetry)
    assert len(server.requests) == 4
    assert sleeps.delays == [0.5, 0.5]


async def test_a_model_may_think_longer_than_the_idle_limit_before_its_first_event(
    server: LocalServer, sleeps: SleepRecorder
) -> None:
    server.add(paused_stream(sse_body(ROLE_ONLY, done=False), sse_body(text("Hello", "stop"))))
    async with chat_model(server, sleeps, timeout=Timeout(read=30, idle=SHORT)) as model:
        events, error = await collect(model)
    assert error is None
    assert events[0] == TextDelta("Hello")
    assert isinstance(events[-1], ModelCompleted)


async def test_a_stream_that_stalls_once_its_answer_began_fails_at_the_idle_limit(
    server: LocalServer, sleeps: SleepRecorder
) -> None:
    server.add(paused_stream(sse_body(text("Hel"), done=False), sse_body(text("lo", "stop"))))
    async with chat_model(server, sleeps, timeout=Timeout(read=30, idle=SHORT)) as model:
        with anyio.fail_after(THINKING):  # the idle limit, not the read limit, ends it
            events, error = await collect(model)
    assert events == [TextDelta("Hel")]
    assert isinstance(error, ModelTimeoutError)
    assert error.limit == "idle"
    assert error.partial.message.text == "Hel"
    assert "Timeout(idle=" in error.message
    assert len(server.requests) == 1


async def test_a_responses_stream_may_think_after_response_created(
    server: LocalServer, sleeps: SleepRecorder
) -> None:
    # OpenAI sends response.created at once, then nothing while a reasoning model thinks.
    body = load_wire("responses_stream_text.json")["response_body"].encode()
    first, _, rest = body.partition(b"\n\n")
    assert b"response.created" in first
    server.add(paused_stream(first + b"\n\n", rest))
    async with OpenAIResponsesModel(
        base_url=server.base_url, model="m", sleep=sleeps, timeout=Timeout(read=30, idle=SHORT)
    ) as model:
        events, error = await collect(model)
    assert error is None
    assert isinstance(events[-1], ModelCompleted)
    assert events[-1].response.text == "pong"


async def test_the_default_limits_let_a_model_think_ten_minutes_and_a_stream_pause_one(
    server: LocalServer, sleeps: SleepRecorder
) -> None:
    async with chat_model(server, sleeps) as model:
        assert model.client.timeout.read == 600
        assert model.client.timeout.stream_gap == 60
    assert not RetryPolicy().is_retryable(ModelTimeoutError("no answer", limit="read"))
    assert RetryPolicy().is_retryable(ModelTimeoutError("could not connect", limit="connect"))
    assert RetryPolicy(retry_read_timeouts=True).is_retryable(ModelTimeoutError("no answer", limit="read"))
