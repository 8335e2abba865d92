"""A run nobody listens to builds none of its events but the terminal one, and still does all its work.

Building ~20 typed events per tool-loop run is a few percent of its CPU; nobody could tell they were skipped,
since an awaited ``agent.run()`` without ``agent.on`` callbacks has no subscriber and nothing can subscribe.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentflow import Agent, RunFinished, StopReason
from agentflow.bus import EventBus
from agentflow.model.events import Event
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def tool_loop() -> FakeModelClient:
    return FakeModelClient(
        [
            reply(tool_calls=[("add", {"a": 1, "b": 2}), ("add", {"a": 3, "b": 4})], usage=(10, 5)),
            reply("3 and 7.", usage=(20, 5)),
        ]
    )


@pytest.fixture
def published(monkeypatch: pytest.MonkeyPatch) -> list[Event]:
    """Every event any bus publishes (recorded by wrapping ``EventBus.publish``)."""
    seen: list[Event] = []
    original = EventBus.publish

    async def recording(self: EventBus, event: Any, *, owned: bool = False) -> Any:
        seen.append(event)
        return await original(self, event, owned=owned)

    monkeypatch.setattr(EventBus, "publish", recording)
    return seen


async def test_an_unobserved_run_publishes_only_its_terminal_event(published: list[Event]) -> None:
    result = await Agent(tool_loop(), tools=[add]).run("1 + 2 and 3 + 4?")
    assert result.stop_reason is StopReason.FINAL_ANSWER
    assert [r.output for r in result.tool_results] == ["3", "7"]
    assert result.usage.total_tokens == 40
    assert [type(e).__name__ for e in published] == ["RunFinished"]


async def test_a_run_with_a_callback_publishes_every_event(published: list[Event]) -> None:
    agent = Agent(tool_loop(), tools=[add])
    seen: list[Event] = []
    agent.on(None, seen.append)
    await agent.run("1 + 2 and 3 + 4?")
    names = [type(e).__name__ for e in seen]
    assert names[0] == "RunStarted"
    assert names.count("ToolStarted") == names.count("ToolSucceeded") == 2
    assert names.count("ToolCallRequested") == 2
    assert names.count("StepStarted") == names.count("StepFinished") == names.count("ModelRequest") == 2
    assert isinstance(seen[-1], RunFinished)
    assert [e.seq for e in seen] == list(range(1, len(seen) + 1))
    # Every event published was delivered (model events are stamped by the bus as it delivers them).
    assert [type(e) for e in published] == [type(e) for e in seen]


async def test_refused_and_timed_out_calls_publish_nothing_unobserved(published: list[Event]) -> None:
    # The rare paths (unknown tool, invalid arguments, a batch's shared deadline) are gated like the common
    # one: their results reach the model and the run's result, their events are never built.
    @tool(timeout=0.05)
    async def slow(a: int) -> int:
        """Never answers in time."""
        await anyio.sleep(10)
        return a

    @tool(timeout=0.05)
    async def quick(a: int) -> int:
        """Answers at once."""
        return a

    model = FakeModelClient(
        [
            reply(
                tool_calls=[
                    ("nope", {}),
                    ("quick", {"a": "not a number"}),
                    ("slow", {"a": 1}),
                    ("quick", {"a": 2}),
                ]
            ),
            reply("done"),
        ]
    )
    result = await Agent(model, tools=[slow, quick]).run("go")
    errors = [r.error_type for r in result.tool_results]
    assert errors == ["unknown_tool", "invalid_arguments", "timeout", None]
    assert [type(e).__name__ for e in published] == ["RunFinished"]
