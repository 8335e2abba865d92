"""Cancellation and limits: run.cancel(), leaving the block early, a deadline, and step/tool/token limits."""

from __future__ import annotations

import anyio

from agentflow.agent.agent import Agent
from agentflow.agent.options import AgentOptions
from agentflow.events import RunCancelled, ToolFailed, ToolStarted
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.result import StopReason
from agentflow.testing import Reply, ScriptedServer
from agentflow.tools import tool

cancelled_calls: list[str] = []


@tool
async def wait_for_approval(request: str) -> str:
    """Block until a human approves the request."""
    try:
        await anyio.Event().wait()  # never set: only cancellation ends this call
    finally:
        cancelled_calls.append(request)
    return "approved"


@tool
def lookup(term: str) -> str:
    """Look a term up."""
    return f"{term}: see the glossary"


async def main() -> None:
    waits = Reply(tool_calls=[("wait_for_approval", {"request": "deploy"})])
    looks = Reply(tool_calls=[("lookup", {"term": "CAS"})])
    async with ScriptedServer(default=looks) as server:
        server.add(waits, waits)
        model = OpenAIChatModel(base_url=server.base_url, model="m")
        agent = Agent(model, tools=[wait_for_approval, lookup])

        # --8<-- [start:cancel]
        async with agent.stream("Deploy to production") as run:
            async for event in run:
                if isinstance(event, ToolStarted):
                    await run.cancel()  # stop the run: its tools are cancelled, memory is completed
                elif isinstance(event, ToolFailed):
                    print(event.result.output)  # the synthetic "cancelled" result written to memory
                elif isinstance(event, RunCancelled):
                    print(event.partial.stop_reason, event.partial.usage.total_tokens)
        assert run.result.stop_reason is StopReason.CANCELLED
        # --8<-- [end:cancel]
        assert cancelled_calls == ["deploy"]

        # --8<-- [start:deadline]
        # A wall-clock limit for the whole run: a cancel scope, so it interrupts a hanging tool or model call.
        limited = Agent(model, tools=[wait_for_approval], options=AgentOptions(timeout=0.05))
        result = await limited.run("Deploy to production")
        print(result.stop_reason)  # StopReason.DEADLINE: the partial result, not an exception
        # --8<-- [end:deadline]
        assert result.stop_reason is StopReason.DEADLINE

        # --8<-- [start:limits]
        # The scripted model calls `lookup` forever: every limit ends the run with its own stop reason.
        for options in (
            AgentOptions(max_steps=3),  # -> StopReason.MAX_STEPS
            AgentOptions(max_tool_calls=2),  # -> StopReason.MAX_TOOL_CALLS
            AgentOptions(max_tokens=300),  # -> StopReason.MAX_TOKENS
        ):
            result = await Agent(model, tools=[lookup], options=options).run("Define CAS")
            print(result.stop_reason, result.steps, len(result.tool_calls))
        # --8<-- [end:limits]
        assert result.stop_reason is StopReason.MAX_TOKENS

        server.add(waits)  # the next run waits for approval, until its task is cancelled
        # --8<-- [start:task]
        # Cancelling the task that awaits the run works the same way (here: a cancel scope around it).
        with anyio.move_on_after(0.05):
            await Agent(model, tools=[wait_for_approval]).run("Deploy to production")
        # --8<-- [end:task]
        await model.aclose()


if __name__ == "__main__":
    anyio.run(main)
