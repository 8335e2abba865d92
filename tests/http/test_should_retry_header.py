"""``x-should-retry`` (OpenAI's header) decides before the status, as in the openai SDK: ``true`` retries
even a 400 or a 404, ``false`` stops a retry of a 5xx — and then the error says ``retryable=False``."""

from __future__ import annotations

import pytest
from raw_http_server import RawHttpServer, RawReply, RawRequest, answer_ok, json_answer

from agentflow import ModelError, ModelRetry, UserMessage
from agentflow.providers.openai.chat_model import OpenAIChatModel

HI = [UserMessage("hi")]


def first_then_ok(status: int, should_retry: str) -> RawReply:
    error = {"error": {"message": "try again"}}
    return RawReply(json_answer(error, status, {"x-should-retry": should_retry}))


@pytest.mark.parametrize("status", [400, 404, 422])
async def test_true_retries_a_status_that_is_never_retried_otherwise(status: int) -> None:
    async def reply(request: RawRequest) -> RawReply:
        return first_then_ok(status, "true") if len(server.requests) == 1 else await answer_ok(request)

    retries: list[ModelRetry] = []

    async def sleep(_seconds: float) -> None:
        pass

    async with RawHttpServer(reply) as server:
        model = OpenAIChatModel(base_url=server.url, model="m", sleep=sleep, on_retry=retries.append)
        async with model:
            assert (await model.chat(HI)).message.text == "ok"
    assert len(server.requests) == 2
    assert [retry.attempt for retry in retries] == [2]


@pytest.mark.parametrize("value", ["false", "False"])
async def test_false_stops_the_retry_of_a_server_error_and_says_so(value: str) -> None:
    async def reply(_request: RawRequest) -> RawReply:
        return first_then_ok(500, value)

    async with RawHttpServer(reply) as server, OpenAIChatModel(base_url=server.url, model="m") as model:
        with pytest.raises(ModelError, match="HTTP 500") as caught:
            await model.chat(HI)
    assert not caught.value.retryable
    assert len(server.requests) == 1
