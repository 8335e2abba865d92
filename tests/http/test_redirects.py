"""Redirects are not followed: a 301/302/303 would turn the POST into a GET (the user saw a 405 from wherever
it led), and a 307/308 to another host would drop the ``Authorization`` header. A 3xx is a ``RedirectError``,
not retried, that names where the server points, so the user can set ``base_url`` there."""

from __future__ import annotations

import pytest
from raw_http_server import RawHttpServer, RawReply, RawRequest, http_response

from agentflow import UserMessage
from agentflow.http.retry import RetryPolicy
from agentflow.model.errors import RedirectError
from agentflow.providers.openai.chat_model import OpenAIChatModel

HI = [UserMessage("hi")]


def redirecting(status: int, location: str | None) -> RawHttpServer:
    async def handler(_request: RawRequest) -> RawReply:
        headers = {} if location is None else {"Location": location}
        return RawReply(http_response(status, b"", headers))

    return RawHttpServer(handler)


async def call(model: OpenAIChatModel, stream: bool) -> None:
    if stream:
        await model.stream(HI).collect()
    else:
        await model.chat(HI)


@pytest.mark.parametrize("stream", [False, True], ids=["blocking", "stream"])
@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
async def test_a_redirect_is_a_redirect_error_naming_where_it_points(status: int, stream: bool) -> None:
    async with RawHttpServer() as target:
        location = f"{target.url}/v1/chat/completions?api-version=1"
        async with redirecting(status, location) as server:
            model = OpenAIChatModel(
                base_url=server.url, model="m", api_key="sk-x", retry=RetryPolicy(jitter=0)
            )
            async with model:
                with pytest.raises(RedirectError) as failure:
                    await call(model, stream)
    error = failure.value
    named = f"{target.url}/v1/chat/completions"  # the query is left out, as from every URL in a message
    assert str(error) == (
        f"HTTP {status}: the server redirected the request to {named}, and redirects are not followed (the "
        "POST would turn into a GET, or lose its Authorization header): set base_url to the address it names"
    )
    assert (error.status, error.location, error.retryable) == (status, named, False)
    assert len(server.requests) == 1  # not retried
    assert target.requests == []  # not followed


async def test_a_relative_location_is_named_in_full() -> None:
    async with (
        redirecting(308, "/api/v1/chat/completions") as server,
        OpenAIChatModel(base_url=server.url, model="m") as model,
    ):
        with pytest.raises(RedirectError) as failure:
            await model.chat(HI)
    assert failure.value.location == f"{server.url}/api/v1/chat/completions"


async def test_a_redirect_without_a_location_says_so() -> None:
    async with redirecting(302, None) as server, OpenAIChatModel(base_url=server.url, model="m") as model:
        with pytest.raises(
            RedirectError, match="HTTP 302: the server answered with a redirect that names no"
        ):
            await model.chat(HI)
    assert len(server.requests) == 1
