"""The cancellation contract holds for CodeAct as for ReAct: cancelling a run kills its sandbox process, ends
the run with exactly one RunCancelled whose partial result keeps finished work, and leaves memory valid (a
CODE_ERROR for the step cut short, a cancelled result for the tool call in flight)."""

from __future__ import annotations

from typing import Any

import anyio
from codeact_support import (
    Boxes,
    Recorder,
    assert_codeact_memory_valid,
    code,
    codeact_agent,
    gone,
    says,
    system_texts,
)

from agentflow.agent.memory import InMemoryMemory
from agentflow.agent.options import AgentOptions
from agentflow.events import CodeExecuted, RunCancelled, RunFailed, RunFinished, ToolFailed, ToolSucceeded
from agentflow.result import StopReason
from agentflow.runtimes.codeact import CodeActOptions
from agentflow.sandbox import ExecutionLimits
from agentflow.tools import tool

TERMINAL = (RunFinished, RunFailed, RunCancelled)
SPIN = "mark()\nwhile True:\n    pass"
LONG = ExecutionLimits(wall_time=60)  # the run is cut long before the sandbox's own kill


class Waiting:
    """Tools for code that blocks: ``hang`` waits forever (recording its cancellation), ``mark`` returns."""

    def __init__(self) -> None:
        self.cancelled: list[str] = []
        self.alive_at_cut: list[bool] = []

        @tool
        async def hang() -> str:
            """Waits forever."""
            try:
                await anyio.sleep_forever()
            finally:
                self.cancelled.append("hang")
            return "never"

        @tool
        async def mark() -> str:
            """Returns at once."""
            return "marked"

        self.tools = [hang, mark]


def check_cancelled(recorder: Recorder, memory: InMemoryMemory, boxes: Boxes, reason: StopReason) -> Any:
    terminals = recorder.of(TERMINAL)
    assert len(terminals) == 1, recorder.names()
    [terminal] = terminals
    assert isinstance(terminal, RunCancelled)
    assert recorder.events[-1] is terminal
    partial = terminal.partial
    assert partial.stop_reason is reason
    assert partial.usage.total_tokens == 15  # the finished model call's usage is kept
    [box] = boxes.made
    assert box.pids == ()
    assert_codeact_memory_valid(memory.items)
    assert_codeact_memory_valid(partial.new_items)
    [executed] = recorder.of(CodeExecuted)
    assert not executed.ok
    return partial


async def test_run_cancel_while_code_waits_on_a_tool_kills_the_process_and_settles_the_call() -> None:
    waiting, boxes, memory = Waiting(), Boxes(), InMemoryMemory()
    options = CodeActOptions(executor=boxes, limits=LONG)
    async with codeact_agent([says(code("hang()"))], codeact=options, tools=waiting.tools, memory=memory) as (
        agent,
        _,
    ):
        recorder = Recorder(agent)
        pids: list[int] = []
        with anyio.fail_after(20):
            async with agent.stream("Wait.") as run:
                async for event in run:
                    if type(event).__name__ == "ToolStarted":
                        pids.extend(boxes.made[0].pids)
                        waiting.alive_at_cut.extend(not gone(pid) for pid in pids)
                        await run.cancel()
    partial = check_cancelled(recorder, memory, boxes, StopReason.CANCELLED)
    assert pids
    assert all(waiting.alive_at_cut)
    assert all(gone(pid) for pid in pids)  # killed, and reaped
    assert waiting.cancelled == ["hang"]
    assert [(r.call_id, r.ok, r.error_type) for r in partial.tool_results] == [
        ("code_0_0", False, "cancelled")
    ]
    assert [e.call.id for e in recorder.of(ToolFailed)] == ["code_0_0"]
    assert system_texts(memory.items) == [
        'CODE_ERROR: {"error":"the run was cancelled before this code step finished"}'
    ]


async def test_cancelling_the_awaiting_task_while_code_spins_kills_the_process() -> None:
    waiting, boxes, memory = Waiting(), Boxes(), InMemoryMemory()
    options = CodeActOptions(executor=boxes, limits=LONG)
    async with codeact_agent([says(code(SPIN))], codeact=options, tools=waiting.tools, memory=memory) as (
        agent,
        _,
    ):
        recorder = Recorder(agent)
        pids: list[int] = []
        with anyio.fail_after(20), anyio.CancelScope() as scope:

            def cut(_event: ToolSucceeded) -> None:  # the code now spins
                pids.extend(boxes.made[0].pids)
                scope.cancel()

            agent.on(ToolSucceeded, cut)
            await agent.run("Spin.")
    assert scope.cancelled_caught
    partial = check_cancelled(recorder, memory, boxes, StopReason.CANCELLED)
    assert pids
    assert all(gone(pid) for pid in pids)
    assert [(r.output, r.ok) for r in partial.tool_results] == [("marked", True)]  # finished work is kept


async def test_the_run_deadline_stops_spinning_code_and_kills_the_process() -> None:
    waiting, boxes, memory = Waiting(), Boxes(), InMemoryMemory()
    options = CodeActOptions(executor=boxes, limits=LONG)
    async with codeact_agent(
        [says(code(SPIN))],
        codeact=options,
        tools=waiting.tools,
        memory=memory,
        options=AgentOptions(timeout=1.0),
    ) as (agent, _):
        recorder = Recorder(agent)
        with anyio.fail_after(20):
            result = await agent.run("Spin.")
    assert result.stop_reason is StopReason.DEADLINE
    check_cancelled(recorder, memory, boxes, StopReason.DEADLINE)
    assert system_texts(memory.items) == [
        'CODE_ERROR: {"error":"the run\'s time limit (1.0 s) was reached before this code step finished"}'
    ]


async def test_a_cancel_while_a_code_turn_is_published_leaves_it_with_its_code_error() -> None:
    # The model's code turn has completed but is not handled yet (a slow callback holds its ModelCompleted)
    # when the run is cancelled: memory keeps the turn and says the code never ran.
    from agentflow.model.events import ModelCompleted

    async with codeact_agent([says(code("1 + 1"))], codeact=CodeActOptions(react=True)) as (agent, _):
        in_callback = anyio.Event()

        async def slow(_event: object) -> None:
            in_callback.set()
            await anyio.sleep_forever()

        agent.on(ModelCompleted, slow)
        with anyio.fail_after(30):
            async with agent.stream("two?") as run:
                await in_callback.wait()
                await run.cancel()
                await run.wait()

    result = run.result
    assert result.stop_reason is StopReason.CANCELLED
    assert result.output_text == ""
    assert system_texts(result.new_items)[-1].startswith("CODE_ERROR:")
    assert_codeact_memory_valid(result.new_items)
