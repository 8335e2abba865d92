"""Runtimes: choosing one by name, and a custom runtime built from the base loop's hooks."""

from __future__ import annotations

from typing import ClassVar

import anyio
import attrs

from agentflow.agent.agent import Agent
from agentflow.agent.prompt import AgentPrompt
from agentflow.runtimes import ReActRuntime, RunContext, register_runtime
from agentflow.testing.fake import FakeModelClient, reply


# --8<-- [start:custom]
class CitingRuntime(ReActRuntime):
    """ReAct, with different instructions and a low temperature on every model call."""

    name: ClassVar[str] = "citing"
    instructions: ClassVar[str | None] = "Use tools when necessary. Cite the tool each fact comes from."

    def build_prompt(self, ctx: RunContext, *, final: bool = False) -> AgentPrompt:
        prompt = super().build_prompt(ctx, final=final)
        return prompt if prompt.temperature is not None else attrs.evolve(prompt, temperature=0.0)


register_runtime("citing", CitingRuntime)  # now Agent(model, runtime="citing") works too
# --8<-- [end:custom]


async def main() -> None:
    # --8<-- [start:use]
    model = FakeModelClient([reply("Paris [source: atlas]")])
    agent = Agent(model, runtime="citing", system_prompt="You are a geography tutor.")
    result = await agent.run("Capital of France?")
    prompt = model.prompts[0]
    print(prompt.system_prompt)
    # You are a geography tutor.
    #
    # Use tools when necessary. Cite the tool each fact comes from.
    # --8<-- [end:use]
    assert result.output_text == "Paris [source: atlas]"
    assert prompt.temperature == 0.0
    assert prompt.system_prompt is not None
    assert prompt.system_prompt.endswith("Cite the tool each fact comes from.")


if __name__ == "__main__":
    anyio.run(main)
