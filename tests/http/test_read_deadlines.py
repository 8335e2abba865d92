"""``Timeout.read`` is a deadline, not a gap that any byte resets.

- A stream's answer must begin within ``read`` of its headers: keep-alive comments (``: ping``, OpenRouter's
  ``: OPENROUTER PROCESSING``) from a gateway whose upstream is stuck do not hold it open for good. What
  counts as the answer beginning is its first event, but a usage report (vLLM's continuous usage stats come
  with every chunk, the first ones included) is no answer: the model may still think for as long as ``read``
  allows, not ``idle``.
- A blocking call's body must be complete within ``read`` of its headers: a gateway that sends keep-alive
  bytes while the model works cannot hold it open either.

These tests let short real intervals pass; what they assert is the outcome, never a duration.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

import anyio
import orjson
import pytest
from aiohttp import web
from local_app import serving

from agentflow import ModelTimeoutError, UserMessage
from agentflow.http.retry import RetryPolicy
from agentflow.http.timeouts import Timeout
from agentflow.providers.openai.chat_model import OpenAIChatModel

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
HI = [UserMessage("hi")]


def event(payload: object) -> bytes:
    return b"data: " + orjson.dumps(payload) + b"\n\n"


ANSWER = (
    event({"id": "s", "choices": [{"index": 0, "delta": {"content": "hello"}, "finish_reason": None}]})
    + event({"id": "s", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    + b"data: [DONE]\n\n"
)
USAGE_ONLY = event({"id": "s", "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 0}})


class Server:
    """A local aiohttp server running the handler the test gives it; ``stop`` ends what still runs."""

    def __init__(self) -> None:
        self.handler: Handler | None = None
        self.stop = anyio.Event()
        self.base_url = ""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        await request.read()
        assert self.handler is not None
        return await self.handler(request)


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    local = Server()
    async with serving("/v1/chat/completions", local.handle) as origin:
        local.base_url = origin
        try:
            yield local
        finally:
            local.stop.set()


def model_for(server: Server, timeout: Timeout) -> OpenAIChatModel:
    return OpenAIChatModel(base_url=server.base_url, model="m", timeout=timeout, retry=RetryPolicy.none())


async def test_keepalive_comments_do_not_hold_a_stream_open_before_its_answer(server: Server) -> None:
    async def pings_forever(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        with anyio.move_on_after(30), contextlib.suppress(ConnectionError):  # until the client leaves
            while not server.stop.is_set():
                await response.write(b": OPENROUTER PROCESSING\n\n")
                await anyio.sleep(0.02)
        return response

    server.handler = pings_forever
    async with model_for(server, Timeout(read=0.3, idle=0.3)) as model:
        with anyio.fail_after(10), pytest.raises(ModelTimeoutError, match="keep-alive comments") as caught:
            await model.stream(HI).collect()
    assert caught.value.limit == "read"


async def test_keepalive_comments_within_the_read_timeout_are_fine(server: Server) -> None:
    async def pings_then_answer(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for _ in range(3):
            await response.write(b": ping\n\n")
        await response.write(ANSWER)
        await response.write_eof()
        return response

    server.handler = pings_then_answer
    async with model_for(server, Timeout(read=30, idle=30)) as model:
        assert (await model.stream(HI).collect()).message.text == "hello"


async def test_a_usage_report_is_not_the_answer_beginning(server: Server) -> None:
    # The model thinks longer than ``idle`` after a usage-only first chunk, and well within ``read``.
    async def usage_then_think(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(USAGE_ONLY)
        await anyio.sleep(0.5)
        await response.write(ANSWER)
        await response.write_eof()
        return response

    server.handler = usage_then_think
    async with model_for(server, Timeout(read=30, idle=0.1)) as model:
        with anyio.fail_after(10):
            answer = await model.stream(HI).collect()
    assert answer.message.text == "hello"


async def test_a_blocking_body_that_trickles_in_ends_at_the_read_timeout(server: Server) -> None:
    async def whitespace_forever(request: web.Request) -> web.StreamResponse:
        # OpenRouter keeps a blocking call alive with whitespace before the JSON.
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        with anyio.move_on_after(30), contextlib.suppress(ConnectionError):  # until the client leaves
            while not server.stop.is_set():
                await response.write(b" ")
                await anyio.sleep(0.02)
        return response

    server.handler = whitespace_forever
    async with model_for(server, Timeout(read=0.3)) as model:
        with anyio.fail_after(10), pytest.raises(ModelTimeoutError, match="not complete") as caught:
            await model.chat(HI)
    assert caught.value.limit == "read"
    assert not caught.value.retryable
