"""A stream whose body fails once its answer has begun — connection lost, read timeout — carries what had
arrived as the error's ``partial``, as a cut-off stream (``StreamCutOffError``) does: the response the decoder
had aggregated, on both protocols. Errors before the answer began carry none."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from agentflow import (
    ModelConnectionError,
    ModelError,
    ModelTimeoutError,
    ServerError,
    StreamCutOffError,
    TextDelta,
    UserMessage,
)
from agentflow.http.retry import RetryPolicy
from agentflow.model.events import ModelEvent
from agentflow.model.response import ChatResponse, FinishReason
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.testing import Fault, Reply, ScriptedServer

HI = [UserMessage("hi")]
ANSWER = Reply(text="one two three four five six", usage=(7, 6))
# Events before the fault: the role chunk and two words (Chat); created, in_progress, the item, its content
# part and two words (Responses).
AFTER_TWO_WORDS = {"chat": 3, "responses": 6}
MODELS = {"chat": OpenAIChatModel, "responses": OpenAIResponsesModel}


async def failed_stream(
    server: ScriptedServer, api: str, read_timeout: float = 60
) -> tuple[list[ModelEvent], ModelError]:
    model = MODELS[api](
        base_url=server.base_url, model="m", read_timeout=read_timeout, retry=RetryPolicy.none()
    )
    events: list[ModelEvent] = []

    async def consume() -> None:
        async with model.stream(HI) as stream:
            async for event in stream:
                events.append(event)

    async with model:
        with pytest.raises(ModelError) as failure:
            await consume()
    return events, failure.value


def streamed_text(events: list[ModelEvent]) -> str:
    return "".join(event.text for event in events if isinstance(event, TextDelta))


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize(
    ("fault", "error_type"),
    [
        (Fault.disconnect, ModelConnectionError),
        (Fault.stall, ModelTimeoutError),
        (Fault.truncate, StreamCutOffError),
    ],
    ids=["connection lost", "read timeout", "cut off"],
)
async def test_a_stream_failing_mid_answer_carries_what_arrived(
    api: str, fault: Callable[..., Fault], error_type: type[ModelError]
) -> None:
    async with ScriptedServer([fault(after_chunks=AFTER_TWO_WORDS[api], reply=ANSWER)]) as server:
        events, error = await failed_stream(server, api, read_timeout=0.3)
    assert type(error) is error_type
    assert streamed_text(events) == "one two"
    assert isinstance(error.partial, ChatResponse)
    assert error.partial.message.text == "one two"


async def test_a_chat_stream_lost_after_its_finish_reason_carries_the_whole_answer() -> None:
    # Everything but [DONE]: the role chunk, six words, the finish chunk and the usage chunk.
    async with ScriptedServer([Fault.disconnect(after_chunks=9, reply=ANSWER)]) as server:
        _events, error = await failed_stream(server, "chat")
    assert isinstance(error, ModelConnectionError)
    assert isinstance(error.partial, ChatResponse)
    assert error.partial.message.text == "one two three four five six"
    assert error.partial.finish_reason is FinishReason.STOP
    assert error.partial.usage is not None
    assert error.partial.usage.total_tokens == 13


async def test_an_error_before_the_answer_carries_no_partial() -> None:
    async with ScriptedServer([Fault.status(503)]) as server:
        events, error = await failed_stream(server, "chat")
    assert events == []
    assert isinstance(error, ServerError)
    assert error.partial is None
