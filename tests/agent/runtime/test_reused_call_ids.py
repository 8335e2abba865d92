"""Servers that number each turn's tool calls from ``call_0`` again (some OpenAI-compatible ones do): a call
is announced and ended once per step even when an earlier step had a call with the same id, also when a
cancel cuts the step short and the run's ending settles its calls."""

from __future__ import annotations

import anyio
import anyio.lowlevel
from runtime_support import outputs

from agentflow.agent.agent import Agent
from agentflow.agent.memory import InMemoryMemory
from agentflow.events import RunCancelled, ToolCallRequested, ToolFailed, ToolSucceeded
from agentflow.model.events import Event, ModelCompleted
from agentflow.model.messages import ToolCall
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool


@tool
def lookup(q: str) -> str:
    """Look something up."""
    return f"result for {q}"


def turns() -> FakeModelClient:
    return FakeModelClient(
        [
            reply(tool_calls=[ToolCall("call_0", "lookup", '{"q": "a"}')]),
            reply(tool_calls=[ToolCall("call_0", "lookup", '{"q": "b"}')]),
            reply("done"),
        ]
    )


def ends_per_step(events: list[Event]) -> dict[int, tuple[int, int]]:
    counts: dict[int, tuple[int, int]] = {}
    for event in events:
        requested, ended = counts.get(event.step, (0, 0))
        if isinstance(event, ToolCallRequested):
            counts[event.step] = (requested + 1, ended)
        elif isinstance(event, ToolSucceeded | ToolFailed):
            counts[event.step] = (requested, ended + 1)
    return counts


async def test_each_step_announces_and_ends_its_own_call_0() -> None:
    events: list[Event] = []
    result = await Agent(turns(), tools=[lookup]).run("go", on=[(None, events.append)])
    assert result.output_text == "done"
    assert ends_per_step(events) == {0: (1, 1), 1: (1, 1)}


async def test_a_cancel_while_the_second_turn_is_published_announces_its_call_before_ending_it() -> None:
    memory = InMemoryMemory()
    events: list[Event] = []
    with anyio.CancelScope() as scope:

        async def cancel_in_step_1(event: ModelCompleted) -> None:
            if event.step == 1:
                scope.cancel()
                await anyio.lowlevel.checkpoint()

        await Agent(turns(), tools=[lookup], memory=memory).run(
            "go", on=[(None, events.append), (ModelCompleted, cancel_in_step_1)]
        )
    assert isinstance(events[-1], RunCancelled)
    assert ends_per_step(events) == {0: (1, 1), 1: (1, 1)}
    step_1 = [e for e in events if isinstance(e, ToolCallRequested | ToolFailed) and e.step == 1]
    assert [type(e).__name__ for e in step_1] == ["ToolCallRequested", "ToolFailed"]
    # Each turn's call_0 is answered right after that turn (ids repeat, so pairs are by position).
    answers = [(call_id, output.split(":")[0]) for call_id, output in outputs(memory.items)]
    assert answers == [("call_0", "result for a"), ("call_0", "TOOL_ERROR")]
