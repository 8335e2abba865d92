"""The cancellation contract (DESIGN §5), one test per way of cancelling, each checking all of it:

the model stream and every tool of the run stop, no task is left behind, exactly one ``RunCancelled`` ends the
run with a partial result that keeps finished work and usage, memory stays valid (a synthetic cancelled result
for each call in flight), and other runs in the same loop are untouched.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any, Literal

import anyio
import anyio.lowlevel
import attrs
import pytest
from runtime_support import Recorder, add, assert_memory_valid, outputs, paused_stream, shout

from agentflow.agent.agent import Agent
from agentflow.agent.memory import InMemoryMemory
from agentflow.agent.options import AgentOptions
from agentflow.agent.prompt import AgentModelResult, AgentPrompt
from agentflow.events import (
    ModelRequest,
    RunCancelled,
    StepFinished,
    StepStarted,
    ToolCallRequested,
    ToolFailed,
    ToolStarted,
    ToolSucceeded,
)
from agentflow.model.events import Event, ModelCompleted, TextDelta, UsageReported
from agentflow.model.response import TokenUsage
from agentflow.result import AgentResult, StopReason
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool

Where = Literal["tool", "stream"]


class Scenario:
    """A run that is cut either while a tool hangs (after a sibling tool finished) or mid model stream."""

    def __init__(self, where: Where) -> None:
        self.where = where
        self.cut_point = anyio.Event()
        self.tool_cancelled: list[str] = []
        self.stream_closed: list[str] = []
        self._hang_started = anyio.Event()
        self._fast_done = anyio.Event()
        stream_reached = anyio.Event()

        @tool
        async def fast() -> str:
            """Returns at once."""
            return "fast result"

        @tool
        async def hang() -> str:
            """Never returns; records its cancellation."""
            self._hang_started.set()
            try:
                await anyio.sleep_forever()
            finally:
                self.tool_cancelled.append("cancelled")
            return "never"

        if where == "tool":
            script: list[Any] = [reply(tool_calls=[("c1", "fast", {}), ("c2", "hang", {})], usage=(10, 5))]
        else:
            never = anyio.Event()
            script = [
                reply(tool_calls=[("c1", "fast", {})], usage=(10, 5)),
                paused_stream([TextDelta("partial ")], never, stream_reached, self.stream_closed),
            ]
        self.model = FakeModelClient(script)
        self.memory = InMemoryMemory()
        self.agent = Agent(
            self.model,
            tools=[fast, hang],
            memory=self.memory,
            options=AgentOptions(stream=True, tool_timeout=None),
        )
        self.recorder = Recorder(self.agent)
        self.agent.on(ToolSucceeded, lambda e: self._fast_done.set())

        async def cut_point() -> None:
            if where == "tool":
                await self._hang_started.wait()
                await self._fast_done.wait()
            else:
                await stream_reached.wait()
            self.cut_point.set()

        self._watch = cut_point

    async def watch(self) -> None:
        await self._watch()

    @contextlib.asynccontextmanager
    async def bystander(self) -> AsyncIterator[None]:
        """Another run in the same event loop, in flight across the cancel: it must end normally."""
        gate, called = anyio.Event(), anyio.Event()

        async def other_model(_prompt: AgentPrompt) -> AgentModelResult:
            called.set()
            await gate.wait()
            return reply("other answer", usage=(1, 1))

        other = Agent(FakeModelClient([other_model]))
        results: list[AgentResult] = []

        async def run_other() -> None:
            results.append(await other.run("other"))

        async with anyio.create_task_group() as tg:
            tg.start_soon(run_other)
            await called.wait()
            yield
            gate.set()
        [result] = results
        assert (result.output_text, result.stop_reason) == ("other answer", StopReason.FINAL_ANSWER)

    def is_trigger(self, event: Event) -> bool:
        """Whether the consumer has seen an event after which the run soon reaches its cut point."""
        if self.where == "tool":
            return isinstance(event, ToolStarted | ToolSucceeded)
        return isinstance(event, TextDelta)

    def check(self, reason: StopReason = StopReason.CANCELLED) -> None:
        terminals = self.recorder.terminals()
        assert len(terminals) == 1, self.recorder.names()
        [terminal] = terminals
        assert isinstance(terminal, RunCancelled)
        partial = terminal.partial
        assert partial.stop_reason is reason
        assert partial.usage == TokenUsage(10, 5, 15)  # the finished model call's usage is kept
        assert partial.tool_results[0].output == "fast result"  # finished work is kept
        if self.where == "tool":
            assert self.tool_cancelled == ["cancelled"]
            assert [(r.call_id, r.ok, r.error_type) for r in partial.tool_results] == [
                ("c1", True, None),
                ("c2", False, "cancelled"),
            ]
            assert [c for c, _ in outputs(self.memory.items)] == ["c1", "c2"]
            assert partial.steps == 0
        else:
            assert self.stream_closed == ["closed"]
            assert partial.steps == 1  # the interrupted second step is not counted
            # The text streamed before the cut is kept ("stop generating"), but not in memory by default.
            assert partial.output_text == "partial "
            assert not [i for i in self.memory.items if i.get("role") == "assistant" and "content" in i]
        assert self.model.streams_open == 0
        assert_memory_valid(self.memory.items)
        assert_memory_valid(partial.new_items)
        assert self.recorder.events[-1] is terminal


def task_count() -> int:
    return len(asyncio.all_tasks())


@pytest.mark.parametrize("where", ["tool", "stream"])
async def test_run_cancel_from_the_consumer(where: Where) -> None:
    s = Scenario(where)
    before = task_count()
    seen: list[Event] = []

    async with s.bystander(), anyio.create_task_group() as tg:
        tg.start_soon(s.watch)
        async with s.agent.stream("go") as run:
            async for event in run:
                seen.append(event)
                if s.is_trigger(event) and not run.ctx.cancel_scope.cancel_called:
                    await s.cut_point.wait()
                    await run.cancel()
            # The iteration ends with the RunCancelled event, delivered to this consumer too.
        result = run.result

    assert isinstance(seen[-1], RunCancelled)
    assert result.stop_reason is StopReason.CANCELLED
    s.check()
    assert task_count() == before


async def _cut_then_cancel(s: Scenario, run: Any) -> None:
    await s.cut_point.wait()
    await run.cancel()


@pytest.mark.parametrize("where", ["tool", "stream"])
async def test_run_cancel_from_another_task(where: Where) -> None:
    s = Scenario(where)
    before = task_count()

    async with s.bystander(), anyio.create_task_group() as tg:
        tg.start_soon(s.watch)
        async with s.agent.stream("go") as run:
            tg.start_soon(_cut_then_cancel, s, run)
            result = await run.wait()

    assert result.stop_reason is StopReason.CANCELLED
    s.check()
    assert task_count() == before


@pytest.mark.parametrize("where", ["tool", "stream"])
async def test_breaking_out_of_the_iteration_and_leaving_the_block(where: Where) -> None:
    s = Scenario(where)
    before = task_count()

    async with s.bystander(), anyio.create_task_group() as tg:
        tg.start_soon(s.watch)
        async with s.agent.stream("go") as run:
            async for event in run:
                if s.is_trigger(event):
                    await s.cut_point.wait()
                    break

    assert run.done
    assert run.result.stop_reason is StopReason.CANCELLED
    s.check()
    assert task_count() == before


@pytest.mark.parametrize("where", ["tool", "stream"])
async def test_an_exception_in_the_block_cancels_the_run_and_propagates_unwrapped(where: Where) -> None:
    s = Scenario(where)

    async def consume() -> None:
        async with s.agent.stream("go") as run:
            async for event in run:
                if s.is_trigger(event):
                    await s.cut_point.wait()
                    raise KeyError("consumer bug")

    async with s.bystander(), anyio.create_task_group() as tg:
        tg.start_soon(s.watch)
        with pytest.raises(KeyError, match="consumer bug"):
            await consume()

    s.check()


@pytest.mark.parametrize("where", ["tool", "stream"])
async def test_cancelling_the_awaiting_task_with_a_cancel_scope(where: Where) -> None:
    s = Scenario(where)
    before = task_count()
    finished: list[str] = []

    async def runner() -> None:
        await s.agent.run("go")
        finished.append("returned")  # never reached: the cancellation propagates

    async with s.bystander(), anyio.create_task_group() as tg:
        tg.start_soon(s.watch)
        tg.start_soon(runner)
        await s.cut_point.wait()
        tg.cancel_scope.cancel()

    assert finished == []
    s.check()
    assert task_count() == before


@pytest.mark.parametrize("where", ["tool", "stream"])
async def test_cancelling_the_awaiting_asyncio_task(where: Where) -> None:
    s = Scenario(where)
    before = task_count()

    async with s.bystander(), anyio.create_task_group() as tg:
        tg.start_soon(s.watch)
        task = asyncio.create_task(s.agent.run("go"))
        await s.cut_point.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    s.check()
    assert task_count() == before


@pytest.mark.parametrize("where", ["tool", "stream"])
async def test_deadline_cancels_with_stop_reason_deadline(where: Where) -> None:
    s = Scenario(where)
    s.agent.options = AgentOptions(stream=True, tool_timeout=None, timeout=0.2)
    before = task_count()

    async with s.bystander():
        with anyio.fail_after(10):  # a guard against a hang; the run ends through its own deadline
            result = await s.agent.run("go")

    assert result.stop_reason is StopReason.DEADLINE
    s.check(StopReason.DEADLINE)
    assert task_count() == before


async def test_a_cancel_from_an_outer_scope_still_ends_every_subscription_with_run_cancelled() -> None:
    # No callback on the run, so its ending publishes without a shield: the terminal event must still land
    # although every scope around the run's task is cancelled.
    started = anyio.Event()

    @tool
    async def hang() -> str:
        """Never returns."""
        started.set()
        await anyio.sleep_forever()
        return "never"

    agent = Agent(FakeModelClient([reply(tool_calls=[("hang", {})])]), tools=[hang])
    run = agent.stream("go")
    other = run.bus.subscribe()
    with anyio.CancelScope() as outer:
        async with run:
            await started.wait()
            outer.cancel()
            await anyio.sleep_forever()
    with anyio.fail_after(10):  # a lost terminal event would leave the subscription open
        events = [event async for event in other]
    assert isinstance(events[-1], RunCancelled)
    assert next(e for e in events if isinstance(e, ToolFailed)).result.error_type == "cancelled"
    assert run.result.stop_reason is StopReason.CANCELLED


async def test_cancel_before_the_run_starts_still_ends_with_one_run_cancelled() -> None:
    model = FakeModelClient([reply("never")])
    agent = Agent(model)
    recorder = Recorder(agent)
    run = agent.stream("go")
    await run.cancel()

    async with run:
        events = [e async for e in run]

    assert [type(e).__name__ for e in events] == ["RunStarted", "RunCancelled"]
    assert run.result.stop_reason is StopReason.CANCELLED
    assert model.prompts == []
    assert len(recorder.terminals()) == 1


async def test_a_subscriber_that_stopped_reading_neither_holds_up_a_cancel_nor_misses_the_end() -> None:
    hang_started = anyio.Event()

    @tool
    async def hang() -> str:
        """Never returns."""
        hang_started.set()
        await anyio.sleep_forever()
        return "never"

    memory = InMemoryMemory()
    model = FakeModelClient([reply(tool_calls=[("c1", "hang", {})], usage=(3, 2))])
    agent = Agent(model, tools=[hang], memory=memory, options=AgentOptions(tool_timeout=None))
    run = agent.stream("go")
    # A second consumer that reads nothing: its one-slot buffer is full once the tool has started.
    stalled = run.bus.subscribe((ToolStarted, ToolFailed, RunCancelled), buffer=1)

    with anyio.fail_after(5):  # a hang guard: a clean-up waiting on the stalled consumer would take 10 s
        async with run:
            await hang_started.wait()
            await run.cancel()
            result = await run.wait()

    assert result.stop_reason is StopReason.CANCELLED
    received = [e async for e in stalled]  # read at last: everything, the synthetic result and the end
    assert [type(e) for e in received] == [ToolStarted, ToolFailed, RunCancelled]
    assert received[1].result.error_type == "cancelled"
    assert_memory_valid(memory.items)


POINTS: list[type[Event]] = [
    StepStarted,
    ModelRequest,
    TextDelta,
    ModelCompleted,
    ToolCallRequested,
    ToolStarted,
    ToolSucceeded,
    StepFinished,
]
# Every point on both model paths, and the streamed usage report (a blocking call has none).
CUTS = [
    pytest.param(p, s, id=f"{p.__name__}-{'stream' if s else 'blocking'}")
    for p in POINTS
    for s in (True, False)
]
CUTS.append(pytest.param(UsageReported, True, id="UsageReported-stream"))


@pytest.mark.parametrize(("point", "stream"), CUTS)
async def test_a_cancel_at_any_point_of_a_step_keeps_memory_valid_and_ends_with_one_run_cancelled(
    point: type[Event], stream: bool
) -> None:
    first = reply("Let me add.", tool_calls=[("c1", "add", {"a": 1, "b": 2}), ("c2", "shout", {"text": "x"})])
    model = FakeModelClient([attrs.evolve(first, usage=TokenUsage(10, 5, 15)), reply("3", usage=(1, 1))])
    memory = InMemoryMemory()
    agent = Agent(model, tools=[add, shout], memory=memory, options=AgentOptions(stream=stream))
    recorder = Recorder(agent)
    run = agent.stream("go")

    async def cancel_right_here(_event: Event) -> None:
        # Awaited inside ``publish``: the checkpoint lands the cancellation at exactly this point of the step.
        run.ctx.cancel_scope.cancel()
        await anyio.lowlevel.checkpoint()

    run.bus.on(point, cancel_right_here)

    async with run:
        events = [event async for event in run]

    [terminal] = recorder.terminals()
    assert isinstance(terminal, RunCancelled)
    assert events[-1] == terminal
    partial = terminal.partial
    assert partial.stop_reason is StopReason.CANCELLED
    assert_memory_valid(memory.items)
    assert memory.items[1:] == partial.new_items[1:]  # the partial result tells exactly what memory holds
    # Finished work is kept: every result a consumer saw is in the partial result and in memory.
    succeeded = {e.call.id: e.result for e in recorder.of(ToolSucceeded)}
    assert {r.call_id: r for r in partial.tool_results if r.ok} == succeeded
    assert {c for c, _ in outputs(memory.items)} == {r.call_id for r in partial.tool_results}
    # And so is the usage of the model call once it was spent: the server reported it (streaming), or the
    # call returned (blocking: its whole text is published after it returned).
    spent = recorder.of((UsageReported, ModelCompleted)) or (not stream and recorder.of(TextDelta))
    assert partial.usage == (TokenUsage(10, 5, 15) if spent else TokenUsage())
    # A model turn that completed is kept too, also when the cancel landed while its events were published.
    if recorder.of(ModelCompleted) or (not stream and recorder.of(TextDelta)):
        assert partial.output_text == "Let me add."
        assert [c.id for c in partial.tool_calls] == ["c1", "c2"]
    # Every call that got a result event was announced first, exactly once (a kept turn's calls too).
    requested = {e.call.id: e.seq for e in recorder.of(ToolCallRequested)}
    assert len(requested) == len(recorder.of(ToolCallRequested))
    for done in recorder.of((ToolSucceeded, ToolFailed)):
        assert requested.get(done.call.id, done.seq) < done.seq
