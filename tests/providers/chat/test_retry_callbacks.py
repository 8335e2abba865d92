"""``on_retry`` and ``sleep``: the two functions a model calls around a retry, against a real local server.

- ``on_retry`` may be async, like agentflow's other callbacks: what it returns is awaited, in blocking calls
  and streams alike. One that raises (plain or async) is logged on ``agentflow.http`` at ``ERROR`` and the
  call goes on: an observer must not break what it observes.
- ``sleep`` must be async: ``time.sleep`` (which would stall the event loop for the whole back-off) fails
  when the model is built, and a plain function that returns no awaitable fails at the first retry with a
  ``TypeError`` that says so.
"""

from __future__ import annotations

import functools
import logging
import time
from typing import Any

import pytest
from chat_local_server import LocalServer, SleepRecorder, collect, json_reply, sse_body, sse_reply

from agentflow import ModelRetry, TextDelta, UserMessage
from agentflow.http.retry import RetryPolicy
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.responses_model import OpenAIResponsesModel

HI = [UserMessage("hi")]
OK = {"id": "c", "choices": [{"index": 0, "message": {"content": "ok"}, "finish_reason": "stop"}]}
BUSY = {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}
STREAM_OK = sse_body(
    {"id": "s", "choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]}
)


def model_for(server: LocalServer, sleeps: Any, **options: Any) -> OpenAIChatModel:
    return OpenAIChatModel(
        base_url=server.base_url, model="m", retry=RetryPolicy(jitter=0), sleep=sleeps, **options
    )


async def test_an_async_on_retry_is_awaited_in_blocking_calls_and_streams(
    server: LocalServer, sleeps: SleepRecorder
) -> None:
    server.add(json_reply(BUSY, status=429), json_reply(OK))
    server.add(json_reply(BUSY, status=429), sse_reply([STREAM_OK]))
    heard: list[int] = []

    async def on_retry(retry: ModelRetry) -> None:
        heard.append(retry.attempt)

    async with model_for(server, sleeps, on_retry=on_retry) as model:
        assert (await model.chat(HI)).message.text == "ok"
        events, error = await collect(model)
    assert error is None
    assert TextDelta("ok") in events
    assert heard == [2, 2]


@pytest.mark.parametrize("kind", ["plain", "async"])
async def test_a_failing_on_retry_is_logged_and_the_call_goes_on(
    server: LocalServer, sleeps: SleepRecorder, caplog: pytest.LogCaptureFixture, kind: str
) -> None:
    server.add(json_reply(BUSY, status=429), json_reply(OK))
    server.add(json_reply(BUSY, status=429), sse_reply([STREAM_OK]))

    def broken(retry: ModelRetry) -> None:
        raise RuntimeError("observer bug")

    async def broken_async(retry: ModelRetry) -> None:
        raise RuntimeError("observer bug")

    callback = broken if kind == "plain" else broken_async
    with caplog.at_level(logging.ERROR, logger="agentflow.http"):
        async with model_for(server, sleeps, on_retry=callback) as model:
            assert (await model.chat(HI)).message.text == "ok"
            events, error = await collect(model)
    assert error is None
    assert TextDelta("ok") in events
    failures = [r for r in caplog.records if r.name == "agentflow.http" and r.levelno == logging.ERROR]
    assert len(failures) == 2
    assert "on_retry callback" in failures[0].getMessage()
    assert "the call goes on" in failures[0].getMessage()
    assert failures[0].exc_info is not None
    assert str(failures[0].exc_info[1]) == "observer bug"


@pytest.mark.parametrize("builder", [OpenAIChatModel, OpenAIResponsesModel])
@pytest.mark.parametrize("sleep", [time.sleep, functools.partial(time.sleep)], ids=["time.sleep", "partial"])
def test_a_blocking_sleep_is_refused_when_the_model_is_built(builder: Any, sleep: Any) -> None:
    with pytest.raises(TypeError, match=r"^sleep must be an async function of seconds .*use anyio\.sleep"):
        builder(base_url="http://127.0.0.1:8000", model="m", sleep=sleep)


async def test_a_plain_sleep_that_returns_no_awaitable_fails_clearly_at_the_first_retry(
    server: LocalServer,
) -> None:
    server.add(json_reply(BUSY, status=429), json_reply(OK))
    waited: list[float] = []

    def not_async(delay: float) -> None:
        waited.append(delay)

    async with model_for(server, not_async) as model:
        with pytest.raises(TypeError, match=r"sleep= must be an async function .* returned NoneType"):
            await model.chat(HI)
    assert waited == [0.5]


async def test_a_plain_function_returning_an_awaitable_is_a_fine_sleep(
    server: LocalServer, sleeps: SleepRecorder
) -> None:
    server.add(json_reply(BUSY, status=429), json_reply(OK))
    async with model_for(server, lambda delay: sleeps(delay)) as model:
        assert (await model.chat(HI)).message.text == "ok"
    assert sleeps.delays == [0.5]
