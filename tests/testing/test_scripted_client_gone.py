"""A client that goes away before or while the scripted server answers (a cancelled call, a closed model — the
usual end of a cancellation test) is no server error: the server stops that answer without logging a
traceback. A connection error while the client is still there is a real failure, and is still logged."""

from __future__ import annotations

import logging
from typing import Any

import aiohttp
import anyio
import pytest

from agentflow import ModelCompleted, TextDelta, UserMessage
from agentflow.http.retry import RetryPolicy
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.testing import Reply, ScriptedServer, chat_wire

STREAM = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}


def errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [f"{r.name}: {r.getMessage()}" for r in caplog.records if r.levelno >= logging.WARNING]


async def test_a_client_gone_before_the_answer_is_not_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    arrived, release = anyio.Event(), anyio.Event()

    async def slow(_body: dict[str, Any]) -> Reply:
        arrived.set()
        await release.wait()
        return Reply(text="too late")

    server = ScriptedServer([slow, Reply(text="next")])
    await server.start()
    try:
        model = OpenAIChatModel(base_url=server.base_url, model="m", retry=RetryPolicy.none())
        async with model:
            with anyio.fail_after(30):
                async with anyio.create_task_group() as group:

                    async def cancel_on_arrival() -> None:
                        await arrived.wait()
                        group.cancel_scope.cancel()  # the call is given up while the server prepares it

                    group.start_soon(cancel_on_arrival)
                    await model.stream([UserMessage("a")]).collect()
            # A second call, on a new connection, done from start to end: the server has long seen the first
            # connection close when the first answer is released.
            events = [event async for event in model.stream([UserMessage("b")])]
            assert isinstance(events[-1], ModelCompleted)
    finally:
        release.set()
        await server.stop()  # waits for the first answer's handler to finish
    assert len(server.requests) == 2
    assert server.errors == ()
    assert errors(caplog) == []
    assert any("left before its answer" in r.getMessage() for r in caplog.records)


async def test_a_client_gone_mid_stream_is_not_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    async with ScriptedServer([Reply(text="word " * 50_000, chunk_size=5)]) as server:
        model = OpenAIChatModel(base_url=server.base_url, model="m")
        async with model, model.stream([UserMessage("a")]) as stream:
            async for event in stream:
                assert isinstance(event, TextDelta)
                break  # leaving the block closes the connection with most of the answer unsent
    assert errors(caplog) == []


async def test_a_connection_error_with_the_client_still_there_is_logged(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_args: object) -> list[bytes]:
        raise ConnectionResetError("a bug of the server, not a client that left")

    monkeypatch.setattr(chat_wire, "encode_stream", broken)
    async with (
        ScriptedServer([Reply(text="x")]) as server,
        aiohttp.ClientSession() as session,
        session.post(f"{server.base_url}/chat/completions", json=STREAM) as response,
    ):
        assert response.status == 500
    assert any("Error handling request" in message for message in errors(caplog))
