"""A base URL may carry a credential in its query (Azure APIM's ``?subscription-key=…``) or user info. aiohttp
writes the full request URL into its exceptions' text (an answer that is not HTTP, a body that cannot be
decoded) and the request headers, API key included, into ``ClientResponseError.request_info``. None of it
may reach the error's message, its ``__cause__`` (its text, its repr, a printed traceback), the retry log
line or the ``ModelRetry`` event."""

from __future__ import annotations

import logging
import traceback

import pytest
from raw_http_server import RawHttpServer, RawReply, RawRequest, answer_ok

from agentflow import ModelConnectionError, ModelRetry, UserMessage
from agentflow.http.retry import RetryPolicy
from agentflow.providers.openai.chat_model import OpenAIChatModel

HI = [UserMessage("hi")]
KEY = "sk-test-0123456789abcdef"
QUERY_SECRET = "Q-SECRET-4242"
PASSWORD = "PW-SECRET-77"


def everything_shown(error: BaseException) -> str:
    """What an application may print or log about ``error``: its text, its traceback with the chained
    cause, and the cause's own repr (which shows ``request_info``, headers included)."""
    cause = error.__cause__
    return "\n".join(
        [str(error), repr(error), "".join(traceback.format_exception(error)), repr(cause), str(cause)]
    )


async def not_http_first(request: RawRequest) -> RawReply:
    if request.connection == 1:
        return RawReply(b"garbage\r\n\r\n", close=True)
    return await answer_ok(request)


@pytest.mark.parametrize(
    "answer",
    [b"garbage\r\n\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n"],
    ids=["bad status line", "bad header"],
)
async def test_an_answer_that_is_not_http_shows_no_query_and_no_key(answer: bytes) -> None:
    async def reply(_request: RawRequest) -> RawReply:
        return RawReply(answer, close=True)

    async with RawHttpServer(reply) as server:
        model = OpenAIChatModel(
            base_url=f"{server.url}/v1?subscription-key={QUERY_SECRET}",
            api_key=KEY,
            model="m",
            retry=RetryPolicy.none(),
        )
        async with model:
            with pytest.raises(ModelConnectionError, match="not valid HTTP") as caught:
                await model.chat(HI)
    shown = everything_shown(caught.value)
    assert QUERY_SECRET not in shown
    assert KEY not in shown
    assert "/v1/chat/completions" in caught.value.message  # still says where


async def test_user_info_in_the_base_url_is_not_shown_either() -> None:
    async def reply(_request: RawRequest) -> RawReply:
        return RawReply(b"garbage\r\n\r\n", close=True)

    async with RawHttpServer(reply) as server:
        base_url = server.url.replace("http://", f"http://user:{PASSWORD}@") + f"/v1?key={QUERY_SECRET}"
        model = OpenAIChatModel(base_url=base_url, api_key="", model="m", retry=RetryPolicy.none())
        async with model:
            with pytest.raises(ModelConnectionError) as caught:
                await model.chat(HI)
    shown = everything_shown(caught.value)
    assert PASSWORD not in shown
    assert QUERY_SECRET not in shown


async def test_the_retry_log_line_and_event_show_no_query(caplog: pytest.LogCaptureFixture) -> None:
    retries: list[ModelRetry] = []

    async def no_wait(_seconds: float) -> None:
        pass

    async with RawHttpServer(not_http_first) as server:
        model = OpenAIChatModel(
            base_url=f"{server.url}/v1?subscription-key={QUERY_SECRET}",
            api_key=KEY,
            model="m",
            sleep=no_wait,
            on_retry=retries.append,
        )
        with caplog.at_level(logging.DEBUG, logger="agentflow"):
            async with model:
                assert (await model.chat(HI)).message.text == "ok"
    [retry] = retries
    assert "not valid HTTP" in retry.reason
    assert QUERY_SECRET not in retry.reason
    assert "retrying POST" in caplog.text
    assert QUERY_SECRET not in caplog.text
    assert KEY not in caplog.text
