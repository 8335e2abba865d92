"""A ReAct agent end to end: the real OpenAIChatModel and OpenAIResponsesModel against ScriptedServer.

Each protocol, streamed and not: two tools called concurrently (each waits until both have started), the
results fed back, the final answer; events mid-stream; and a cancel mid-stream that closes the connection.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

import anyio
import pytest

from agentflow.agent.agent import Agent
from agentflow.agent.chat_client import ChatModelClient
from agentflow.agent.options import AgentOptions
from agentflow.agent.responses_client import ResponsesModelClient
from agentflow.events import (
    RunCancelled,
    RunFinished,
    StepFinished,
    ToolCallRequested,
    ToolStarted,
    ToolSucceeded,
)
from agentflow.model.events import Event, ModelCompleted, ModelRetry, TextDelta, ToolCallReady
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.result import StopReason
from agentflow.testing import Fault, Reply, ScriptedServer
from agentflow.testing.tracking import TrackingTransport
from agentflow.tools import tool

Protocol = Literal["chat", "responses"]
PROTOCOLS: list[Protocol] = ["chat", "responses"]


def make_tools() -> list[Any]:
    both_started = anyio.Event()
    started: list[str] = []

    @tool
    async def get_weather(city: str) -> str:
        """Current weather of a city."""
        started.append(city)
        if len(started) == 2:
            both_started.set()
        await both_started.wait()  # deadlocks unless both calls run at the same time
        return f"sunny in {city}"

    @tool
    async def get_time(city: str) -> str:
        """Local time of a city."""
        started.append(city)
        if len(started) == 2:
            both_started.set()
        await both_started.wait()
        return f"noon in {city}"

    return [get_weather, get_time]


def make_model(protocol: Protocol, server: ScriptedServer, transport: TrackingTransport) -> Any:
    if protocol == "chat":
        return OpenAIChatModel(
            base_url=server.base_url, api_key="sk-test", model="gpt-test", transport=transport
        )
    return OpenAIResponsesModel(
        base_url=server.base_url, api_key="sk-test", model="gpt-test", transport=transport
    )


@asynccontextmanager
async def agent_on(
    protocol: Protocol, turns: list[Any], **kwargs: Any
) -> AsyncIterator[tuple[Agent, ScriptedServer, TrackingTransport]]:
    transport = TrackingTransport()
    async with ScriptedServer(turns) as server:
        agent = Agent(make_model(protocol, server, transport), tools=make_tools(), **kwargs)
        try:
            yield agent, server, transport
        finally:
            await agent.aclose()


TOOL_TURN = Reply(
    tool_calls=[("get_weather", {"city": "Paris"}), ("get_time", {"city": "Paris"})], usage=(50, 20)
)
ANSWER_TURN = Reply(text="It is sunny and noon in Paris.", usage=(80, 10), chunk_size=6)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_react_agent_runs_two_tools_concurrently_and_answers(protocol: Protocol) -> None:
    async with agent_on(protocol, [TOOL_TURN, ANSWER_TURN], system_prompt="Be brief.") as (agent, server, _):
        expected = ChatModelClient if protocol == "chat" else ResponsesModelClient
        assert isinstance(agent.model_client, expected)
        with anyio.fail_after(10):  # a deadlock guard only
            result = await agent.run("Weather and time in Paris?")

    assert result.stop_reason is StopReason.FINAL_ANSWER
    assert result.output_text == "It is sunny and noon in Paris."
    assert [r.output for r in result.tool_results] == ["sunny in Paris", "noon in Paris"]
    assert result.usage.total_tokens == 70 + 90
    first, second = (r.body for r in server.requests)
    assert first.get("stream") is not True  # agent.run() makes plain calls
    if protocol == "chat":
        assert first["messages"][0] == {
            "role": "system",
            "content": "Be brief.\n\nUse tools when necessary. Return concise final answers.",
        }
        assert [t["function"]["name"] for t in first["tools"]] == ["get_weather", "get_time"]
        assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool", "tool"]
        call_ids = [c["id"] for c in second["messages"][2]["tool_calls"]]
        assert [m["tool_call_id"] for m in second["messages"][3:]] == call_ids
        assert [m["content"] for m in second["messages"][3:]] == ["sunny in Paris", "noon in Paris"]
    else:
        assert first["instructions"] == "Be brief.\n\nUse tools when necessary. Return concise final answers."
        assert [t["name"] for t in first["tools"]] == ["get_weather", "get_time"]
        kinds = [item.get("type") for item in second["input"]]
        assert kinds[-4:] == [
            "function_call",
            "function_call",
            "function_call_output",
            "function_call_output",
        ]
        calls = [i["call_id"] for i in second["input"] if i.get("type") == "function_call"]
        outs = [i["call_id"] for i in second["input"] if i.get("type") == "function_call_output"]
        assert calls == outs
    assert [c.id for c in result.tool_calls] == [r.call_id for r in result.tool_results]


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_streamed_run_delivers_typed_events_in_order(protocol: Protocol) -> None:
    async with agent_on(protocol, [TOOL_TURN, ANSWER_TURN]) as (agent, server, transport):
        events: list[Event] = []
        with anyio.fail_after(10):
            async with agent.stream("Weather and time in Paris?") as run:
                async for event in run:
                    events.append(event)

    assert all(r.body.get("stream") is True for r in server.requests)
    names = [type(e).__name__ for e in events]
    assert names[0] == "RunStarted"
    assert names[-1] == "RunFinished"
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    ready = [i for i, e in enumerate(events) if isinstance(e, ToolCallReady)]
    requested = [i for i, e in enumerate(events) if isinstance(e, ToolCallRequested)]
    completed = [i for i, e in enumerate(events) if isinstance(e, ModelCompleted)]
    assert len(ready) == 2
    assert len(requested) == 2
    assert max(ready) < completed[0] < min(requested)  # tool calls surface mid-stream, before completion
    started = [e for e in events if isinstance(e, ToolStarted)]
    succeeded = [e for e in events if isinstance(e, ToolSucceeded)]
    assert len(started) == 2
    assert len(succeeded) == 2
    # Both tools started before either finished: they ran concurrently.
    assert max(events.index(e) for e in started) < min(events.index(e) for e in succeeded)
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 1
    assert "".join(deltas) == "It is sunny and noon in Paris."
    assert [e.step for e in events if isinstance(e, StepFinished)] == [0, 1]
    assert isinstance(events[-1], RunFinished)
    assert run.result.output_text == "It is sunny and noon in Paris."
    assert all(r.closed for r in transport.responses)


LONG = Reply(text="one two three four five six seven eight nine ten eleven twelve", chunk_size=4)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_text_arrives_mid_stream_and_cancel_closes_the_connection(protocol: Protocol) -> None:
    # The server sends a few events and then stalls: whatever the consumer sees came mid-stream.
    async with agent_on(protocol, [Fault.stall(after_chunks=5, reply=LONG), Reply(text="still works")]) as (
        agent,
        server,
        transport,
    ):
        seen: list[str] = []
        terminal: list[Event] = []
        with anyio.fail_after(10):
            async with agent.stream("Count.") as run:
                async for event in run:
                    if isinstance(event, TextDelta):
                        seen.append(event.text)
                        await run.cancel()
                    elif isinstance(event, RunCancelled | RunFinished):
                        terminal.append(event)

        assert seen
        assert "".join(seen) in LONG.text
        [cancelled] = terminal
        assert isinstance(cancelled, RunCancelled)
        assert cancelled.partial.stop_reason is StopReason.CANCELLED
        [response] = transport.responses
        assert response.closed
        assert not response.finished
        assert response.socket_released  # the connection was closed, not left to the stalled server

        # The model still works afterwards (no broken connection left in the pool).
        with anyio.fail_after(10):
            again = await agent.run("Again?")
        assert again.output_text == "still works"
        assert len(server.requests) == 2


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_deadline_interrupts_a_stalled_model_call(protocol: Protocol) -> None:
    turns = [Fault.stall(after_chunks=2, reply=LONG)]
    async with agent_on(protocol, turns, options=AgentOptions(timeout=0.3, stream=True)) as (
        agent,
        _,
        transport,
    ):
        with anyio.fail_after(10):  # the run must end through its own deadline, long before this
            result = await agent.run("Count.")

    assert result.stop_reason is StopReason.DEADLINE
    [response] = transport.responses
    assert response.closed
    assert not response.finished
    assert response.socket_released


Way = Literal["run.cancel", "break", "exception", "cancel scope", "asyncio task"]


@pytest.mark.parametrize("way", ["run.cancel", "break", "exception", "cancel scope", "asyncio task"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_every_way_of_cancelling_mid_stream_releases_the_connection(
    protocol: Protocol, way: Way
) -> None:
    turns = [Fault.stall(after_chunks=5, reply=LONG)]
    tasks_before = len(asyncio.all_tasks())
    async with agent_on(protocol, turns, options=AgentOptions(stream=True)) as (agent, _, transport):
        terminals: list[Event] = []
        agent.on((RunCancelled, RunFinished), terminals.append)
        text_seen = anyio.Event()
        agent.on(TextDelta, lambda _event: text_seen.set())

        with anyio.fail_after(10):  # a hang guard only
            if way in ("run.cancel", "break", "exception"):
                with contextlib.suppress(LookupError):
                    async with agent.stream("Count.") as run:
                        async for event in run:
                            if not isinstance(event, TextDelta):
                                continue
                            if way == "run.cancel":
                                await run.cancel()
                            elif way == "break":
                                break
                            else:
                                raise LookupError("the consumer failed")
            elif way == "cancel scope":
                async with anyio.create_task_group() as tg:
                    tg.start_soon(agent.run, "Count.")
                    await text_seen.wait()
                    tg.cancel_scope.cancel()
            else:
                task = asyncio.create_task(agent.run("Count."))
                await text_seen.wait()
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task

        [terminal] = terminals
        assert isinstance(terminal, RunCancelled)
        assert terminal.partial.stop_reason is StopReason.CANCELLED
        [response] = transport.responses
        assert response.closed
        assert not response.finished
        assert response.socket_released
    assert len(asyncio.all_tasks()) == tasks_before  # the server's tasks are gone too, once it stopped


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "stream"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_retried_model_call_shows_model_retry_whether_streamed_or_not(
    protocol: Protocol, streamed: bool
) -> None:
    turns = [Fault.status(429, headers={"retry-after-ms": "1"}), Reply(text="fine")]
    async with agent_on(protocol, turns) as (agent, server, _):
        events: list[Event] = []
        agent.on(None, events.append)
        with anyio.fail_after(10):
            if streamed:
                async with agent.stream("hi") as run:
                    await run.wait()
                result = run.result
            else:
                result = await agent.run("hi")

    assert result.output_text == "fine"
    assert len(server.requests) == 2
    names = [type(e).__name__ for e in events]
    assert names.index("ModelRequest") < names.index("ModelRetry") < names.index("ModelCompleted")
    [retry] = [e for e in events if isinstance(e, ModelRetry)]
    assert (retry.attempt, retry.run_id, retry.step) == (2, result.run_id, 0)  # the attempt about to be made
    assert "429" in retry.reason


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "stream"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_run_over_http_is_freed_at_once_without_the_garbage_collector(
    protocol: Protocol, streamed: bool
) -> None:
    # The HTTP library's tasks copy the context of the call that started them and a pooled connection keeps
    # its last request's: nothing the run puts in that context may lead back to the run (a cycle through
    # the model's session would keep every run alive until the collector runs).
    import gc

    from agentflow.runtimes.context import RunContext

    async with agent_on(protocol, [TOOL_TURN, ANSWER_TURN]) as (agent, _, _):
        gc.collect()
        gc.disable()
        try:
            with anyio.fail_after(10):
                if streamed:
                    async with agent.stream("Weather and time in Paris?") as run:
                        await run.wait()
                    del run
                else:
                    await agent.run("Weather and time in Paris?")
            alive = [o for o in gc.get_objects() if isinstance(o, RunContext)]
        finally:
            gc.enable()
    assert alive == []
