"""CodeAct with planning (smolagents' ``planning_interval``): the model plans first, then writes code, and
re-plans every two steps told the code it ran and what came of it. Offline: a ScriptedServer plays the
model."""

from __future__ import annotations

import anyio
import orjson

from agentflow.agent.agent import Agent
from agentflow.events import CodeExecuted, PlanCreated, PlanUpdated
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.runtimes.codeact import CodeActOptions, CodeActRuntime
from agentflow.runtimes.planner import ModelPlanner
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


def code(source: str) -> Reply:
    return Reply(text=orjson.dumps({"type": "code", "language": "python", "code": source}).decode())


PLAN = ["Get the prices", "Get the stock", "Multiply and add up"]
REVISED = [{"step": PLAN[0], "status": "done"}, {"step": PLAN[1], "status": "done"}, PLAN[2]]
SCRIPT = [
    Reply(text=orjson.dumps({"steps": PLAN}).decode()),  # the planner's answer
    code('prices = map_tool("get_price", [{"item": i} for i in ("apple", "pear")])\nprint(prices)'),
    code('stock = map_tool("get_stock", [{"item": i} for i in ("apple", "pear")])\nprint(stock)'),
    Reply(text=orjson.dumps({"steps": REVISED}).decode()),  # the re-planner's answer, after step 2
    code("final_answer(sum(p * s for p, s in zip(prices, stock)))"),
]


async def main() -> None:
    async with ScriptedServer(SCRIPT) as server:
        # --8<-- [start:agent]
        model = OpenAIChatModel(base_url=server.base_url, model="gpt-4o-mini")
        runtime = CodeActRuntime(
            CodeActOptions(react=True),
            planner=ModelPlanner(model),  # the agent's own model plans, as smolagents' does
            replan_every=2,  # smolagents' planning_interval=2
        )
        agent = Agent(model, runtime=runtime, tools=[get_price, get_stock])
        async with agent, agent.stream("What is our stock of apples and pears worth?") as run:
            async for event in run:
                if isinstance(event, PlanCreated | PlanUpdated):
                    print(event.plan.to_text(), end="")
                    # Plan:
                    # 1. Get the prices
                    # 2. Get the stock
                    # 3. Multiply and add up
                elif isinstance(event, CodeExecuted):
                    print(f"code step: ok={event.ok} printed={event.stdout!r}")
        print(run.result.output_text)  # 8.0
        # --8<-- [end:agent]
        replanning = server.requests[3].body["messages"][-1]["content"]
    assert run.result.output_text == "8.0"
    # The re-plan is told each code step since the plan, with its outcome, and the calls the code made.
    assert "Code run since the current plan:\n- step 1:\n    prices = map_tool(" in replanning
    assert 'CODE_RESULT: {"result":null,"stdout":"[10, 4]\\n"}' in replanning
    assert '- get_stock({"item":"pear"}) -> 4' in replanning


if __name__ == "__main__":
    anyio.run(main)
