"""Callbacks for one run (``on=``): a web handler on a shared agent forwards its own run's events only."""

from __future__ import annotations

import anyio

from agentflow.agent.agent import Agent
from agentflow.model.events import TextDelta
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.testing import Reply, ScriptedServer


async def main() -> None:
    script = [Reply(text="Bonjour Alice."), Reply(text="Hello Bob.")]
    async with ScriptedServer(script) as server:
        model = OpenAIChatModel(base_url=server.base_url, model="m")
        # --8<-- [start:on]
        agent = Agent(model)  # one agent, shared by every request

        async def handle(user: str, send: list[str]) -> str:
            # Only this run's deltas reach ``send``, however many requests run at once.
            result = await agent.run(f"Greet {user}.", on=[(TextDelta, lambda e: send.append(e.text))])
            return result.output_text

        alice: list[str] = []
        bob: list[str] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(handle, "Alice", alice)
            tg.start_soon(handle, "Bob", bob)
        # --8<-- [end:on]
        await model.aclose()
        # A callback for deltas makes the run stream: they arrive as the model writes them.
        assert {"".join(alice), "".join(bob)} == {"Bonjour Alice.", "Hello Bob."}


if __name__ == "__main__":
    anyio.run(main)
