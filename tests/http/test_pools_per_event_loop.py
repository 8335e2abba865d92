"""One model used from several event loops — threads that each run their own (``run_sync`` in a threaded web
app), or ``asyncio.run`` after ``asyncio.run`` — keeps a connection pool per loop: a call or an ``aclose`` in
one loop never touches another loop's pool, and a loop that ends leaves no socket open behind it."""

from __future__ import annotations

import asyncio
import gc
import os
import threading
import warnings

import pytest
from raw_http_server import RawHttpServer, RawReply, RawRequest, answer_ok, in_thread

from agentflow import UserMessage
from agentflow.http.retry import RetryPolicy
from agentflow.http.transport import AiohttpTransport
from agentflow.providers.openai.chat_model import OpenAIChatModel

HI = [UserMessage("hi")]


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def model_for(server: RawHttpServer) -> OpenAIChatModel:
    # A failure shows at once (no retry) and a call cut off from its pool would wait 5 s, not 60.
    return OpenAIChatModel(base_url=server.url, model="m", read_timeout=5, retry=RetryPolicy.none())


@pytest.mark.parametrize("other_thread_does", ["a call", "a call, then aclose", "aclose"])
def test_another_thread_with_its_own_loop_leaves_a_call_in_flight_alone(other_thread_does: str) -> None:
    arrived, release = threading.Event(), threading.Event()

    async def first_waits(request: RawRequest) -> RawReply:
        if request.connection == 1:  # thread A's call: answered once the other thread is done
            arrived.set()
            await asyncio.to_thread(release.wait, 10)
        return await answer_ok(request)

    with in_thread(RawHttpServer(first_waits)) as server:
        model = model_for(server)
        outcome: list[object] = []

        def thread_a() -> None:
            try:
                outcome.append(asyncio.run(model.chat(HI)).message.text)
            except Exception as error:
                outcome.append(error)

        async def other_thread() -> str | None:
            text = None
            if other_thread_does != "aclose":
                text = (await model.chat(HI)).message.text
            if other_thread_does != "a call":
                await model.aclose()  # what run_sync does when its run ends
            return text

        a = threading.Thread(target=thread_a)
        a.start()
        try:
            assert arrived.wait(10)
            text = asyncio.run(other_thread())  # this thread, a loop of its own
        finally:
            release.set()
            a.join(10)
    assert text == (None if other_thread_does == "aclose" else "ok")
    assert outcome == ["ok"]


def test_loops_that_end_without_aclose_leave_no_socket_open() -> None:
    with in_thread(RawHttpServer()) as server:
        model = model_for(server)
        before = open_fds()
        # A pytest loop per test, or asyncio.run per request, with a model at module level:
        for _ in range(10):
            assert asyncio.run(model.chat(HI)).message.text == "ok"
        # Each loop closed its connection as it ended: the server saw every one of them closed.
        assert server.wait_until_all_closed(10)
        assert server.connections == 10
        assert open_fds() <= before
    transport = model.client._transport
    assert isinstance(transport, AiohttpTransport)
    assert len(transport._pools) == 1  # the last loop's (closed) pool; the others were forgotten


def test_a_pool_whose_loop_was_closed_without_shutdown_is_forgotten_quietly() -> None:
    with in_thread(RawHttpServer()) as server:
        model = model_for(server)
        loop = asyncio.new_event_loop()
        assert loop.run_until_complete(model.chat(HI)).message.text == "ok"
        loop.close()  # no shutdown_asyncgens: its pool stays open, and only this loop could close its sockets
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)  # the dead loop's socket, freed by the collector
            assert asyncio.run(model.chat(HI)).message.text == "ok"
            transport = model.client._transport
            assert isinstance(transport, AiohttpTransport)
            assert loop not in transport._pools
            gc.collect()
        asyncio.run(model.aclose())


def test_threads_each_running_loops_share_one_model() -> None:
    with in_thread(RawHttpServer()) as server:
        model = model_for(server)
        results: list[object] = []
        lock = threading.Lock()

        def worker() -> None:
            for _ in range(5):
                try:
                    text: object = asyncio.run(model.chat(HI)).message.text
                except Exception as error:
                    text = error
                with lock:
                    results.append(text)

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert results == ["ok"] * 20
        assert server.wait_until_all_closed(10)
