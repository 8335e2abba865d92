"""Error messages that say what happened and what to do next, against a real local server.

- A refused connection names the whole URL (the path shows a wrong ``base_url``) and asks whether the server
  runs and ``base_url`` is right.
- An HTML error page is shown by its ``<title>``, not pasted whole; a 404 for an unknown path says how to fix
  ``base_url`` (``/v1`` missing, an endpoint already in it); a 404 naming a model does not. ``body`` keeps the
  page verbatim.
- An error raised after retries says how many attempts were made; one raised at the first attempt does not.
"""

from __future__ import annotations

from typing import Any

import pytest
from chat_local_server import LocalServer, SleepRecorder, collect, free_port, json_reply, raw_reply

from agentflow import (
    BadRequestError,
    ModelConnectionError,
    NotFoundError,
    RateLimitError,
    ServerError,
    UserMessage,
)
from agentflow.http.retry import RetryPolicy
from agentflow.http.timeouts import Timeout
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.responses_model import OpenAIResponsesModel

HI = [UserMessage("hi")]
OK = {"id": "c", "choices": [{"index": 0, "message": {"content": "ok"}, "finish_reason": "stop"}]}
PAGE_404 = (
    "<!DOCTYPE html><html><head><title>404 Not Found</title></head><body><h1>Not Found</h1>"
    "<p>The requested URL was not found on this server.</p></body></html>"
)


def model_at(base_url: str, sleeps: SleepRecorder, **options: Any) -> OpenAIChatModel:
    options.setdefault("retry", RetryPolicy(jitter=0))
    return OpenAIChatModel(base_url=base_url, model="m", sleep=sleeps, **options)


async def test_a_refused_connection_names_the_url_and_what_to_check(sleeps: SleepRecorder) -> None:
    base = f"http://127.0.0.1:{free_port()}/v1"
    async with model_at(base, sleeps) as model:
        with pytest.raises(ModelConnectionError) as caught:
            await model.chat(HI)
    message = caught.value.message
    assert message.startswith(f"could not connect to {base}/chat/completions (")
    assert "is the server running, and is base_url's host and port right?" in message
    assert message.endswith("gave up after 3 attempts (retry=RetryPolicy(max_retries=2) sets how many)")


async def test_an_html_404_page_is_summarised_and_base_url_questioned(
    server: LocalServer, sleeps: SleepRecorder
) -> None:
    server.add(*[raw_reply(PAGE_404, status=404, content_type="text/html")] * 2)
    async with model_at(f"{server.base_url}/api", sleeps) as model:
        with pytest.raises(NotFoundError) as caught:
            await model.chat(HI)
        _, streamed = await collect(model)
    assert isinstance(streamed, NotFoundError)
    for error in (caught.value, streamed):
        assert error.message == (
            f"HTTP 404: an HTML page titled '404 Not Found' (POST {server.base_url}/api/chat/completions); "
            "the server has no /api/chat/completions: check base_url (OpenAI-compatible servers usually "
            f"serve under /v1: base_url='{server.base_url}/v1')"
        )
        assert error.body == PAGE_404  # the page itself, whole, for debugging


async def test_a_404_naming_the_model_does_not_question_base_url(
    server: LocalServer, sleeps: SleepRecorder
) -> None:
    body = {"error": {"message": "The model `gpt-9` does not exist", "code": "model_not_found"}}
    server.add(json_reply(body, status=404))
    async with model_at(server.base_url, sleeps) as model:
        with pytest.raises(NotFoundError) as caught:
            await model.chat(HI)
    assert caught.value.message == (
        f"HTTP 404: The model `gpt-9` does not exist (POST {server.base_url}/v1/chat/completions)"
    )


async def test_a_404_on_responses_says_the_server_may_lack_that_api(
    server: LocalServer, sleeps: SleepRecorder
) -> None:
    server.add(json_reply({"detail": "Not Found"}, status=404))  # FastAPI's (vLLM's) unknown route
    async with OpenAIResponsesModel(base_url=server.base_url, model="m", sleep=sleeps) as model:
        with pytest.raises(NotFoundError, match=r"or the server lacks the Responses API \(OpenAIChatModel"):
            await model.chat(HI)


@pytest.mark.parametrize(("status", "kind"), [(429, RateLimitError), (500, ServerError)])
async def test_an_error_after_the_retries_says_how_many_attempts_were_made(
    server: LocalServer, sleeps: SleepRecorder, status: int, kind: type[Exception]
) -> None:
    body = {"error": {"message": f"failure {status}"}}
    server.add(*[json_reply(body, status=status)] * 6)
    async with model_at(server.base_url, sleeps) as model:
        with pytest.raises(kind) as caught:
            await model.chat(HI)
        _, streamed = await collect(model)
    suffix = "; gave up after 3 attempts (retry=RetryPolicy(max_retries=2) sets how many)"
    assert (
        str(caught.value)
        == f"HTTP {status}: failure {status} (POST {server.base_url}/v1/chat/completions){suffix}"
    )
    assert streamed is not None
    assert streamed.message.endswith(suffix)
    assert len(server.requests) == 6


async def test_a_final_error_after_a_retry_says_so_and_a_first_one_adds_nothing(
    server: LocalServer, sleeps: SleepRecorder
) -> None:
    bad = {"error": {"message": "bad request"}}
    server.add(json_reply({"error": {"message": "busy"}}, status=503), json_reply(bad, status=400))
    server.add(json_reply(bad, status=400))
    async with model_at(server.base_url, sleeps) as model:
        with pytest.raises(BadRequestError) as second:
            await model.chat(HI)
        with pytest.raises(BadRequestError) as first:
            await model.chat(HI)
    assert second.value.message.endswith(
        "(POST " + server.base_url + "/v1/chat/completions); after 2 attempts"
    )
    assert first.value.message == f"HTTP 400: bad request (POST {server.base_url}/v1/chat/completions)"


async def test_a_retry_the_total_timeout_leaves_no_room_for_says_so(
    server: LocalServer, sleeps: SleepRecorder
) -> None:
    server.add(json_reply({"error": {"message": "busy"}}, status=503, headers={"Retry-After": "30"}))
    async with model_at(server.base_url, sleeps, timeout=Timeout(total=5)) as model:
        with pytest.raises(ServerError) as caught:
            await model.chat(HI)
    assert caught.value.message.endswith(
        "gave up after 1 attempt: the total timeout (Timeout(total=...)) leaves no time for the next one, "
        "30 s from now"
    )
