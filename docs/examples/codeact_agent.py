"""CodeAct: the model writes Python that calls the tools; the code runs in a sandboxed process. Offline: a
ScriptedServer plays the model, answering in the CodeAct protocol."""

from __future__ import annotations

import anyio
import orjson

from agentflow.agent.agents import Agents
from agentflow.events import CodeExecuted, ToolSucceeded
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.runtimes.codeact import CodeActOptions
from agentflow.sandbox import ExecutionLimits
from agentflow.testing import Reply, ScriptedServer
from agentflow.tools import tool


@tool
async def get_price(item: str) -> float:
    """The unit price of an item, in euros."""
    return {"apple": 0.5, "pear": 0.75}[item]


@tool
async def get_stock(item: str) -> int:
    """How many of an item are in stock."""
    return {"apple": 10, "pear": 4}[item]


# What the model would write: one JSON object per turn. First code (two tools, called concurrently per item),
# then, having read the CODE_RESULT, the final answer.
STEP_1 = """\
items = ["apple", "pear"]
prices = map_tool("get_price", [{"item": i} for i in items])
stock = map_tool("get_stock", [{"item": i} for i in items])
worth = {i: p * s for i, p, s in zip(items, prices, stock)}
print("stock value per item:", worth)
sum(worth.values())"""
SCRIPT = [
    Reply(text=orjson.dumps({"type": "code", "language": "python", "code": STEP_1}).decode()),
    Reply(text='{"type": "final", "output": "The stock is worth 8.00 euros (apples 5.00, pears 3.00)."}'),
]


async def main() -> None:
    async with ScriptedServer(SCRIPT) as server:
        model = OpenAIChatModel(base_url=server.base_url, model="gpt-4o-mini")
        agent = Agents.codeact(
            model,
            tools=[get_price, get_stock],
            # react=True: after each code step the model reads the result and decides what next.
            codeact=CodeActOptions(react=True, limits=ExecutionLimits(wall_time=10)),
        )
        async with agent, agent.stream("What is our stock of apples and pears worth?") as run:
            async for event in run:
                if isinstance(event, ToolSucceeded):
                    print(f"  {event.call.name}({event.call.arguments}) -> {event.result.output}")
                elif isinstance(event, CodeExecuted):
                    print(f"code step: ok={event.ok} value={event.result!r} printed={event.stdout!r}")
        result = run.result
        print(result.output_text)  # The stock is worth 8.00 euros (apples 5.00, pears 3.00).

        # Memory holds each code turn followed by its outcome, as a system message:
        print(result.new_items[2]["content"][0]["text"])
        # CODE_RESULT: {"result":8.0,"stdout":"stock value per item: {'apple': 5.0, 'pear': 3.0}\n"}

        # The tools were described to the model in its system prompt, never sent as protocol tools:
        first_request = server.requests[0].body
        assert "tools" not in first_request
        assert "- get_price(item)" in first_request["messages"][0]["content"]

    assert result.output_text.startswith("The stock is worth 8.00 euros")
    assert [c.name for c in result.tool_calls] == ["get_price", "get_price", "get_stock", "get_stock"]
    assert result.new_items[2]["content"][0]["text"].startswith('CODE_RESULT: {"result":8.0,')


if __name__ == "__main__":
    anyio.run(main)
