"""Sessions: a conversation whose memory persists across runs."""

from __future__ import annotations

import anyio

from agentflow.agent.agent import Agent
from agentflow.agent.memory import WindowedMemory
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.testing import Reply, ScriptedServer


async def main() -> None:
    script = [Reply(text="Nice to meet you, Ada."), Reply(text="Your name is Ada.")]
    async with ScriptedServer(script) as server:
        # --8<-- [start:session]
        agent = Agent(OpenAIChatModel(base_url=server.base_url, model="m"))
        async with agent:
            chat = agent.session(WindowedMemory(max_items=50))  # or agent.session() for unbounded memory
            await chat.run("My name is Ada.")
            result = await chat.run("What is my name?")  # the model sees the first turn
            print(result.output_text)
            print(len(chat.items))  # 4: two user turns, two answers
        # --8<-- [end:session]
        assert result.output_text == "Your name is Ada."
        second = server.requests[1].body["messages"]
        assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]


if __name__ == "__main__":
    anyio.run(main)
