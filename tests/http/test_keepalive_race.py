"""Nothing is ever sent twice behind the retry policy's back.

A pooled connection that fails as a request goes out on it, before any byte of an answer, is one of two
things: a keep-alive race (the server closed the connection for idling just as the request went out: it
never read it), or a server that read the request and died (a worker killed mid-request, a proxy
restarting): sending it again would have it worked on, and billed, twice. Only a connection that sat idle
long enough for the server to close it, failing at once, counts as the race: its ``ModelConnectionError``
says ``keepalive_race``, and the policy retries it without waiting. Either way a retry is the policy's — an
announced ``ModelRetry``, counted — and ``RetryPolicy.none()`` sends nothing again.
"""

from __future__ import annotations

import anyio
import pytest
from raw_http_server import RawHttpServer, RawReply, RawRequest, answer_ok

from agentflow import ModelConnectionError, ModelRetry, UserMessage
from agentflow.http import pools
from agentflow.http.retry import RetryPolicy
from agentflow.model.events import ModelEvent
from agentflow.providers.openai.chat_model import OpenAIChatModel

HI = [UserMessage("hi")]
UNANSWERED = RawReply(b"", close=True)


class Recorder:
    """The client's ``sleep`` and ``on_retry``: what a counted retry goes through."""

    def __init__(self) -> None:
        self.sleeps: list[float] = []
        self.retries: list[ModelRetry] = []

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)


def model_for(server: RawHttpServer, recorder: Recorder, retry: RetryPolicy) -> OpenAIChatModel:
    return OpenAIChatModel(
        base_url=server.url, model="m", retry=retry, sleep=recorder.sleep, on_retry=recorder.retries.append
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


async def read_then_close_reused_connections(request: RawRequest) -> RawReply:
    # The second request on a connection is read whole, then the connection is closed unanswered: a server
    # that died on it, or one that closed it for idling as it arrived (the client cannot tell them apart).
    return UNANSWERED if request.index > 1 else await answer_ok(request)


@pytest.fixture
def idle_connections_count_as_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pooled connection idle for 50 ms is taken as one the server may have closed for idling (it takes
    seconds for a real server), and a failure within 30 s of getting it as immediate: the test then needs
    no long waits, and a slow machine does not change what it sees."""
    monkeypatch.setattr(pools, "IDLE_SECONDS", 0.05)
    monkeypatch.setattr(pools, "RACE_SECONDS", 30.0)


@pytest.mark.parametrize("stream", [False, True], ids=["blocking", "stream"])
async def test_a_request_a_reused_connection_dropped_is_not_sent_again_without_retries(stream: bool) -> None:
    recorder = Recorder()
    async with (
        RawHttpServer(read_then_close_reused_connections) as server,
        model_for(server, recorder, RetryPolicy.none()) as model,
    ):
        assert (await call(model, stream))[0] == "ok"
        with pytest.raises(ModelConnectionError) as caught:
            await call(model, stream)
    # Reused at once (the next step of an agent): the server cannot have closed it for idling.
    assert not caught.value.keepalive_race
    assert [(r.connection, r.index) for r in server.requests] == [(1, 1), (1, 2)]
    assert recorder.retries == []


@pytest.mark.parametrize("stream", [False, True], ids=["blocking", "stream"])
async def test_with_retries_it_is_an_announced_retry_after_the_back_off(stream: bool) -> None:
    recorder = Recorder()
    policy = RetryPolicy(max_retries=1, jitter=0)
    async with (
        RawHttpServer(read_then_close_reused_connections) as server,
        model_for(server, recorder, policy) as model,
    ):
        await call(model, stream)
        text, events = await call(model, stream)
    assert text == "ok"
    assert [(r.attempt, r.delay) for r in recorder.retries] == [(2, 0.5)]
    assert recorder.sleeps == [0.5]
    if stream:
        assert [type(event) for event in events[:1]] == [ModelRetry]
    assert [(r.connection, r.index) for r in server.requests] == [(1, 1), (1, 2), (2, 1)]


@pytest.mark.usefixtures("idle_connections_count_as_stale")
@pytest.mark.parametrize("stream", [False, True], ids=["blocking", "stream"])
async def test_a_keepalive_race_is_retried_at_once_and_announced(stream: bool) -> None:
    recorder = Recorder()
    policy = RetryPolicy(max_retries=1, jitter=0)
    async with (
        RawHttpServer(read_then_close_reused_connections) as server,
        model_for(server, recorder, policy) as model,
    ):
        await call(model, stream)
        await anyio.sleep(0.1)  # the connection idles in the pool
        text, events = await call(model, stream)
    assert text == "ok"
    [retry] = recorder.retries
    assert (retry.attempt, retry.delay) == (2, 0.0)
    assert "keep-alive" in retry.reason
    assert recorder.sleeps == [0.0]  # no back-off
    if stream:
        assert events[0] == retry
    assert [(r.connection, r.index) for r in server.requests] == [(1, 1), (1, 2), (2, 1)]


@pytest.mark.usefixtures("idle_connections_count_as_stale")
async def test_a_keepalive_race_is_not_sent_again_under_retry_policy_none() -> None:
    recorder = Recorder()
    async with (
        RawHttpServer(read_then_close_reused_connections) as server,
        model_for(server, recorder, RetryPolicy.none()) as model,
    ):
        await model.chat(HI)
        await anyio.sleep(0.1)
        with pytest.raises(ModelConnectionError, match="keep-alive") as caught:
            await model.chat(HI)
    assert caught.value.keepalive_race
    assert "ServerDisconnectedError" in caught.value.message
    assert len(server.requests) == 2


@pytest.mark.usefixtures("idle_connections_count_as_stale")
async def test_a_failure_long_after_the_request_went_out_is_no_keepalive_race(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The server worked on the request before dropping the connection: the request was read.
    monkeypatch.setattr(pools, "RACE_SECONDS", 0.05)

    async def work_then_drop(request: RawRequest) -> RawReply:
        if request.index > 1:
            await anyio.sleep(0.3)
            return UNANSWERED
        return await answer_ok(request)

    recorder = Recorder()
    async with (
        RawHttpServer(work_then_drop) as server,
        model_for(server, recorder, RetryPolicy.none()) as model,
    ):
        await model.chat(HI)
        await anyio.sleep(0.1)
        with pytest.raises(ModelConnectionError) as caught:
            await model.chat(HI)
    assert not caught.value.keepalive_race
    assert len(server.requests) == 2


@pytest.mark.usefixtures("idle_connections_count_as_stale")
async def test_a_new_connection_closed_unanswered_is_no_keepalive_race() -> None:
    async def close_everything(_request: RawRequest) -> RawReply:
        return UNANSWERED

    recorder = Recorder()
    async with (
        RawHttpServer(close_everything) as server,
        model_for(server, recorder, RetryPolicy.none()) as model,
    ):
        with pytest.raises(ModelConnectionError, match="ServerDisconnectedError") as caught:
            await model.chat(HI)
    assert not caught.value.keepalive_race
    assert len(server.requests) == 1


@pytest.mark.usefixtures("idle_connections_count_as_stale")
async def test_a_pooled_connection_closed_once_the_answer_began_is_no_keepalive_race() -> None:
    async def start_answering_then_close(request: RawRequest) -> RawReply:
        if request.index > 1:
            return RawReply(b"HTTP/1.1 200 OK\r\nContent-Ty", close=True)
        return await answer_ok(request)

    recorder = Recorder()
    async with (
        RawHttpServer(start_answering_then_close) as server,
        model_for(server, recorder, RetryPolicy.none()) as model,
    ):
        await model.chat(HI)
        await anyio.sleep(0.1)
        with pytest.raises(ModelConnectionError) as caught:
            await model.chat(HI)
    assert not caught.value.keepalive_race
    assert len(server.requests) == 2
