"""``TrackingTransport``'s responses behave as the transport's own: a stream's read deadline ends when its
answer begins, and a stream's connection goes back to the pool at its end marker."""

from __future__ import annotations

from typing import Any

import anyio

from agentflow import OpenAIChatModel, UserMessage
from agentflow.testing import Reply, ScriptedServer
from agentflow.testing.tracking import TrackedResponse, TrackingTransport


class _Inner:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def answer_began(self) -> None:
        self.calls.append("answer_began")

    def progressed(self) -> None:
        self.calls.append("progressed")

    def release_at_end(self) -> None:
        self.calls.append("release_at_end")


def test_the_transport_s_own_hooks_are_passed_on_and_missing_ones_stay_missing() -> None:
    inner = _Inner()
    tracked = TrackedResponse(inner)  # type: ignore[arg-type]
    tracked.progressed()
    tracked.answer_began()
    tracked.release_at_end()
    assert inner.calls == ["progressed", "answer_began", "release_at_end"]
    assert tracked.closed  # released: done with, as after aclose

    bare: Any = object()
    assert getattr(TrackedResponse(bare), "release_at_end", None) is None  # the client then closes it
    assert getattr(TrackedResponse(bare), "answer_began", None) is None
    assert getattr(TrackedResponse(bare), "progressed", None) is None


async def test_a_tracked_stream_gives_its_connection_back_at_the_end() -> None:
    transport = TrackingTransport()
    async with ScriptedServer([Reply(text="Hello there."), Reply(text="Again.")]) as server:
        model = OpenAIChatModel(base_url=server.base_url, api_key="sk-test", model="m", transport=transport)
        async with model:
            for _ in range(2):
                async with model.stream([UserMessage("hi")]) as stream:
                    async for _event in stream:
                        pass
                first = transport.responses[-1]
                assert first.closed
                with anyio.fail_after(5):
                    # aiohttp pools the connection when the body's end arrives: nothing to wait on but that.
                    while not first.socket_released:  # noqa: ASYNC110
                        await anyio.sleep(0.01)
