"""OpenAIChatModel and its HTTP client: the API key stays secret, one pooled session per model, lifecycle."""

from __future__ import annotations

import asyncio
import gc
import logging
import warnings

import aiohttp
import orjson
import pytest
from chat_local_server import (
    LocalServer,
    SleepRecorder,
    free_port,
    json_reply,
    raw_reply,
    sse_body,
    sse_reply,
)

from agentflow import ChatModel, ModelCompleted, ModelError, ModelRetry, TextDelta, UserMessage
from agentflow.http.retry import RetryPolicy
from agentflow.http.transport import AiohttpTransport
from agentflow.model.events import ModelEvent
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.client import OpenAIHttpClient

KEY = "sk-live-THIS-MUST-NOT-LEAK"
OK = {"id": "c", "choices": [{"index": 0, "message": {"content": "ok"}, "finish_reason": "stop"}]}
HI = [UserMessage("hi")]
STREAM = sse_body({"id": "s", "choices": [{"index": 0, "delta": {"content": "yo"}, "finish_reason": "stop"}]})


def test_model_is_a_chat_model() -> None:
    assert isinstance(OpenAIChatModel(model="m"), ChatModel)


def test_api_key_not_in_reprs() -> None:
    model = OpenAIChatModel(api_key=KEY, model="m")
    client = OpenAIHttpClient(api_key=KEY)
    for text in (repr(model), str(model), repr(client), repr(model.client)):
        assert KEY not in text
        assert "<set>" in text
    assert "api_key=None" in repr(OpenAIChatModel(model="m"))


async def test_api_key_never_in_errors_events_or_logs(
    server: LocalServer, sleeps: SleepRecorder, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server.add(
        json_reply({"error": {"message": "nope"}}, status=401),
        json_reply({"error": {"message": "busy"}}, status=503),
        sse_reply(
            [sse_body({"choices": [{"index": 0, "delta": {"content": "x"}}]}, done=False)], end="reset"
        ),
        sse_reply([b"data: {broken\n\n"]),
    )
    texts: list[str] = []
    async with OpenAIChatModel(base_url=server.base_url, api_key=KEY, model="m", sleep=sleeps) as model:
        with pytest.raises(ModelError) as auth:
            await model.chat(HI)
        texts += [str(auth.value), repr(auth.value), repr(vars(auth.value))]
        events: list[ModelEvent] = []

        async def consume() -> None:
            async with model.stream(HI) as stream:
                async for event in stream:
                    events.append(event)

        for _ in range(2):
            with pytest.raises(ModelError) as streamed:
                await consume()
            error: BaseException | None = streamed.value
            while error is not None:
                texts += [str(error), repr(error), repr(getattr(error, "__dict__", ""))]
                error = error.__cause__ or error.__context__
        assert any(isinstance(e, ModelRetry) for e in events)
        texts += [orjson.dumps(e.to_dict()).decode() for e in events]
    refused = OpenAIChatModel(
        base_url=f"http://127.0.0.1:{free_port()}", api_key=KEY, model="m", sleep=sleeps
    )
    async with refused:
        with pytest.raises(ModelError) as down:
            await refused.chat(HI)
    texts += [str(down.value), repr(down.value), str(down.value.__cause__), repr(down.value.__cause__)]
    logged = [record.getMessage() for record in caplog.records]
    assert any(line.startswith("retrying POST") for line in logged)
    texts += logged
    for text in texts:
        assert KEY not in text


def session_of(transport: AiohttpTransport) -> aiohttp.ClientSession | None:
    """The session the transport keeps for the running loop (None before its first call there)."""
    pool = transport._pools.get(asyncio.get_running_loop())
    return None if pool is None else pool.session


async def test_session_is_created_lazily_and_pooled(server: LocalServer) -> None:
    transport = AiohttpTransport()
    server.add(json_reply(OK), sse_reply([STREAM]), json_reply(OK))
    model = OpenAIChatModel(base_url=server.base_url, model="m", transport=transport)
    assert session_of(transport) is None
    await model.chat(HI)
    session = session_of(transport)
    assert session is not None
    await model.stream(HI).collect()
    await model.chat(HI)
    assert session_of(transport) is session
    assert len({r.peer for r in server.requests}) == 1  # one connection, reused (the stream was drained)
    await transport.aclose()
    assert session.closed


async def test_async_with_and_aclose_close_the_session_and_the_model_reconnects(server: LocalServer) -> None:
    server.add(json_reply(OK), json_reply(OK))
    async with OpenAIChatModel(base_url=server.base_url, model="m") as model:
        await model.chat(HI)
        transport = model.client._transport
        assert isinstance(transport, AiohttpTransport)
        first = session_of(transport)
        assert first is not None
    assert first.closed
    await model.chat(HI)  # usable again: a fresh session
    second = session_of(transport)
    assert second is not None
    assert second is not first
    await model.aclose()
    assert session_of(transport) is None
    assert second.closed


async def test_a_transport_passed_in_is_not_closed_by_the_model(server: LocalServer) -> None:
    transport = AiohttpTransport()
    server.add(json_reply(OK))
    async with OpenAIChatModel(base_url=server.base_url, model="m", transport=transport) as model:
        await model.chat(HI)
    session = session_of(transport)
    assert session is not None
    assert not session.closed
    await transport.aclose()
    assert session.closed


async def test_nothing_is_sent_until_the_stream_is_iterated(server: LocalServer) -> None:
    server.add(sse_reply([STREAM]))
    async with OpenAIChatModel(base_url=server.base_url, model="m") as model:
        stream = model.stream(HI)
        assert server.requests == []
        response = await stream.collect()
    assert response.message.text == "yo"
    assert stream.response is response
    assert len(server.requests) == 1


async def test_leaving_a_stream_early_closes_its_connection(server: LocalServer) -> None:
    chunks = [sse_body({"choices": [{"index": 0, "delta": {"content": "a"}}]}, done=False)]
    server.add(sse_reply(chunks, end="stall"), json_reply(OK))
    async with OpenAIChatModel(base_url=server.base_url, model="m") as model:
        async with model.stream(HI) as stream:
            async for event in stream:
                assert event == TextDelta("a")
                break
        assert (await model.chat(HI)).message.text == "ok"
    first, second = server.requests
    assert first.peer != second.peer  # the abandoned stream's connection was not reused


async def test_stream_events_end_with_model_completed(server: LocalServer) -> None:
    server.add(sse_reply([STREAM]))
    async with OpenAIChatModel(base_url=server.base_url, model="m") as model:
        events = [e async for e in model.stream(HI)]
    assert events[0] == TextDelta("yo")
    assert isinstance(events[-1], ModelCompleted)
    assert events[-1].response.message.text == "yo"


def test_a_model_survives_two_event_loops() -> None:
    model = OpenAIChatModel(model="m", retry=RetryPolicy.none())

    async def one_call() -> str | None:
        server = LocalServer()
        await server.start()
        try:
            server.add(json_reply(OK))
            model.client._base = server.base_url + "/v1"
            return (await model.chat(HI)).message.text
        finally:
            await server.close()

    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        assert asyncio.run(one_call()) == "ok"
        assert asyncio.run(one_call()) == "ok"
        asyncio.run(model.aclose())
        gc.collect()


async def test_credentials_in_the_base_url_never_reach_errors_or_logs(
    server: LocalServer, sleeps: SleepRecorder, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="agentflow")
    server.add(json_reply({"error": {"message": "busy"}}, status=503), raw_reply("{not json"))
    base = server.base_url.replace("http://", "http://gateway-user:url-password@") + "/v1?key=url-secret"
    async with OpenAIChatModel(base_url=base, model="m", sleep=sleeps) as model:
        with pytest.raises(ModelError) as caught:
            await model.chat(HI)
    assert "not valid JSON" in caught.value.message
    assert server.requests[0].path == "/v1/chat/completions"
    texts = [str(caught.value), repr(caught.value), repr(model), *(r.getMessage() for r in caplog.records)]
    assert len(texts) == 4  # one retry was logged
    for text in texts:
        assert "url-password" not in text
        assert "url-secret" not in text
