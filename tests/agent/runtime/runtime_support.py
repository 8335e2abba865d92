"""Shared helpers for the runtime tests: event recording, memory validity, tools and model steps."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import anyio

from agentflow.agent.agent import Agent
from agentflow.agent.items import tool_call_ids, tool_output_call_id
from agentflow.agent.prompt import AgentModelResult, AgentPrompt
from agentflow.events import RunCancelled, RunFailed, RunFinished
from agentflow.model.events import Event, ModelCompleted, ModelEvent, TextDelta
from agentflow.result import AgentResult
from agentflow.tools import tool

TERMINAL = (RunFinished, RunFailed, RunCancelled)


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def shout(text: str) -> str:
    """Upper-case a text (a sync tool: runs in a worker thread)."""
    return text.upper()


class Recorder:
    """An agent-level listener that keeps every event of every run."""

    def __init__(self, agent: Agent | None = None) -> None:
        self.events: list[Event] = []
        if agent is not None:
            agent.on(None, self.events.append)

    def of(self, kind: type[Any] | tuple[type[Any], ...]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    def names(self) -> list[str]:
        return [type(e).__name__ for e in self.events]

    def terminals(self) -> list[Event]:
        return self.of(TERMINAL)


def assert_memory_valid(items: Sequence[Any]) -> None:
    """Every tool call in memory has exactly one output after it, and every output answers a call."""
    open_calls: list[str] = []
    answered: set[str] = set()
    for index, item in enumerate(items):
        for call_id in tool_call_ids(item):
            assert call_id, f"item {index} has a tool call without an id: {item!r}"
            open_calls.append(call_id)
        output = tool_output_call_id(item)
        if output is not None:
            assert output in open_calls, f"item {index} answers unknown call {output!r}"
            assert output not in answered, f"call {output!r} answered twice"
            answered.add(output)
    missing = [c for c in open_calls if c not in answered]
    assert not missing, f"tool calls without a result in memory: {missing}"


def outputs(items: Sequence[Any]) -> list[tuple[str, str]]:
    """The ``(call_id, output)`` of every tool output item, in memory order."""
    return [
        (i["call_id"], i["output"])
        for i in items
        if isinstance(i, dict) and i.get("type") == "function_call_output"
    ]


async def collect(agent: Agent, input: Any) -> tuple[list[Event], AgentResult]:
    """Stream a run to its end; the events seen by the consumer and the result."""
    events: list[Event] = []
    async with agent.stream(input) as run:
        async for event in run:
            events.append(event)
    return events, run.result


def paused_stream(
    first: Sequence[ModelEvent],
    gate: anyio.Event,
    reached: anyio.Event,
    closed: list[str],
    rest: Sequence[ModelEvent] = (),
) -> Callable[[AgentPrompt], AsyncIterator[ModelEvent]]:
    """A FakeModelClient entry: streams ``first``, sets ``reached``, waits for ``gate``, streams ``rest``.

    ``closed`` gets ``"closed"`` appended when the stream's generator is closed (finished or cancelled).
    """

    async def entry(_prompt: AgentPrompt) -> AsyncIterator[ModelEvent]:
        try:
            for event in first:
                yield event
            reached.set()
            await gate.wait()
            for event in rest:
                yield event
        finally:
            closed.append("closed")

    return entry


def completed(result: AgentModelResult) -> list[ModelEvent]:
    """The events of a one-delta answer."""
    return [TextDelta(result.output_text), ModelCompleted(result)]
