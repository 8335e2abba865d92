"""An aiohttp session given to the transport (``AiohttpTransport(session=...)``) works in the event loop it
was made in only. A call from another loop (``asyncio.run`` makes a new one each time) fails at once with a
``ModelConnectionError`` that says why and what to do, not aiohttp's bare ``RuntimeError`` about a future
attached to a different loop."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from raw_http_server import RawHttpServer, in_thread

from agentflow import ModelConnectionError, UserMessage
from agentflow.http.retry import RetryPolicy
from agentflow.http.transport import AiohttpTransport
from agentflow.providers.openai.chat_model import OpenAIChatModel

HI = [UserMessage("hi")]


async def open_session() -> aiohttp.ClientSession:
    return aiohttp.ClientSession()


@pytest.mark.parametrize("stream", [False, True], ids=["blocking", "stream"])
def test_a_session_used_from_another_loop_is_a_clear_error(stream: bool) -> None:
    own_loop = asyncio.new_event_loop()
    session = own_loop.run_until_complete(open_session())
    try:
        with in_thread(RawHttpServer()) as server:
            model = OpenAIChatModel(
                base_url=server.url,
                model="m",
                transport=AiohttpTransport(session=session),
                retry=RetryPolicy.none(),
            )
            assert own_loop.run_until_complete(model.chat(HI)).message.text == "ok"  # its own loop
            call = model.stream(HI).collect() if stream else model.chat(HI)
            with pytest.raises(ModelConnectionError, match="belongs to another event loop") as caught:
                asyncio.run(call)  # type: ignore[arg-type]
        assert not caught.value.retryable
        assert "create the session in the loop that makes the calls" in caught.value.message
        assert len(server.requests) == 1
    finally:
        own_loop.run_until_complete(session.close())
        own_loop.close()
