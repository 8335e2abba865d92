"""A pooled keep-alive connection that the server closes just as a request goes out on it (its idle timeout
fired while the request was on the way) fails before any byte of an answer. The transport sends that request
again at once on another connection: no back-off, no ``ModelRetry``, not counted against ``max_retries``.
Nothing else is resent that way: a new connection closed unanswered, an answer cut off once begun, a
second failure."""

from __future__ import annotations

import anyio
import pytest
from raw_http_server import RawHttpServer, RawReply, RawRequest, answer_ok

from agentflow import ModelConnectionError, ModelRetry, UserMessage
from agentflow.http.retry import RetryPolicy
from agentflow.model.events import ModelEvent
from agentflow.providers.openai.chat_model import OpenAIChatModel

HI = [UserMessage("hi")]
UNANSWERED = RawReply(b"", close=True)


class Recorder:
    """The client's ``sleep`` and ``on_retry``: what a counted retry would go through."""

    def __init__(self) -> None:
        self.sleeps: list[float] = []
        self.retries: list[ModelRetry] = []

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)


def model_for(server: RawHttpServer, recorder: Recorder) -> OpenAIChatModel:
    return OpenAIChatModel(
        base_url=server.url,
        model="m",
        retry=RetryPolicy.none(),
        sleep=recorder.sleep,
        on_retry=recorder.retries.append,
    )


async def call(model: OpenAIChatModel, stream: bool) -> tuple[str | None, list[ModelEvent]]:
    if not stream:
        return (await model.chat(HI)).message.text, []
    events: list[ModelEvent] = []
    async with model.stream(HI) as answer:
        async for event in answer:
            events.append(event)
    assert answer.response is not None
    return answer.response.message.text, events


async def close_reused_connections(request: RawRequest) -> RawReply:
    # The server's keep-alive timeout fires as the next request arrives: closed, never answered.
    return UNANSWERED if request.index > 1 else await answer_ok(request)


@pytest.mark.parametrize("stream", [False, True], ids=["blocking", "stream"])
async def test_a_pooled_connection_closed_as_the_request_goes_out_is_resent_at_once(stream: bool) -> None:
    recorder = Recorder()
    async with RawHttpServer(close_reused_connections) as server, model_for(server, recorder) as model:
        assert (await call(model, stream))[0] == "ok"
        text, events = await call(model, stream)
    assert text == "ok"
    assert not any(isinstance(event, ModelRetry) for event in events)
    assert recorder.retries == []
    assert recorder.sleeps == []
    # The second call went out on the first call's connection, then once more on a new one.
    assert [(r.connection, r.index) for r in server.requests] == [(1, 1), (1, 2), (2, 1)]


async def test_a_new_connection_closed_unanswered_is_not_resent() -> None:
    async def close_everything(_request: RawRequest) -> RawReply:
        return UNANSWERED

    recorder = Recorder()
    async with RawHttpServer(close_everything) as server, model_for(server, recorder) as model:
        with pytest.raises(ModelConnectionError, match="ServerDisconnectedError"):
            await model.chat(HI)
    assert len(server.requests) == 1


async def test_a_pooled_connection_closed_once_the_answer_began_is_not_resent() -> None:
    async def start_answering_then_close(request: RawRequest) -> RawReply:
        if request.index > 1:
            return RawReply(b"HTTP/1.1 200 OK\r\nContent-Ty", close=True)
        return await answer_ok(request)

    recorder = Recorder()
    async with RawHttpServer(start_answering_then_close) as server, model_for(server, recorder) as model:
        await model.chat(HI)
        with pytest.raises(ModelConnectionError):
            await model.chat(HI)
    assert len(server.requests) == 2


async def test_the_request_is_resent_once_then_the_retry_policy_decides() -> None:
    async def close_all_but_the_first_answer(request: RawRequest) -> RawReply:
        return await answer_ok(request) if (request.connection, request.index) == (1, 1) else UNANSWERED

    recorder = Recorder()
    async with RawHttpServer(close_all_but_the_first_answer) as server:
        model = OpenAIChatModel(
            base_url=server.url,
            model="m",
            retry=RetryPolicy(max_retries=1, jitter=0),
            sleep=recorder.sleep,
            on_retry=recorder.retries.append,
        )
        async with model:
            await model.chat(HI)
            with pytest.raises(ModelConnectionError):
                await model.chat(HI)
    # The stale connection, its resend on a new one, then the policy's one retry (which went out on a new
    # connection too: a failed connection is never pooled, so nothing was stale any more).
    assert [(r.connection, r.index) for r in server.requests] == [(1, 1), (1, 2), (2, 1), (3, 1)]
    assert [r.attempt for r in recorder.retries] == [2]
    assert recorder.sleeps == [0.5]


async def test_a_pooled_connection_dropped_after_the_server_worked_on_the_request_is_not_resent() -> None:
    # A proxy's idle timeout during a long generation looks like a keep-alive race (nothing was answered)
    # but comes long after the request went out: the server may have worked on it, and sending it again
    # silently would be billed twice. It goes to the retry policy (here: none).
    async def work_then_drop(request: RawRequest) -> RawReply:
        if request.index > 1:
            await anyio.sleep(1.3)
            return UNANSWERED
        return await answer_ok(request)

    recorder = Recorder()
    async with RawHttpServer(work_then_drop) as server, model_for(server, recorder) as model:
        await model.chat(HI)
        with pytest.raises(ModelConnectionError):
            await model.chat(HI)
    assert len(server.requests) == 2
