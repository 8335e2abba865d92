"""``OpenAIResponsesModel`` against ``ScriptedServer``'s ``/v1/responses``: the two must agree."""

from __future__ import annotations

import pytest
from responses_support import kinds

from agentflow.http.retry import RetryPolicy
from agentflow.http.timeouts import Timeout
from agentflow.model.errors import (
    IncompleteResponseError,
    ModelConnectionError,
    ModelError,
    ModelTimeoutError,
    ProtocolError,
    RateLimitError,
    ServerError,
    StreamCutOffError,
)
from agentflow.model.events import ToolCallReady
from agentflow.model.messages import ToolCall
from agentflow.model.response import FinishReason
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.testing.script import Fault, Reply
from agentflow.testing.scripted_server import ScriptedServer

FULL = Reply(
    text="Hello there world", reasoning="Because reasons", tool_calls=[("get", {"a": 1})], chunk_size=4
)


async def test_scripted_stream_and_body_decode_alike() -> None:
    async with (
        ScriptedServer([FULL, FULL]) as server,
        OpenAIResponsesModel(base_url=server.base_url, model="m") as model,
    ):
        async with model.create_stream("hi") as stream:
            events = [event async for event in stream]
        blocking = await model.create("hi")
    streamed = stream.response
    for response in (streamed, blocking):
        assert response.output_text == "Hello there world"
        assert response.reasoning == "Because reasons"
        assert [(c.name, c.arguments) for c in response.tool_calls] == [("get", '{"a":1}')]
    ready = [e for e in events if isinstance(e, ToolCallReady)]
    assert ready == [ToolCallReady(0, ToolCall(streamed.tool_calls[0].id, "get", '{"a":1}'))]
    assert kinds(events)[-2:] == ["usage_reported", "model_completed"]


async def test_scripted_length_is_an_incomplete_response() -> None:
    async with (
        ScriptedServer([Reply(text="cut", finish_reason="length")] * 2) as server,
        OpenAIResponsesModel(base_url=server.base_url, model="m") as model,
    ):
        with pytest.raises(IncompleteResponseError) as caught:
            await model.create_stream("hi").collect()
        assert caught.value.reason == "max_output_tokens"
        with pytest.raises(IncompleteResponseError):
            await model.create("hi")


async def test_scripted_faults_become_typed_errors() -> None:
    script = [Fault.stream_error(after_chunks=4, reply=FULL), Fault.truncate(after_chunks=6, reply=FULL)]
    async with (
        ScriptedServer(script) as server,
        OpenAIResponsesModel(base_url=server.base_url, model="m", retry=RetryPolicy.none()) as model,
    ):
        with pytest.raises(ServerError):
            await model.create_stream("hi").collect()
        with pytest.raises(StreamCutOffError) as caught:
            await model.stream([]).collect()
    assert caught.value.partial.finish_reason is FinishReason.OTHER


@pytest.mark.parametrize(
    ("fault", "stream_error", "blocking_error"),
    [
        (Fault.status(429), RateLimitError, RateLimitError),
        (Fault.status(503), ServerError, ServerError),
        (Fault.malformed_chunk(3, reply=FULL), ProtocolError, ProtocolError),
        (Fault.disconnect(5, reply=FULL), ModelConnectionError, ModelConnectionError),
        (Fault.truncate(5, reply=FULL), StreamCutOffError, ProtocolError),
        (Fault.stream_error(2, reply=FULL), ServerError, ServerError),
        (Fault.stall(3, reply=FULL), ModelTimeoutError, ModelTimeoutError),
    ],
    ids=["status_429", "status_503", "malformed", "disconnect", "truncate", "stream_error", "stall"],
)
async def test_every_scripted_fault_is_a_typed_error_streaming_and_blocking(
    fault: Fault, stream_error: type[ModelError], blocking_error: type[ModelError]
) -> None:
    async with (
        ScriptedServer([fault, fault]) as server,
        OpenAIResponsesModel(
            base_url=server.base_url, model="m", retry=RetryPolicy.none(), timeout=Timeout(read=0.05)
        ) as model,
    ):
        with pytest.raises(stream_error):
            await model.create_stream("hi").collect()
        with pytest.raises(blocking_error):
            await model.create("hi")
        assert [request.stream for request in server.requests] == [True, False]
