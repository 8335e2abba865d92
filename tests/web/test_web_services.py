"""The aiohttp and FastAPI examples over real HTTP on 127.0.0.1: event order, one terminal event, and a
client disconnect that cancels the run."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import aiohttp
import anyio
import pytest
from web_support import SERVICES, SseReader, data, load_example

from agentflow.agent.agent import Agent
from agentflow.events import RunCancelled
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.result import StopReason
from agentflow.testing import Reply, ScriptedServer
from agentflow.tools import tool

Service = Callable[[Agent], AbstractAsyncContextManager[str]]
TERMINAL = {"run_finished", "run_failed", "run_cancelled"}


@pytest.fixture(params=sorted(SERVICES))
def service(request: pytest.FixtureRequest) -> Service:
    return SERVICES[request.param]


@pytest.fixture
async def demo_agent() -> AsyncIterator[Agent]:
    web_agent = load_example("web_agent")
    async with web_agent.demo_server() as server, web_agent.build_agent(server.base_url) as agent:
        yield agent


async def test_run_events_arrive_in_order_and_end_with_one_terminal_event(
    service: Service, demo_agent: Agent
) -> None:
    async with (
        service(demo_agent) as url,
        aiohttp.ClientSession() as http,
        http.get(f"{url}/runs", params={"q": "Weather in Rome?"}) as response,
    ):
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/event-stream")
        assert response.headers["Cache-Control"] == "no-cache"
        frames = await SseReader(response).all()

    events = [data(frame) for frame in frames]
    assert [frame.event for frame in frames] == [e["type"] for e in events]
    assert [frame.id for frame in frames] == [str(e["seq"]) for e in events]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert len({e["run_id"] for e in events}) == 1
    types = [e["type"] for e in events]
    assert types[0] == "run_started"
    assert types[-1] == "run_finished"
    assert sum(t in TERMINAL for t in types) == 1
    assert sorted(e["call"]["name"] for e in events if e["type"] == "tool_succeeded") == [
        "get_weather",
        "local_time",
    ]
    answer = "".join(e["text"] for e in events if e["type"] == "text_delta")
    assert answer == "In Rome it is 21 °C and sunny; local time 14:05."
    assert types.count("text_delta") > 1  # streamed, not sent at the end
    assert events[-1]["result"]["output_text"] == answer
    assert events[-1]["result"]["stop_reason"] == "final_answer"


async def test_client_disconnect_mid_run_cancels_the_run(service: Service) -> None:
    tool_entered = anyio.Event()
    tool_cancelled = anyio.Event()
    cancelled: list[RunCancelled] = []
    run_cancelled = anyio.Event()

    @tool
    async def wait_for_approval(change: str) -> str:
        """Wait until a human approves the change."""
        tool_entered.set()
        try:
            await anyio.Event().wait()  # only cancellation ends this call
        except anyio.get_cancelled_exc_class():
            tool_cancelled.set()
            raise
        return "approved"

    def on_cancelled(event: RunCancelled) -> None:
        cancelled.append(event)
        run_cancelled.set()

    script = [Reply(tool_calls=[("wait_for_approval", {"change": "deploy"})])]
    async with ScriptedServer(script) as server:
        model = OpenAIChatModel(base_url=server.base_url, model="m")
        async with Agent(model, tools=[wait_for_approval]) as agent:
            agent.on(RunCancelled, on_cancelled)
            async with service(agent) as url, aiohttp.ClientSession() as http:
                response = await http.get(f"{url}/runs", params={"q": "Deploy it"})
                reader = SseReader(response)
                await reader.until("tool_started")
                await tool_entered.wait()
                response.close()  # the browser tab goes away: the TCP connection is closed mid-run
                with anyio.fail_after(10):  # a hang guard only: the cancellation is awaited, not timed
                    await tool_cancelled.wait()
                    await run_cancelled.wait()

    assert reader.types()[-1] == "tool_started"
    assert len(cancelled) == 1
    partial = cancelled[0].partial
    assert partial.stop_reason is StopReason.CANCELLED
    assert partial.tool_results[0].error_type == "cancelled"
    assert len(server.requests) == 1


async def test_a_question_is_required(service: Service, demo_agent: Agent) -> None:
    async with (
        service(demo_agent) as url,
        aiohttp.ClientSession() as http,
        http.get(f"{url}/runs") as response,
    ):
        assert response.status == 400


async def test_the_page_is_served(service: Service, demo_agent: Agent) -> None:
    async with (
        service(demo_agent) as url,
        aiohttp.ClientSession() as http,
        http.get(f"{url}/") as response,
    ):
        assert response.status == 200
        assert "text/html" in response.headers["Content-Type"]
        page: Any = await response.text()
    assert "new EventSource(" in page
