"""What a 200 answer to a stream request may be labelled. An HTML or XML page (a captive portal, a proxy's
login page) is a ``ProtocolError`` at once — not parsed as SSE into a retried "cut off" stream — naming the
type and the start of the page. Everything else is read as SSE: real streams come mislabelled (``text/plain``,
``application/octet-stream``, no ``Content-Type`` at all) through some servers and proxies."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from chat_local_server import LocalServer, SleepRecorder, collect, raw_reply, sse_body, sse_reply

from agentflow import ModelCompleted, ProtocolError, TextDelta, UserMessage
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.responses_model import OpenAIResponsesModel

PAGE = "<html><head><title>Sign in</title></head>\n<body>  please   log in to continue</body></html>"
STREAM = sse_body(
    {"id": "s", "choices": [{"index": 0, "delta": {"content": "hello"}, "finish_reason": None}]},
    {"id": "s", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
)


def model_for(base_url: str, sleeps: SleepRecorder) -> OpenAIChatModel:
    return OpenAIChatModel(base_url=base_url, model="m", api_key="sk-secret", sleep=sleeps)


@pytest.mark.parametrize(
    "content_type",
    [
        "text/html",
        "text/html; charset=utf-8",
        "TEXT/HTML;charset=ISO-8859-1",
        "application/xhtml+xml",
        "text/xml",
        "application/xml; charset=utf-8",
    ],
)
async def test_a_page_answering_a_stream_is_a_protocol_error_sent_once(
    server: LocalServer, sleeps: SleepRecorder, content_type: str
) -> None:
    server.add(raw_reply(PAGE, content_type=content_type), raw_reply(PAGE, content_type=content_type))
    async with model_for(server.base_url, sleeps) as model:
        events, error = await collect(model)
    assert events == []
    assert type(error) is ProtocolError  # not a StreamCutOffError, which is retried
    assert not error.retryable
    assert error.status == 200
    assert f"but got a {content_type!r} page" in error.message
    assert "'<html><head><title>Sign in</title></head> <body> please log in to continue</body></html>'" in (
        error.message
    )
    assert error.body == PAGE
    assert len(server.requests) == 1
    assert sleeps.delays == []


async def test_the_excerpt_of_a_large_page_is_bounded(server: LocalServer, sleeps: SleepRecorder) -> None:
    page = "<html>" + "x" * (4 * 1024 * 1024) + "</html>"
    server.add(raw_reply(page, content_type="text/html"))
    async with model_for(server.base_url, sleeps) as model:
        _, error = await collect(model)
    assert isinstance(error, ProtocolError)
    assert error.body is not None
    assert len(error.body) == 4096  # read no further than that
    assert error.message.endswith("'<html>" + "x" * 194 + "…'")


async def test_the_responses_model_refuses_a_page_too(server: LocalServer, sleeps: SleepRecorder) -> None:
    server.add(raw_reply(PAGE, content_type="text/html"))
    model = OpenAIResponsesModel(base_url=server.base_url, model="m", sleep=sleeps)
    async with model:
        with pytest.raises(ProtocolError, match=r"but got a 'text/html' page .*please log in") as caught:
            await model.stream([UserMessage("hi")]).collect()
    assert type(caught.value) is ProtocolError
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "content_type",
    ["text/event-stream", "text/event-stream; charset=utf-8", "text/plain", "application/octet-stream"],
)
async def test_a_stream_is_read_whatever_else_it_is_labelled(
    server: LocalServer, sleeps: SleepRecorder, content_type: str
) -> None:
    server.add(sse_reply([STREAM], content_type=content_type))
    async with model_for(server.base_url, sleeps) as model:
        events, error = await collect(model)
    assert error is None
    assert events[0] == TextDelta("hello")
    assert isinstance(events[-1], ModelCompleted)


@pytest.fixture
async def unlabelled_stream_url() -> AsyncIterator[str]:
    """A server answering every request with an SSE body and no ``Content-Type`` header (aiohttp's server
    always adds one, hence raw HTTP)."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")  # the request's headers; its body is never looked at
        head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(STREAM)}\r\nConnection: close\r\n\r\n"
        writer.write(head.encode() + STREAM)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield f"http://127.0.0.1:{port}"


async def test_a_stream_without_a_content_type_is_read(
    unlabelled_stream_url: str, sleeps: SleepRecorder
) -> None:
    async with model_for(unlabelled_stream_url, sleeps) as model:
        events, error = await collect(model)
    assert error is None, error
    assert [e for e in events if isinstance(e, TextDelta)] == [TextDelta("hello")]
