"""The shared ``OpenAIHttpClient``'s retry rules that both models rely on, against a real local server.

- A 200 body that reports a retryable error (Chat: an error object; Responses: ``status: "failed"`` with a
  ``server_error``) is retried by the blocking calls exactly like an HTTP 5xx, because the body is decoded
  inside the retry loop; a non-retryable one is raised at once.
- A stream cut off (clean end or reset) before any event was emitted is retried; once something was
  emitted it never is.
"""

from __future__ import annotations

from typing import Any

import pytest
from chat_local_server import LocalServer, SleepRecorder, collect, json_reply, sse_body, sse_reply

from agentflow import (
    BadRequestError,
    ModelCompleted,
    ModelRetry,
    ServerError,
    StreamCutOffError,
    TextDelta,
    UserMessage,
)
from agentflow.http.retry import RetryPolicy
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.responses_model import OpenAIResponsesModel

HI = [UserMessage("hi")]
OK = {"id": "c", "choices": [{"index": 0, "message": {"content": "ok"}, "finish_reason": "stop"}]}
ROLE_ONLY = {"id": "s", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}
SERVER_ERROR = {"error": {"message": "The server had an error", "type": "server_error", "code": 502}}


def text(content: str, finish: str | None = None) -> dict[str, Any]:
    return {"id": "s", "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": finish}]}


def response(status: str, **fields: Any) -> dict[str, Any]:
    output = [
        {
            "type": "message",
            "id": "msg_1",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "done", "annotations": []}],
        }
    ]
    return {"id": "resp_1", "object": "response", "status": status, "output": output, **fields}


FAILED = response(
    "failed", output=[], error={"code": "server_error", "message": "The model failed to generate"}
)


def chat_model(server: LocalServer, sleeps: SleepRecorder, retries: list[ModelRetry]) -> OpenAIChatModel:
    return OpenAIChatModel(
        base_url=server.base_url,
        model="m",
        retry=RetryPolicy(jitter=0),
        sleep=sleeps,
        on_retry=retries.append,
    )


async def test_chat_200_error_body_is_retried_like_a_5xx(server: LocalServer, sleeps: SleepRecorder) -> None:
    server.add(json_reply(SERVER_ERROR), json_reply(OK))
    retries: list[ModelRetry] = []
    async with chat_model(server, sleeps, retries) as model:
        assert (await model.chat(HI)).message.text == "ok"
    assert len(server.requests) == 2
    assert sleeps.delays == [0.5]
    assert [(r.attempt, r.reason) for r in retries] == [(2, "HTTP 502: The server had an error")]


async def test_chat_200_body_with_a_final_error_is_raised_at_once(
    server: LocalServer, sleeps: SleepRecorder
) -> None:
    bad = {"error": {"message": "bad tool schema", "type": "invalid_request_error", "code": "400"}}
    server.add(json_reply(bad), json_reply(OK))
    async with chat_model(server, sleeps, []) as model:
        with pytest.raises(BadRequestError, match="bad tool schema"):
            await model.chat(HI)
    assert len(server.requests) == 1
    assert sleeps.delays == []


async def test_responses_failed_with_server_error_is_retried_by_create_and_chat(
    server: LocalServer, sleeps: SleepRecorder
) -> None:
    server.add(json_reply(FAILED), json_reply(response("completed")))
    server.add(json_reply(FAILED), json_reply(FAILED), json_reply(response("completed")))
    retries: list[ModelRetry] = []
    async with OpenAIResponsesModel(
        base_url=server.base_url,
        model="m",
        retry=RetryPolicy(jitter=0),
        sleep=sleeps,
        on_retry=retries.append,
    ) as model:
        assert (await model.create("hi")).output_text == "done"
        assert (await model.chat(HI)).message.text == "done"
    assert len(server.requests) == 5
    assert sleeps.delays == [0.5, 0.5, 1.0]
    assert {r.reason for r in retries} == {"The model failed to generate"}


async def test_responses_failed_without_retries_left_raises_the_typed_error(
    server: LocalServer, sleeps: SleepRecorder
) -> None:
    server.add(*[json_reply(FAILED)] * 3)
    async with OpenAIResponsesModel(
        base_url=server.base_url, model="m", retry=RetryPolicy(jitter=0), sleep=sleeps
    ) as model:
        with pytest.raises(ServerError, match="failed to generate"):
            await model.create("hi")
    assert len(server.requests) == 3


@pytest.mark.parametrize("end", ["eof", "reset"])
async def test_stream_cut_before_any_event_is_retried(
    server: LocalServer, sleeps: SleepRecorder, end: str
) -> None:
    # The first chunk carries only the role: it yields no event, so the cut comes before anything emitted.
    server.add(
        sse_reply([sse_body(ROLE_ONLY, done=False)], end=end),
        sse_reply([sse_body(ROLE_ONLY, text("fine", "stop"))]),
    )
    retries: list[ModelRetry] = []
    async with chat_model(server, sleeps, retries) as model:
        events, error = await collect(model)
    assert error is None
    assert isinstance(events[0], ModelRetry)
    assert events[0].attempt == 2
    assert events[1] == TextDelta("fine")
    assert isinstance(events[-1], ModelCompleted)
    assert len(server.requests) == 2
    assert sleeps.delays == [0.5]
    assert retries == [events[0]]  # announced as an event, and to on_retry like a blocking call's retries


async def test_stream_cut_before_any_event_gives_up_after_the_retries(
    server: LocalServer, sleeps: SleepRecorder
) -> None:
    server.add(*[sse_reply([sse_body(ROLE_ONLY, done=False)])] * 3)
    async with chat_model(server, sleeps, []) as model:
        events, error = await collect(model)
    assert [type(e) for e in events] == [ModelRetry, ModelRetry]
    assert isinstance(error, StreamCutOffError)
    assert len(server.requests) == 3


async def test_stream_cut_after_an_event_is_never_retried(server: LocalServer, sleeps: SleepRecorder) -> None:
    server.add(sse_reply([sse_body(text("Hel"), done=False)]), sse_reply([sse_body(text("never", "stop"))]))
    async with chat_model(server, sleeps, []) as model:
        events, error = await collect(model)
    assert events == [TextDelta("Hel")]
    assert isinstance(error, StreamCutOffError)
    assert error.partial.message.text == "Hel"
    assert len(server.requests) == 1
    assert sleeps.delays == []
