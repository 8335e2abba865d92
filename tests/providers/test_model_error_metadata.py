"""What a service needs from a failed model call: ``error.request_id`` (for the provider's support, and the
logs) and ``error.retry_after`` (to pass on in its own ``Retry-After``), including for failures that come
after a stream began or in a 200 body, whose headers are the response's."""

from __future__ import annotations

import pytest

from agentflow import UserMessage
from agentflow.http.retry import RetryPolicy
from agentflow.model.errors import (
    ModelConnectionError,
    ModelError,
    RateLimitError,
    ServerError,
)
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.testing import Fault, Reply, ScriptedServer

HI = [UserMessage("hi")]
ID = {"x-request-id": "req_7f3a"}
NO_RETRIES = RetryPolicy(max_retries=0)


async def failure(fault: Fault, *, stream: bool, responses: bool = False) -> ModelError:
    async with ScriptedServer([fault]) as server:
        kind = OpenAIResponsesModel if responses else OpenAIChatModel
        model = kind(base_url=server.base_url, api_key="sk-test", model="m", retry=NO_RETRIES)
        with pytest.raises(ModelError) as raised:
            await (model.stream(HI).collect() if stream else model.chat(HI))
        await model.aclose()
    return raised.value


@pytest.mark.parametrize("stream", [False, True], ids=["blocking", "stream"])
async def test_a_429_says_how_long_to_wait_and_which_request_it_was(stream: bool) -> None:
    error = await failure(Fault.status(429, headers={**ID, "retry-after": "20"}), stream=stream)
    assert isinstance(error, RateLimitError)
    assert (error.request_id, error.retry_after) == ("req_7f3a", 20.0)


async def test_openai_s_milliseconds_win_over_retry_after() -> None:
    error = await failure(
        Fault.status(503, headers={"retry-after-ms": "1500", "retry-after": "2"}), stream=False
    )
    assert error.retry_after == 1.5


def test_azure_s_request_id_is_found_and_an_error_without_headers_has_neither() -> None:
    azure = ServerError("HTTP 500", status=500, headers={"Apim-Request-Id": "az-1", "Retry-After": "3"})
    assert (azure.request_id, azure.retry_after) == ("az-1", 3.0)
    bare = ModelConnectionError("the connection was refused")
    assert (bare.request_id, bare.retry_after) == (None, None)


@pytest.mark.parametrize("responses", [False, True], ids=["chat", "responses"])
async def test_a_stream_cut_after_it_began_keeps_the_stream_s_request_id(responses: bool) -> None:
    reply = Reply(text="a long answer, cut halfway", chunk_size=3, headers=ID)
    error = await failure(Fault.disconnect(2, reply=reply), stream=True, responses=responses)
    assert isinstance(error, ModelConnectionError)
    assert error.request_id == "req_7f3a"


@pytest.mark.parametrize("responses", [False, True], ids=["chat", "responses"])
async def test_an_error_the_server_reports_in_the_stream_or_a_200_body_keeps_the_request_id(
    responses: bool,
) -> None:
    for stream in (True, False):
        reply = Reply(text="an answer the server gives up on", chunk_size=3, headers=ID)
        error = await failure(Fault.stream_error(2, reply=reply), stream=stream, responses=responses)
        assert isinstance(error, ServerError), stream
        assert error.request_id == "req_7f3a", stream
