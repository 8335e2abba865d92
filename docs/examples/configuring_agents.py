"""Getting started: an agent's model settings and limits, a run's own, token usage, and the system prompt."""

from __future__ import annotations

from typing import ClassVar

import anyio
import attrs

from agentflow.agent.agent import Agent
from agentflow.agent.options import AgentOptions, ModelSettings
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.result import StopReason
from agentflow.runtimes import AgentRuntime, ReActRuntime
from agentflow.testing import Reply, ScriptedServer
from agentflow.tools import tool


@tool
def search(query: str) -> str:
    """Search the travel guide."""
    return f"Results for {query}: the Louvre, the Musée d'Orsay."


# --8<-- [start:runtime]
class PlainReAct(ReActRuntime):
    """ReAct without its built-in instructions: the system prompt is yours alone."""

    instructions: ClassVar[str | None] = None  # or text of your own, sent after your system prompt


# --8<-- [end:runtime]


async def main() -> None:
    script = [
        Reply(text="Start at the Louvre.", usage=(120, 8)),
        Reply(text="The Louvre.", usage=(120, 4)),
        Reply(tool_calls=[("search", {"query": "museums in Paris"})]),
        Reply(text="Hi."),
        Reply(text="Hi."),
        Reply(text="Hi."),
    ]
    async with ScriptedServer(script) as server:
        # --8<-- [start:agent]
        model = OpenAIChatModel(base_url=server.base_url, model="gpt-4o-mini")
        agent = Agent(
            model,
            tools=[search],
            system_prompt="You are a travel guide.",
            # Model parameters, sent with every model call (None: not sent).
            settings=ModelSettings(temperature=0.7, max_output_tokens=400),
            # Limits of every run: steps, wall clock, tool calls, and a token budget for the whole run.
            options=AgentOptions(max_steps=8, timeout=120, max_tool_calls=10, max_tokens=50_000),
        )
        result = await agent.run("One museum in Paris?")
        print(result.output_text)  # Start at the Louvre.
        print(result.usage.input_tokens, result.usage.output_tokens, result.usage.total_tokens)  # 120 8 128
        # --8<-- [end:agent]
        assert result.usage.total_tokens == 128

        # --8<-- [start:per-run]
        # This run's settings merge over the agent's: temperature 0, max_output_tokens still 400.
        result = await agent.run("Just the name.", settings=ModelSettings(temperature=0))

        # This run's options replace the agent's whole: max_steps=1, and no timeout (AgentOptions' default).
        result = await agent.run("Plan my day.", options=AgentOptions(max_steps=1))
        print(result.stop_reason)  # StopReason.MAX_STEPS

        # To change one limit and keep the agent's others, start from the agent's options.
        one_step = attrs.evolve(agent.options, max_steps=1)  # timeout=120, max_tool_calls=10… kept
        # --8<-- [end:per-run]
        assert result.stop_reason is StopReason.MAX_STEPS
        assert one_step.timeout == 120
        bodies = [r.body for r in server.requests]
        assert [(b["temperature"], b["max_completion_tokens"]) for b in bodies] == [
            (0.7, 400),
            (0, 400),
            (0.7, 400),
        ]

        # --8<-- [start:system]
        await Agent(model, system_prompt="You are a travel guide.").run("Hi")
        # system: "You are a travel guide.\n\nUse tools when necessary. Return concise final answers."
        await Agent(model, system_prompt="You are a travel guide.", runtime=PlainReAct()).run("Hi")
        # system: "You are a travel guide."
        await Agent(model, system_prompt="You are a travel guide.", runtime=AgentRuntime()).run("Hi")
        # system: "You are a travel guide." (the same loop; its runs are named "base", not "react")
        # --8<-- [end:system]
        systems = [
            [m["content"] for m in r.body["messages"] if m["role"] == "system"] for r in server.requests[3:]
        ]
        assert systems == [
            ["You are a travel guide.\n\nUse tools when necessary. Return concise final answers."],
            ["You are a travel guide."],
            ["You are a travel guide."],
        ]


if __name__ == "__main__":
    anyio.run(main)
