"""An exhaustive ``match`` over a run's events: ``AgentEvent`` is the union of every event class agentflow
publishes, so ``assert_never`` makes a type checker (``mypy --strict``, run over this file by the tests)
report any event class the ``match`` forgets."""

from __future__ import annotations

from typing import assert_never

from agentflow.agent.agent import Agent
from agentflow.events import (
    AgentEvent,
    CodeExecuted,
    CodeOutput,
    CodeStarted,
    GuardrailTripped,
    HandedOff,
    ModelCompleted,
    ModelRequest,
    ModelRetry,
    OutputRejected,
    PlanCreated,
    PlanUpdated,
    ReasoningDelta,
    RefusalDelta,
    RunCancelled,
    RunFailed,
    RunFinished,
    RunStarted,
    StepFinished,
    StepStarted,
    TextDelta,
    ToolApprovalRequested,
    ToolCallArgumentsDelta,
    ToolCallReady,
    ToolCallRequested,
    ToolCallStarted,
    ToolFailed,
    ToolProgress,
    ToolStarted,
    ToolSucceeded,
    UsageReported,
)
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.testing import Reply, ScriptedServer
from agentflow.tools import tool


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


# --8<-- [start:match]
def describe(event: AgentEvent) -> str:
    """What a terminal UI prints for an event ("" for the ones it does not show)."""
    match event:
        case TextDelta(text=text):
            return text
        case ToolCallRequested(call=call):
            return f"[{call.name}({call.arguments})"
        case ToolSucceeded(result=result) | ToolFailed(result=result):
            return f" -> {result.output}]\n"
        case RunFinished(result=result):
            return f"\n({result.stop_reason.value}, {result.usage.total_tokens} tokens)"
        case RunFailed(error_type=error_type, error=error):
            return f"\nfailed: {error_type}: {error}"
        case RunCancelled():
            return "\n(stopped)"
        case (
            RunStarted()
            | StepStarted()
            | ModelRequest()
            | ReasoningDelta()
            | RefusalDelta()
            | ToolCallStarted()
            | ToolCallArgumentsDelta()
            | ToolCallReady()
            | UsageReported()
            | ModelRetry()
            | ModelCompleted()
            | ToolApprovalRequested()
            | ToolStarted()
            | ToolProgress()
            | CodeStarted()
            | CodeOutput()
            | CodeExecuted()
            | PlanCreated()
            | PlanUpdated()
            | HandedOff()
            | OutputRejected()
            | GuardrailTripped()
            | StepFinished()
        ):
            return ""
        case _:
            assert_never(event)  # a new event class not handled above is a type error here


# --8<-- [end:match]


async def main() -> None:
    script = [Reply(tool_calls=[("add", {"a": 2, "b": 3})]), Reply(text="2 + 3 = 5")]
    async with ScriptedServer(script) as server:
        agent = Agent(OpenAIChatModel(base_url=server.base_url, model="m"), tools=[add])
        # --8<-- [start:loop]
        shown = ""
        async with agent.stream("What is 2 + 3?") as run:
            async for event in run:
                # A run's iteration is typed ``Event``: your own code may publish events of its own.
                if isinstance(event, AgentEvent):
                    shown += describe(event)
        # --8<-- [end:loop]
    print(shown)
    assert shown.startswith('[add({"a":2,"b":3}) -> 5]\n2 + 3 = 5\n(final_answer, ')
