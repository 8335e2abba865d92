"""``AiohttpTransport`` stream timeouts against a real local server: the wait for response headers is bounded
by ``read`` from the moment the request is sent — not while the call waits for a free pooled connection —
and once the answer began only the time spent waiting in ``next_chunk`` counts.

These tests are about elapsed time, so they let short real intervals pass (a few tenths of a second); the
order of events is driven by ``anyio.Event``\\ s, never by sleeping.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import anyio
import pytest
from aiohttp import web
from local_app import serving

from agentflow import ModelCompleted, ModelTimeoutError, TextDelta, UserMessage
from agentflow.http.retry import RetryPolicy
from agentflow.http.timeouts import Timeout
from agentflow.http.transport import AiohttpTransport
from agentflow.providers.openai.chat_model import OpenAIChatModel

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
LIMITS = Timeout(connect=0.05, read=0.1)
# Longer than connect + read together: what a queued call used to be allowed before it failed.
QUEUED = 0.3


def delta(text: str) -> bytes:
    return b'data: {"choices":[{"index":0,"delta":{"content":"' + text.encode() + b'"}}]}\n\n'


END = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'


class Server:
    """A local server whose handlers the test queues; it counts the requests it received."""

    def __init__(self) -> None:
        self.handlers: list[Handler] = []
        self.received = 0
        self.base_url = ""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        await request.read()
        self.received += 1
        return await self.handlers.pop(0)(request)


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    local = Server()
    async with serving("/v1/chat/completions", local.handle) as origin:
        local.base_url = origin
        yield local


def stream_reply(
    *parts: bytes, before: anyio.Event | None = None, after: anyio.Event | None = None
) -> Handler:
    """Headers, then ``parts``; ``before`` gates the parts, ``after`` the end of the stream."""

    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        if before is not None:
            await before.wait()
        for part in parts:
            await response.write(part)
        if after is not None:
            await after.wait()
        await response.write(END)
        await response.write_eof()
        return response

    return handler


async def test_waiting_for_a_pooled_connection_is_not_a_read_timeout(server: Server) -> None:
    release_first = anyio.Event()
    server.handlers += [stream_reply(delta("one"), after=release_first), stream_reply(delta("two"))]
    transport = AiohttpTransport(limit=1)  # stands for more than the default 100 streams at once
    model = OpenAIChatModel(
        base_url=server.base_url, model="m", transport=transport, timeout=LIMITS, retry=RetryPolicy.none()
    )
    second: list[object] = []

    async def queued_stream() -> None:
        second.append(await model.stream([UserMessage("b")]).collect())

    try:
        async with model.stream([UserMessage("a")]) as first, anyio.create_task_group() as group:
            assert await first.__anext__() == TextDelta("one")  # the only connection is taken
            group.start_soon(queued_stream)
            await anyio.sleep(QUEUED)  # the second call waits for the connection this long
            assert server.received == 1  # the server has not seen it yet: nothing to time out
            release_first.set()
            assert [type(e) for e in [event async for event in first]][-1] is ModelCompleted
    finally:
        release_first.set()  # lets the server shut down when the test failed
        await transport.aclose()
    assert len(second) == 1
    assert server.received == 2


async def test_a_stalled_server_still_times_out_before_the_headers(server: Server) -> None:
    never = anyio.Event()

    async def no_headers(request: web.Request) -> web.StreamResponse:
        await never.wait()  # set when the test is over
        return web.Response(status=500)

    server.handlers.append(no_headers)
    transport = AiohttpTransport()
    try:
        with anyio.fail_after(5):  # a bug would hang here instead of timing out
            with pytest.raises(ModelTimeoutError, match=r"no response headers from "):
                await transport.send(
                    "POST",
                    f"{server.base_url}/v1/chat/completions",
                    headers={},
                    body=b"{}",
                    timeout=LIMITS,
                    stream=True,
                )
    finally:
        never.set()
        await transport.aclose()


async def test_once_the_answer_began_only_waiting_in_next_chunk_counts(server: Server) -> None:
    # The consumer leaves a silent stream alone for longer than the gap limit: a slow consumer, not a
    # slow server. aiohttp's socket timer, had it stayed on, would have failed the next read. (Until the
    # answer begins the read deadline runs from the headers whatever the consumer does: see
    # test_stream_read_deadline.py.)
    send = anyio.Event()
    server.handlers.append(stream_reply(delta("late"), before=send))
    transport = AiohttpTransport()
    try:
        response = await transport.send(
            "POST",
            f"{server.base_url}/v1/chat/completions",
            headers={},
            body=b"{}",
            timeout=LIMITS,
            stream=True,
        )
        response.answer_began()  # type: ignore[attr-defined]
        await anyio.sleep(QUEUED)
        send.set()
        assert (await response.next_chunk()).startswith(delta("late"))
        await response.aclose()
    finally:
        await transport.aclose()
