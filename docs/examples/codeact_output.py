"""CodeAct with an output type, watched while its code runs. Offline: a ScriptedServer plays the model, which
writes code calling the tools; the code runs in the real sandbox."""

from __future__ import annotations

import anyio
import attrs
import orjson

from agentflow import Agents, OpenAIChatModel, OutputType, RejectOutput
from agentflow.events import CodeOutput, CodeStarted, OutputRejected
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


# --8<-- [start:type]
@attrs.frozen
class StockValue:
    """What the stock is worth."""

    total: float
    per_item: dict[str, float]


def adds_up(value: StockValue) -> None:
    if abs(sum(value.per_item.values()) - value.total) > 0.005:
        raise RejectOutput("total must be the sum of per_item")


# --8<-- [end:type]

# What the model writes: first an answer with a wrong total, which the validator sends back in the step's
# CODE_ERROR; then the fixed code.
FIRST = """\
worth = {i: get_price(i) * get_stock(i) for i in ("apple", "pear")}
print("per item:", worth)
final_answer({"total": 7, "per_item": worth})"""
SECOND = FIRST.replace('"total": 7', '"total": sum(worth.values())')


def script() -> list[Reply]:
    """The scripted model: two code steps."""
    return [Reply(text=orjson.dumps({"type": "code", "code": c}).decode()) for c in (FIRST, SECOND)]


async def main() -> None:
    async with ScriptedServer(script()) as server:
        # --8<-- [start:agent]
        model = OpenAIChatModel(base_url=server.base_url, model="gpt-4o-mini")
        agent = Agents.codeact(
            model,
            tools=[get_price, get_stock],
            output_type=OutputType(StockValue, validators=[adds_up]),
        )
        async with agent, agent.stream("What is our stock of apples and pears worth?") as run:
            async for event in run:
                if isinstance(event, CodeStarted):
                    print("running code…")
                elif isinstance(event, CodeOutput):  # while the code runs, not when it has ended
                    print(f"  [{event.stream}] {event.text}", end="")
                elif isinstance(event, OutputRejected):
                    print("sent back:", event.error)
        value = run.result.output  # StockValue(total=8.0, per_item={'apple': 5.0, 'pear': 3.0})
        # --8<-- [end:agent]
        assert value == StockValue(8.0, {"apple": 5.0, "pear": 3.0})
        system_prompt = server.requests[0].body["messages"][0]["content"]
        # The prompt names the type final_answer takes; no response_format is sent.
        assert "dict {total: float, per_item: dict of float}" in system_prompt
        assert "response_format" not in server.requests[0].body
        assert (
            server.requests[1]
            .body["messages"][-1]["content"]
            .startswith(
                'CODE_ERROR: {"error":"your final answer was rejected: total must be the sum of per_item'
            )
        )


if __name__ == "__main__":
    anyio.run(main)
