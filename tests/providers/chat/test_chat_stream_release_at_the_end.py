"""A stream ends as soon as ``[DONE]`` is read, even when the server keeps the body open after it: the caller
never waits for the body's end (every agent step would). The connection goes back to the pool when that end
arrives — also when the consumer closes the stream at the completion event, as the agents do — and is
closed if it does not come within ``_END_SECONDS``."""

from __future__ import annotations

import anyio
import pytest
from aiohttp import web
from chat_local_server import LocalServer, Reply, json_reply, sse_body

from agentflow import ModelCompleted, TextDelta, UserMessage
from agentflow.http import transport
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
def patient_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    # The connection waits for the body's end far beyond the test's patience, so the caller must not. (The
    # drain that waited for it before the stream ended is set as long too, where it still exists.)
    monkeypatch.setattr(transport, "_END_SECONDS", 60.0)
    monkeypatch.setattr(client, "_DRAIN_SECONDS", 60.0, raising=False)


def model_for(server: LocalServer) -> OpenAIChatModel:
    return OpenAIChatModel(base_url=server.base_url, model="m", retry=RetryPolicy.none())


async def pooled(model: OpenAIChatModel) -> None:
    """Return once the model's pool holds an idle connection again (the client read the body's end). Polled:
    aiohttp pools it in a callback, which sets nothing a test could wait on."""
    pool = model.client._transport._last  # type: ignore[attr-defined]
    with anyio.fail_after(2):
        while not pool.session.connector._conns:  # noqa: ASYNC110
            await anyio.sleep(0.01)


@pytest.mark.usefixtures("patient_pool")
async def test_the_stream_ends_at_done_and_the_connection_is_pooled_when_the_body_ends(
    server: LocalServer,
) -> None:
    end = anyio.Event()
    server.add(held_open(end), json_reply(OK))
    events: list[ModelEvent] = []
    try:
        async with model_for(server) as model:
            with anyio.fail_after(2):  # the body is still open: waiting for its end would hang here
                async with model.stream(HI) as stream:
                    async for event in stream:
                        events.append(event)
            end.set()
            await pooled(model)
            await model.chat(HI)
    finally:
        end.set()  # lets the server shut down when the test failed
    assert events[0] == TextDelta("hi")
    assert isinstance(events[-1], ModelCompleted)
    first, second = server.requests
    assert second.peer == first.peer  # one pooled connection


@pytest.mark.usefixtures("patient_pool")
async def test_closing_the_stream_at_the_completion_ends_it_at_once_too(server: LocalServer) -> None:
    end = anyio.Event()
    server.add(held_open(end), json_reply(OK))
    try:
        async with model_for(server) as model:
            with anyio.fail_after(2):
                async with model.stream(HI) as stream:
                    async for event in stream:
                        if isinstance(event, ModelCompleted):
                            break  # closes the stream, as an agent does
            end.set()
            await pooled(model)
            await model.chat(HI)
    finally:
        end.set()
    first, second = server.requests
    assert second.peer == first.peer


async def test_a_body_never_ended_costs_its_connection_only(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(transport, "_END_SECONDS", 0.05)
    server.add(held_open(None), json_reply(OK))
    async with model_for(server) as model:
        with anyio.fail_after(2):
            response = await model.stream(HI).collect()
        assert response.message.text == "hi"
        assert (await model.chat(HI)).message.text == "ok"
    first, second = server.requests
    assert second.peer != first.peer  # the first connection was dropped, a new one opened
