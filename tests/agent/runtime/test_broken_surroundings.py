"""Runs whose surroundings fail them: a memory refusing writes, and a ``CancelledError`` that is not a cancel.

Whatever breaks, a run still ends with exactly one terminal event, the stream's iteration ends, and what the
run finished is kept. A ``CancelledError`` that comes out of something a tool or callback awaited (a task
the application cancelled elsewhere) is that tool's or callback's failure, not a cancel of the run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import anyio
import pytest
from runtime_support import TERMINAL, Recorder

from agentflow.agent.agent import Agent
from agentflow.agent.memory import InMemoryMemory
from agentflow.events import RunCancelled, RunFailed, RunFinished, ToolFailed, ToolStarted
from agentflow.result import StopReason
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool


class RefusingMemory(InMemoryMemory):
    """A memory backend that has gone away by the time tool results are written."""

    def extend(self, items: Iterable[Any]) -> None:
        items = list(items)
        if any(isinstance(i, dict) and i.get("type") == "function_call_output" for i in items):
            raise RuntimeError("memory backend unavailable")
        super().extend(items)


@tool
async def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


async def test_a_memory_refusing_tool_results_fails_the_run_with_one_terminal_event() -> None:
    agent = Agent(
        FakeModelClient([reply(tool_calls=[("lookup", {"key": "a"})]), reply("done")]),
        tools=[lookup],
        memory=RefusingMemory,
    )
    recorder = Recorder(agent)

    with pytest.raises(RuntimeError, match="memory backend unavailable"):
        await agent.run("go")

    [terminal] = recorder.terminals()
    assert isinstance(terminal, RunFailed)
    assert recorder.events[-1] is terminal
    assert terminal.partial is not None
    assert [r.output for r in terminal.partial.tool_results] == ["value of a"]  # kept, memory or not


async def test_a_memory_refusing_writes_still_ends_a_stream() -> None:
    agent = Agent(
        FakeModelClient([reply(tool_calls=[("lookup", {"key": "a"})]), reply("done")]),
        tools=[lookup],
        memory=RefusingMemory,
    )

    with anyio.fail_after(10):
        async with agent.stream("go") as run:
            events = [e async for e in run]

    assert [type(e) for e in events if isinstance(e, TERMINAL)] == [RunFailed]
    assert isinstance(events[-1], RunFailed)
    assert isinstance(run.error, RuntimeError)


async def test_a_memory_refusing_the_synthetic_results_of_a_cancel_still_ends_the_run() -> None:
    started = anyio.Event()

    @tool
    async def hang() -> str:
        """Never returns."""
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    agent = Agent(FakeModelClient([reply(tool_calls=[("hang", {})])]), tools=[hang], memory=RefusingMemory)

    with anyio.fail_after(10):
        async with agent.stream("go") as run:
            events = []
            async for event in run:
                events.append(event)
                if isinstance(event, ToolStarted):
                    await started.wait()
                    await run.cancel()

    # Memory could not be completed, so the run did not end cleanly: RunFailed, after the call's ToolFailed.
    assert [type(e).__name__ for e in events[-2:]] == ["ToolFailed", "RunFailed"]
    assert isinstance(run.error, RuntimeError)
    assert run.partial is not None
    assert [r.error_type for r in run.partial.tool_results] == ["cancelled"]


def _cancelled_elsewhere() -> asyncio.Task[str]:
    """A task the application cancels (say, a superseded refresh) that a tool or a callback awaits."""

    async def refresh() -> str:
        await asyncio.sleep(3600)
        return "fresh"

    task = asyncio.get_running_loop().create_task(refresh())
    task.cancel()
    return task


@pytest.mark.parametrize("listening", [False, True], ids=["nobody-listens", "listened"])
@pytest.mark.parametrize("calls", [["cached"], ["other", "cached"]], ids=["one-call", "second-of-two"])
async def test_a_tool_awaiting_something_cancelled_elsewhere_fails_alone(
    calls: list[str], listening: bool
) -> None:
    shared = _cancelled_elsewhere()
    other_may_finish = anyio.Event()

    @tool
    async def cached(key: str) -> str:
        """Read through the shared refresh."""
        other_may_finish.set()
        return await shared

    @tool
    async def other() -> str:
        """Another call of the step: it waits, so ``cached`` runs beside it in a task of its own."""
        await other_may_finish.wait()
        return "other ok"

    script = [reply(tool_calls=[(name, {"key": "k"} if name == "cached" else {}) for name in calls])]
    agent = Agent(FakeModelClient([*script, reply("answer")]), tools=[cached, other])
    recorder = Recorder(agent) if listening else None

    result = await agent.run("go")

    assert result.stop_reason is StopReason.FINAL_ANSWER
    by_name = {r.name: r for r in result.tool_results}
    assert by_name["cached"].error_type == "exception"
    assert "CancelledError" in (by_name["cached"].error or "")
    if "other" in by_name:
        assert by_name["other"].ok
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]
    if recorder is not None:
        assert [type(e) for e in recorder.terminals()] == [RunFinished]
        assert len(recorder.of(ToolFailed)) == 1


async def test_a_real_cancel_during_a_tool_still_cancels_the_run() -> None:
    started = anyio.Event()

    @tool
    async def slow() -> str:
        """Waits."""
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    agent = Agent(FakeModelClient([reply(tool_calls=[("slow", {})])]), tools=[slow])
    recorder = Recorder(agent)
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.run, "go")
            await started.wait()
            scope.cancel()
    assert [type(e) for e in recorder.terminals()] == [RunCancelled]


async def test_an_async_callback_awaiting_something_cancelled_elsewhere_is_a_callback_failure() -> None:
    agent = Agent(FakeModelClient([reply("fine")]))
    failures: list[str] = []

    async def forward(_event: object) -> None:
        await _cancelled_elsewhere()  # the connection it forwards to went away

    agent.on(RunFinished, forward)
    recorder = Recorder(agent)
    async with agent.stream("go") as run:
        await run.wait()
        failures = [f.event_type for f in run.bus.callback_failures]

    assert run.result.output_text == "fine"
    assert [type(e) for e in recorder.terminals()] == [RunFinished]
    assert failures == ["RunFinished"]


@pytest.mark.parametrize("on", [ToolFailed, RunCancelled], ids=["tool-failed", "run-cancelled"])
async def test_a_callback_failing_so_during_the_ending_of_a_run_cancelled_from_outside(on: type[Any]) -> None:
    # The task is being cancelled, but the ending runs shielded: a CancelledError from what the callback
    # awaited is that callback's failure, and every later callback still gets the run's last events.
    started = anyio.Event()

    @tool
    async def slow() -> str:
        """Waits."""
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def forward(_event: object) -> None:
        await _cancelled_elsewhere()

    agent = Agent(FakeModelClient([reply(tool_calls=[("slow", {})])]), tools=[slow])
    agent.on(on, forward)
    recorder = Recorder(agent)
    with anyio.fail_after(10), anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.run, "go")
            await started.wait()
            scope.cancel()

    assert [type(e) for e in recorder.events[-2:]] == [ToolFailed, RunCancelled]
    assert len(recorder.terminals()) == 1
