"""Helpers of the DeepResearch tests: a scripted planner, a tool, and event recording."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from agentflow.agent.agent import Agent
from agentflow.model.events import Event
from agentflow.model.response import TokenUsage
from agentflow.plan import Plan, PlanStep
from agentflow.result import AgentResult
from agentflow.runtimes.planner import PlanContext, Planner
from agentflow.tools import tool


class ScriptedPlanner(Planner):
    """Answers each ``plan`` call with the next list of steps, and records what it was asked."""

    def __init__(self, plans: Iterable[Sequence[PlanStep | str]], usage: TokenUsage | None = None) -> None:
        self.plans = [list(p) for p in plans]
        self.usage = usage
        self.calls: list[tuple[str, PlanContext | None]] = []

    async def plan(self, goal: str, context: PlanContext | None = None) -> Plan:
        self.calls.append((goal, context))
        if not self.plans:
            raise AssertionError("the scripted planner has no plan left")
        return Plan(goal, tuple(self.plans.pop(0)), usage=self.usage)


@tool
def lookup(topic: str) -> str:
    """Look a topic up.

    Args:
        topic: What to look up.
    """
    return f"facts about {topic}"


def message_text(item: Any) -> str:
    """The text of a message item in memory (``""`` for other items)."""
    if isinstance(item, dict) and item.get("type") == "message":
        return "".join(p.get("text", "") for p in item.get("content", ()))
    return ""


def roles(items: Sequence[Any]) -> list[str]:
    """Each memory item's role (messages) or type (tool traffic)."""
    return [i.get("role") or i.get("type") if isinstance(i, dict) else type(i).__name__ for i in items]


async def collect(agent: Agent, input: Any) -> tuple[list[Event], AgentResult]:
    """Stream a run to its end; the events seen and the result."""
    events: list[Event] = []
    async with agent.stream(input) as run:
        async for event in run:
            events.append(event)
    return events, run.result
