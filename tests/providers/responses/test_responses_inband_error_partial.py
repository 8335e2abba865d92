"""An in-band error after part of the answer (an ``error`` event, ``response.failed``) carries that part as
its ``partial``, as on Chat Completions and as a cut-off stream does: the text, reasoning and finished calls
aggregated so far, with status ``failed`` (never ``completed``). An error before anything was emitted
carries none. The decoder's ``finish`` used to give nothing once it had seen the error."""

from __future__ import annotations

from typing import Any

import pytest
from responses_support import LocalServer, Reply, run_decoder, sse_body

from agentflow.model.errors import ModelError, RateLimitError, ServerError, StreamCutOffError
from agentflow.model.messages import UserMessage
from agentflow.model.response import TokenUsage
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.providers.openai.responses_stream import ResponsesStreamDecoder

CREATED = {
    "type": "response.created",
    "response": {"id": "resp_1", "model": "gpt-5", "status": "in_progress", "output": []},
}
MESSAGE = {"id": "msg_1", "type": "message", "role": "assistant", "content": []}
ADDED = {"type": "response.output_item.added", "output_index": 0, "item": MESSAGE}


def _delta(text: str) -> dict[str, Any]:
    return {"type": "response.output_text.delta", "output_index": 0, "item_id": "msg_1", "delta": text}


ERROR_EVENT = {"type": "error", "code": "server_error", "message": "The server had an error."}
FAILED = {
    "type": "response.failed",
    "response": {
        "id": "resp_1",
        "model": "gpt-5",
        "status": "failed",
        "output": [],
        "error": {"code": "rate_limit_exceeded", "message": "Slow down."},
        "usage": {"input_tokens": 7, "output_tokens": 3},
    },
}


@pytest.mark.parametrize(("terminal", "error_type"), [(ERROR_EVENT, ServerError), (FAILED, RateLimitError)])
async def test_an_in_band_error_after_some_text_carries_it(
    server: LocalServer, model: OpenAIResponsesModel, terminal: dict[str, Any], error_type: type[ModelError]
) -> None:
    server.queue(Reply.sse(sse_body(CREATED, ADDED, _delta("The answer "), _delta("is"), terminal)))
    with pytest.raises(error_type) as caught:
        await model.create_stream("hi").collect()
    partial = caught.value.partial
    assert partial is not None
    assert (partial.output_text, partial.status, partial.id) == ("The answer is", "failed", "resp_1")
    assert partial.output[0]["content"] == [{"type": "output_text", "text": "The answer is"}]
    if terminal is FAILED:
        assert partial.usage == TokenUsage(7, 3, 10)  # what the failed response was billed


async def test_the_chat_view_gets_a_chat_response_partial(
    server: LocalServer, model: OpenAIResponsesModel
) -> None:
    server.queue(Reply.sse(sse_body(CREATED, ADDED, _delta("Half"), ERROR_EVENT)))
    with pytest.raises(ServerError) as caught:
        await model.stream([UserMessage("hi")]).collect()
    assert caught.value.partial.message.text == "Half"


async def test_an_in_band_error_before_any_answer_carries_none(
    server: LocalServer, model: OpenAIResponsesModel
) -> None:
    server.queue(Reply.sse(sse_body(CREATED, {**ERROR_EVENT, "code": "invalid_prompt"})))
    with pytest.raises(ModelError) as caught:
        await model.create_stream("hi").collect()
    assert caught.value.partial is None


def test_the_decoder_gives_what_it_aggregated_after_an_in_band_error() -> None:
    decoder = ResponsesStreamDecoder.for_responses()
    _, error = run_decoder(sse_body(CREATED, ADDED, _delta("Some"), ERROR_EVENT), decoder)
    assert isinstance(error, ServerError)
    assert decoder.done
    with pytest.raises(StreamCutOffError, match=r"failed before response.completed") as caught:
        decoder.finish()
    assert caught.value.partial.output_text == "Some"
    assert caught.value.partial.status == "failed"
    assert decoder.finish() == []  # once
