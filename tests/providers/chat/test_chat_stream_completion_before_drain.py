"""``ModelCompleted`` comes as soon as ``[DONE]`` is read, even when the server keeps the body open; what
follows the end marker is drained afterwards — also when the consumer closes the stream at the completion
event, as the agents do — so the connection still goes back to the pool."""

from __future__ import annotations

import anyio
import pytest
from aiohttp import web
from chat_local_server import LocalServer, Reply, json_reply, sse_body

from agentflow import ModelCompleted, TextDelta, UserMessage
from agentflow.http.retry import RetryPolicy
from agentflow.model.events import ModelEvent
from agentflow.providers.openai import client
from agentflow.providers.openai.chat_model import OpenAIChatModel

BODY = sse_body({"id": "s", "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]})
HI = [UserMessage("hi")]
OK = {"id": "c", "choices": [{"index": 0, "message": {"content": "ok"}, "finish_reason": "stop"}]}


def held_open(end: anyio.Event | None) -> Reply:
    """The whole stream, ``[DONE]`` included, then the body kept open until ``end`` (forever if None)."""

    async def reply(request: web.Request, server: LocalServer) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(BODY)
        await (end or server.release).wait()
        if end is not None:
            await response.write_eof()
        return response

    return reply


@pytest.fixture
def long_drain(monkeypatch: pytest.MonkeyPatch) -> None:
    # A drain that waited before the completion would now hold it back far beyond the test's patience.
    monkeypatch.setattr(client, "_DRAIN_SECONDS", 60.0)


def model_for(server: LocalServer) -> OpenAIChatModel:
    return OpenAIChatModel(base_url=server.base_url, model="m", retry=RetryPolicy.none())


@pytest.mark.usefixtures("long_drain")
async def test_completion_comes_before_the_drain_and_the_connection_is_reused(server: LocalServer) -> None:
    end = anyio.Event()
    server.add(held_open(end), json_reply(OK))
    events: list[ModelEvent] = []
    try:
        async with model_for(server) as model:
            async with model.stream(HI) as stream:
                with anyio.fail_after(2):
                    async for event in stream:
                        events.append(event)
                        if isinstance(event, ModelCompleted):
                            end.set()  # the server ends the body only once the completion is in
                # (the loop went on to the end of the stream: the drain read the end of the body)
            await model.chat(HI)
    finally:
        end.set()  # lets the server shut down when the test failed
    assert events[0] == TextDelta("hi")
    assert isinstance(events[-1], ModelCompleted)
    first, second = server.requests
    assert second.peer == first.peer  # one pooled connection


@pytest.mark.usefixtures("long_drain")
async def test_closing_the_stream_at_the_completion_still_drains_for_the_pool(server: LocalServer) -> None:
    end = anyio.Event()
    server.add(held_open(end), json_reply(OK))
    try:
        async with model_for(server) as model:
            with anyio.fail_after(2):
                async with model.stream(HI) as stream:
                    async for event in stream:
                        if isinstance(event, ModelCompleted):
                            end.set()
                            break  # closes the stream, as an agent does: the drain runs then
            await model.chat(HI)
    finally:
        end.set()
    first, second = server.requests
    assert second.peer == first.peer


async def test_a_body_never_closed_costs_its_connection_only(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(client, "_DRAIN_SECONDS", 0.05)
    server.add(held_open(None), json_reply(OK))
    async with model_for(server) as model:
        with anyio.fail_after(2):
            response = await model.stream(HI).collect()
        assert response.message.text == "hi"
        assert (await model.chat(HI)).message.text == "ok"
    first, second = server.requests
    assert second.peer != first.peer  # the first connection was dropped, a new one opened
