"""A blocking call answered with a response that is still ``queued`` or ``in_progress`` (``background: true``)
has no answer yet: it is a typed error, never an empty success, and it is not retried (sending again would
start another background response)."""

from __future__ import annotations

import pytest
from responses_support import LocalServer, Reply, Sleeps, run_decoder, sse_body

from agentflow.model.errors import ModelError, ResponseNotFinishedError
from agentflow.model.events import ModelCompleted
from agentflow.model.messages import UserMessage
from agentflow.model.response import ChatResponse
from agentflow.providers.openai.responses_codec import check_response, decode_response
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.providers.openai.responses_types import ResponsesResponse


def background(status: str) -> Reply:
    return Reply.json(
        {
            "id": "resp_bg",
            "object": "response",
            "status": status,
            "background": True,
            "model": "gpt-5",
            "output": [],
            "usage": None,
        }
    )


@pytest.mark.parametrize("status", ["queued", "in_progress"])
async def test_create_raises_for_a_response_that_is_not_finished(
    server: LocalServer, model: OpenAIResponsesModel, sleeps: Sleeps, status: str
) -> None:
    server.queue(background(status))
    with pytest.raises(ResponseNotFinishedError) as caught:
        await model.create("hi", extra_body={"background": True})
    error = caught.value
    assert (error.response_id, error.response_status) == ("resp_bg", status)
    assert f"is {status}, not finished" in error.message
    assert "background" in error.message
    assert "GET /responses/resp_bg" in error.message
    assert not error.retryable
    assert isinstance(error.partial, ResponsesResponse)
    assert len(server.requests) == 1
    assert sleeps.delays == []


async def test_chat_raises_it_too_with_a_chat_response_as_partial(
    server: LocalServer, model: OpenAIResponsesModel
) -> None:
    server.queue(background("queued"))
    with pytest.raises(ResponseNotFinishedError) as caught:
        await model.chat([UserMessage("hi")])
    assert isinstance(caught.value.partial, ChatResponse)
    assert isinstance(caught.value, ModelError)


def test_a_stream_that_completed_is_not_read_as_unfinished_from_a_stale_status() -> None:
    stale = {"id": "resp_1", "status": "in_progress", "output": [], "usage": None}
    completed = {"type": "response.completed", "response": stale}
    events, error = run_decoder(sse_body({"type": "response.created", "response": stale}, completed))
    assert error is None
    assert isinstance(events[-1], ModelCompleted)
    assert events[-1].response.status == "completed"


def test_a_finished_response_passes_the_check() -> None:
    done = decode_response({"id": "r", "status": "completed", "output": []})
    assert check_response(done) is done
