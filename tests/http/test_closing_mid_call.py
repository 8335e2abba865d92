"""Closing a model (its transport, its session) while another task is still inside a call on it: that call
fails with ``ModelConnectionError`` saying the session was closed — promptly, not after the read timeout, and
never as aiohttp's bare ``RuntimeError``. aiohttp's other ``RuntimeError``\\ s still surface as they are."""

from __future__ import annotations

import re

import aiohttp
import anyio
import pytest

from agentflow import ModelConnectionError, TextDelta, UserMessage
from agentflow.http.retry import RetryPolicy
from agentflow.http.timeouts import Timeout
from agentflow.http.transport import AiohttpTransport
from agentflow.model.events import ModelEvent
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.testing import Fault, Reply, ScriptedServer

CLOSED = r"the HTTP session was closed while (reading|waiting for) the response from http://127\.0\.0\.1:\d+"
LONG = Reply(text="a b c d e f")
STREAM_BODY = b'{"model": "m", "stream": true, "messages": []}'
# A read timeout far beyond the test's guard: a reader left waiting by the close would hang, not time out.
PATIENT = Timeout(read=3600)


def model_for(server: ScriptedServer) -> OpenAIChatModel:
    return OpenAIChatModel(
        base_url=server.base_url, model="m", timeout=PATIENT, retry=RetryPolicy.none(), api_key="sk"
    )


async def test_closing_the_model_fails_a_stream_another_task_is_waiting_on() -> None:
    async with ScriptedServer([Fault.stall(after_chunks=2, reply=LONG)]) as server:
        model = model_for(server)
        first_text = anyio.Event()
        seen: list[ModelEvent] = []
        failures: list[BaseException] = []

        async def read_stream() -> None:
            try:
                async with model.stream([UserMessage("hi")]) as stream:
                    async for event in stream:
                        seen.append(event)
                        if isinstance(event, TextDelta):
                            first_text.set()  # the next read waits: the server stalls after "a"
            except ModelConnectionError as error:
                failures.append(error)

        with anyio.fail_after(10):
            async with anyio.create_task_group() as group:
                group.start_soon(read_stream)
                await first_text.wait()
                await model.aclose()
    assert [e for e in seen if isinstance(e, TextDelta)] == [TextDelta("a")]
    [error] = failures
    assert re.match(CLOSED, str(error)), error
    assert not error.retryable  # the close was deliberate: no new session, no second request


async def test_closing_the_model_fails_a_blocking_call_reading_its_body() -> None:
    answering = anyio.Event()

    def stall(_body: object) -> Fault:
        answering.set()
        return Fault.stall()  # headers, then no body until the server stops

    async with ScriptedServer([stall]) as server:
        model = model_for(server)

        async def close_when_answered() -> None:
            await answering.wait()
            await anyio.wait_all_tasks_blocked()  # most likely the headers are in and the body awaited
            await model.aclose()

        with anyio.fail_after(10):
            async with anyio.create_task_group() as group:
                group.start_soon(close_when_answered)
                with pytest.raises(ModelConnectionError, match=CLOSED):
                    await model.chat([UserMessage("hi")])


async def test_closing_the_model_fails_a_stream_still_waiting_for_its_headers() -> None:
    arrived, release = anyio.Event(), anyio.Event()

    async def slow(_body: object) -> Reply:
        arrived.set()
        await release.wait()
        return Reply(text="late")

    async with ScriptedServer([slow]) as server:
        model = model_for(server)

        async def close_on_arrival() -> None:
            await arrived.wait()
            await model.aclose()

        try:
            with anyio.fail_after(10):
                async with anyio.create_task_group() as group:
                    group.start_soon(close_on_arrival)
                    with pytest.raises(ModelConnectionError, match=CLOSED):
                        await model.stream([UserMessage("hi")]).collect()
        finally:
            release.set()


async def test_reading_on_after_the_given_session_was_closed_is_a_connection_error() -> None:
    async with (
        ScriptedServer([Fault.stall(after_chunks=1, reply=LONG)]) as server,
        aiohttp.ClientSession() as session,
    ):
        transport = AiohttpTransport(session=session)
        response = await transport.send(
            "POST",
            f"{server.base_url}/chat/completions",
            headers={},
            body=STREAM_BODY,
            timeout=PATIENT,
            stream=True,
        )
        assert await response.next_chunk()
        await session.close()  # the caller's own session: aiohttp's bare RuntimeError on the next read
        with anyio.fail_after(10), pytest.raises(ModelConnectionError, match=CLOSED) as caught:
            await response.next_chunk()
        assert isinstance(caught.value.__cause__, RuntimeError)
        await response.aclose()
        with pytest.raises(
            ModelConnectionError, match="the HTTP session was closed while sending the request"
        ):
            await transport.send(
                "POST", f"{server.base_url}/chat/completions", headers={}, body=STREAM_BODY, timeout=PATIENT
            )


async def test_other_aiohttp_runtime_errors_are_not_taken_for_a_closed_session() -> None:
    async with ScriptedServer([Fault.stall(after_chunks=1, reply=LONG)]) as server:
        transport = AiohttpTransport()
        try:
            response = await transport.send(
                "POST",
                f"{server.base_url}/chat/completions",
                headers={},
                body=STREAM_BODY,
                timeout=PATIENT,
                stream=True,
            )
            assert await response.next_chunk()
            with anyio.fail_after(10):
                async with anyio.create_task_group() as group:
                    group.start_soon(response.next_chunk)  # waits: the server stalls
                    await anyio.wait_all_tasks_blocked()
                    with pytest.raises(RuntimeError, match="already waiting"):
                        await response.next_chunk()  # a second reader at once: a bug, surfaced as is
                    group.cancel_scope.cancel()
            await response.aclose()
        finally:
            await transport.aclose()
