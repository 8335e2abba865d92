"""Graceful shutdown of the aiohttp and FastAPI examples with an event stream open: the run is cancelled, its
client gets the ``run_cancelled`` frame, and the shutdown completes without waiting out the server's timeout.

The servers' own limits (aiohttp's ``shutdown_timeout``, uvicorn's ``timeout_graceful_shutdown``) are set to
a minute here, far beyond the hang guard: a shutdown that completes is one the examples ended themselves,
and only a run cancelled before the server cuts the connection gets its ``run_cancelled`` frame out.
The FastAPI example is stopped here as a program stops uvicorn itself (``cancel_all``, then ``should_exit``);
``test_web_signals`` stops it with a real SIGTERM, in a subprocess.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import aiohttp
import anyio
import pytest
from web_support import SERVED, Served, SseReader, data, load_example

from agentflow.agent.agent import Agent
from agentflow.events import RunCancelled
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.result import StopReason
from agentflow.testing import Reply, ScriptedServer
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool

ServedFactory = Callable[..., AbstractAsyncContextManager[Served]]
A_MINUTE: dict[str, dict[str, Any]] = {
    "aiohttp": {"shutdown_timeout": 60.0},
    "fastapi": {"timeout_graceful_shutdown": 60},
}


@pytest.fixture(params=sorted(SERVED))
def served(request: pytest.FixtureRequest) -> tuple[ServedFactory, dict[str, Any]]:
    return SERVED[request.param], A_MINUTE[request.param]


@pytest.fixture
async def waiting_agent() -> AsyncIterator[tuple[Agent, anyio.Event, anyio.Event]]:
    """An agent whose one tool waits until it is cancelled: (agent, tool entered, tool cancelled)."""
    entered, cancelled = anyio.Event(), anyio.Event()

    @tool
    async def wait_for_approval(change: str) -> str:
        """Wait until a human approves the change."""
        entered.set()
        try:
            await anyio.Event().wait()  # only cancellation ends this call
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise
        return "approved"

    script = [Reply(tool_calls=[("wait_for_approval", {"change": "deploy"})])]
    async with ScriptedServer(script) as server:
        model = OpenAIChatModel(base_url=server.base_url, model="m")
        async with Agent(model, tools=[wait_for_approval]) as agent:
            yield agent, entered, cancelled


async def test_shutdown_with_a_stream_open_sends_run_cancelled_and_completes(
    served: tuple[ServedFactory, dict[str, Any]],
    waiting_agent: tuple[Agent, anyio.Event, anyio.Event],
) -> None:
    serve, limits = served
    agent, tool_entered, tool_cancelled = waiting_agent
    ended: list[RunCancelled] = []
    agent.on(RunCancelled, ended.append)
    shut_down = anyio.Event()

    async with serve(agent, **limits) as service, aiohttp.ClientSession() as http:
        response = await http.get(f"{service.url}/runs", params={"q": "Deploy it"})
        reader = SseReader(response)
        await reader.until("tool_started")
        await tool_entered.wait()

        async def shutdown() -> None:
            await service.shutdown()
            shut_down.set()

        with anyio.fail_after(20):  # a hang guard only (the servers would wait a minute, or two)
            async with anyio.create_task_group() as tg:
                tg.start_soon(shutdown)
                frames = await reader.all()
                await shut_down.wait()

    assert tool_cancelled.is_set()
    assert [frame.event for frame in frames][-2:] == ["tool_failed", "run_cancelled"]
    assert data(frames[-2])["result"]["error_type"] == "cancelled"
    last = data(frames[-1])
    assert last["partial"]["stop_reason"] == "cancelled"
    assert last["partial"]["tool_results"][0]["error_type"] == "cancelled"
    assert len(ended) == 1
    assert ended[0].partial.stop_reason is StopReason.CANCELLED


@pytest.mark.parametrize("example", ["aiohttp_service", "fastapi_service"])
async def test_a_run_opened_once_shutdown_has_begun_is_cancelled_at_once(example: str) -> None:
    runs = load_example(example).OpenRuns()  # agentflow.OpenRuns, as the example uses it
    agent = Agent(FakeModelClient([reply("never sent")]))
    await runs.cancel_all()
    async with agent.stream("late") as run, runs.track(run):
        events = [event async for event in run]
    assert isinstance(events[-1], RunCancelled)
    assert run.partial is not None
    assert run.partial.stop_reason is StopReason.CANCELLED
