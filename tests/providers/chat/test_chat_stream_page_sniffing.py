"""A page answering a stream request under a label that says nothing (``text/plain``, no ``Content-Type``: a
captive portal, a proxy's login or error page) is told by its start, as a JSON body is: no line of an event
stream starts with ``<``. It is a ``ProtocolError`` sent once, showing the start of the page — not a stream
"cut off" before its end marker, which would be retried."""

from __future__ import annotations

import pytest
from aiohttp import web
from chat_local_server import LocalServer, Reply, SleepRecorder, collect, sse_body

from agentflow import ProtocolError
from agentflow.http.retry import RetryPolicy
from agentflow.providers.openai.chat_model import OpenAIChatModel

PAGE = (
    b"\n<!DOCTYPE html><html><head><title>Sign in to Wi-Fi</title></head><body>accept the terms</body></html>"
)


def page_reply(content_type: str) -> Reply:
    async def reply(request: web.Request, server: LocalServer) -> web.StreamResponse:
        return web.Response(body=PAGE, headers={"Content-Type": content_type})

    return reply


@pytest.mark.parametrize("content_type", ["text/plain", "application/octet-stream", ""])
async def test_a_page_under_any_label_is_a_protocol_error_sent_once(
    server: LocalServer, sleeps: SleepRecorder, content_type: str
) -> None:
    server.add(page_reply(content_type), page_reply(content_type), page_reply(content_type))
    model = OpenAIChatModel(base_url=server.base_url, model="m", retry=RetryPolicy(), sleep=sleeps)
    async with model:
        events, error = await collect(model)
    assert events == []
    assert type(error) is ProtocolError  # not a StreamCutOffError
    assert not error.retryable
    assert "expected an event stream" in error.message
    assert "<!DOCTYPE html><html><head><title>Sign in to Wi-Fi" in error.message
    assert error.body == PAGE.decode()
    assert (len(server.requests), sleeps.delays) == (1, [])


async def test_a_stream_under_the_same_labels_is_still_read(
    server: LocalServer, sleeps: SleepRecorder
) -> None:
    body = sse_body(
        {"id": "s", "choices": [{"index": 0, "delta": {"content": "<b>"}, "finish_reason": "stop"}]}
    )

    async def reply(request: web.Request, server: LocalServer) -> web.StreamResponse:
        return web.Response(body=body, content_type="text/plain")

    server.add(reply)
    model = OpenAIChatModel(base_url=server.base_url, model="m", retry=RetryPolicy.none(), sleep=sleeps)
    async with model:
        events, error = await collect(model)
    assert error is None
    assert events[-1].response.message.text == "<b>"  # type: ignore[attr-defined]


async def test_a_page_with_no_content_type_says_so(server: LocalServer, sleeps: SleepRecorder) -> None:
    server.add(page_reply(""))
    model = OpenAIChatModel(base_url=server.base_url, model="m", retry=RetryPolicy.none(), sleep=sleeps)
    async with model:
        _, error = await collect(model)
    assert isinstance(error, ProtocolError)
    assert "but got a page with no Content-Type" in error.message
