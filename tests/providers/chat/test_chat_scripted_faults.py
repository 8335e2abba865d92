"""OpenAIChatModel against the public ScriptedServer: every scripted fault is a typed error, streaming and
blocking, and the retryable ones recover through the injected sleep (no real waiting)."""

from __future__ import annotations

import pytest
from chat_local_server import SleepRecorder

from agentflow import (
    AuthenticationError,
    ModelCompleted,
    ModelConnectionError,
    ModelError,
    ModelRetry,
    ModelTimeoutError,
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
from agentflow.testing import Fault, Reply, ScriptedServer

HI = [UserMessage("hi")]
FULL = Reply(text="one two three", chunk_size=4)  # chat stream: role, 4 deltas, finish, usage, [DONE]


@pytest.mark.parametrize(
    ("fault", "stream_error", "blocking_error"),
    [
        (Fault.status(401), AuthenticationError, AuthenticationError),
        (Fault.status(429), RateLimitError, RateLimitError),
        (Fault.status(503), ServerError, ServerError),
        (Fault.malformed_chunk(2, reply=FULL), ProtocolError, ProtocolError),
        (Fault.disconnect(3, reply=FULL), ModelConnectionError, ModelConnectionError),
        (Fault.truncate(3, reply=FULL), StreamCutOffError, ProtocolError),
        (Fault.stream_error(2, reply=FULL), ServerError, ServerError),
        (Fault.stream_error(2, as_event=True, reply=FULL), ServerError, ServerError),
        (Fault.stall(2, reply=FULL), ModelTimeoutError, ModelTimeoutError),
    ],
    ids=[
        "status_401",
        "status_429",
        "status_503",
        "malformed",
        "disconnect",
        "truncate",
        "stream_error",
        "error_event",
        "stall",
    ],
)
async def test_every_scripted_fault_is_a_typed_error_streaming_and_blocking(
    fault: Fault, stream_error: type[ModelError], blocking_error: type[ModelError]
) -> None:
    async with (
        ScriptedServer([fault, fault]) as server,
        OpenAIChatModel(
            base_url=server.base_url, model="m", retry=RetryPolicy.none(), timeout=Timeout(read=0.05)
        ) as model,
    ):
        with pytest.raises(stream_error) as streamed:
            await model.stream(HI).collect()
        with pytest.raises(blocking_error) as blocking:
            await model.chat(HI)
        assert [request.stream for request in server.requests] == [True, False]
    if fault.http_status != 200:
        for error in (streamed.value, blocking.value):
            assert error.status == fault.http_status
            assert error.body is not None
            assert "error" in error.body


async def test_retryable_faults_recover_with_the_injected_sleep() -> None:
    script = [
        Fault.status(429, headers={"retry-after": "2"}),
        Fault.truncate(1, reply=FULL),  # only the role chunk: nothing emitted yet, so it is retried
        FULL,
        Fault.status(503, headers={"retry-after-ms": "1500"}),
        Fault.stream_error(reply=FULL),  # blocking: HTTP 200 with a server_error body, retried too
        Reply(text="done"),
    ]
    sleeps = SleepRecorder()
    async with (
        ScriptedServer(script) as server,
        OpenAIChatModel(
            base_url=server.base_url, model="m", retry=RetryPolicy(jitter=0), sleep=sleeps
        ) as model,
    ):
        events = [event async for event in model.stream(HI)]
        assert (await model.chat(HI)).message.text == "done"
    assert [type(e) for e in events[:2]] == [ModelRetry, ModelRetry]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "one two three"
    assert isinstance(events[-1], ModelCompleted)
    assert sleeps.delays == [2.0, 1.0, 1.5, 1.0]
    assert server.remaining == 0
