"""Eager tools: a lookup starts while the model is still streaming the rest of its answer."""

from __future__ import annotations

import anyio

from agentflow.agent.agent import Agent
from agentflow.events import ToolCallRequested, ToolSucceeded
from agentflow.model.events import ModelCompleted
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.testing import Reply, ScriptedServer
from agentflow.tools import tool

PRICES = {"tea": "4.50 EUR", "coffee": "3.90 EUR"}


# --8<-- [start:eager]
@tool(eager=True)  # a read, without side effects: it may start before the model's turn is complete
async def get_price(product: str) -> str:
    """The price of a product."""
    return PRICES[product]


@tool  # a side effect: it runs once the whole turn has arrived, as every tool does by default
async def add_to_cart(product: str) -> str:
    """Put a product in the cart."""
    return f"{product} added"


# --8<-- [end:eager]


async def main() -> None:
    turns = [
        Reply(tool_calls=[("get_price", {"product": "tea"}), ("add_to_cart", {"product": "tea"})]),
        Reply(text="Tea is 4.50 EUR; it is in your cart."),
    ]
    async with ScriptedServer(turns) as server:
        model = OpenAIChatModel(base_url=server.base_url, api_key="sk-test", model="gpt-test")
        async with Agent(model, tools=[get_price, add_to_cart]) as agent:
            seen: list[str] = []
            with anyio.fail_after(10):
                # --8<-- [start:order]
                async with agent.stream("What does tea cost? Put it in my cart.") as run:
                    async for event in run:
                        if isinstance(event, ToolCallRequested | ToolSucceeded):
                            seen.append(f"{type(event).__name__}({event.call.name})")
                        elif isinstance(event, ModelCompleted) and event.step == 0:
                            seen.append("ModelCompleted")
                # --8<-- [end:order]
    print(seen)
    # The lookup is requested as soon as the model has written it, before its turn is complete; the cart
    # is touched only after it (ToolSucceeded of the lookup may come before or after ModelCompleted).
    assert seen.index("ToolCallRequested(get_price)") < seen.index("ModelCompleted")
    assert seen.index("ModelCompleted") < seen.index("ToolCallRequested(add_to_cart)")
    assert run.result.output_text == "Tea is 4.50 EUR; it is in your cart."
