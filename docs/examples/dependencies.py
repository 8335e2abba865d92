"""A run's dependencies (``deps=``) for its tools and prompt functions, and a sub-agent that shares them."""

from __future__ import annotations

import anyio
import attrs

from agentflow import Agent, ModelSettings, OpenAIChatModel, PromptContext, ToolContext, tool
from agentflow.testing import Reply, ScriptedServer


# --8<-- [start:deps]
class OrderStore:
    """Stands for a database pool: made once at startup, shared by every request."""

    def __init__(self, orders: dict[str, list[str]]) -> None:
        self._orders = orders

    async def orders_of(self, user: str) -> list[str]:
        return self._orders.get(user, [])


@attrs.frozen
class Deps:
    """What one request's run needs: the shared pool and the user the request is for."""

    store: OrderStore
    user: str


@tool
async def my_orders(ctx: ToolContext[Deps]) -> list[str]:
    """The current user's orders."""
    return await ctx.deps.store.orders_of(ctx.deps.user)  # a type checker knows ctx.deps is a Deps


def instructions(run: PromptContext[Deps]) -> str:
    """Called before each step's model call, with the run's deps."""
    return f"You help {run.deps.user} with their orders. This is step {run.step + 1} of the run."


# --8<-- [end:deps]


def script() -> list[Reply]:
    return [
        Reply(tool_calls=[("my_orders", {})]),
        Reply(text="You ordered a kettle and a lamp."),
        Reply(tool_calls=[("orders", {"input": "List the user's orders."})]),  # the front desk delegates
        Reply(tool_calls=[("my_orders", {})]),  # the order agent, with the caller's deps
        Reply(text="a kettle, a lamp"),
        Reply(text="You ordered a kettle and a lamp."),
    ]


async def main() -> None:
    store = OrderStore({"ada": ["a kettle", "a lamp"]})
    async with ScriptedServer(script()) as server:
        model = OpenAIChatModel(base_url=server.base_url, model="gpt-4o-mini")
        # --8<-- [start:run]
        agent = Agent(model, tools=[my_orders], instructions=instructions)
        result = await agent.run("What did I order?", deps=Deps(store, user="ada"))  # per request
        # --8<-- [end:run]
        assert result.tool_results[0].value == ["a kettle", "a lamp"]
        # The instructions went with each step's call, as a static text would (a second system message).
        told = [r.body["messages"][1]["content"] for r in server.requests[:2]]
        assert told == [
            "You help ada with their orders. This is step 1 of the run.",
            "You help ada with their orders. This is step 2 of the run.",
        ]

        # --8<-- [start:sub_agent]
        orders = Agent(model, tools=[my_orders], instructions=instructions, name="Orders")
        front_desk = Agent(model, tools=[orders.as_tool(description="Looks up the user's orders.")])
        gateway_key = ModelSettings(extra_headers={"X-User-Key": "key-of-ada"})
        # The sub-agent's run gets the same deps, and sends this run's own headers too.
        await front_desk.run("What did I order?", deps=Deps(store, user="ada"), settings=gateway_key)
        # --8<-- [end:sub_agent]
        sub_run = server.requests[3]
        assert sub_run.headers["x-user-key"] == "key-of-ada"
        assert sub_run.body["messages"][1]["content"].startswith("You help ada")
        await model.aclose()


if __name__ == "__main__":
    anyio.run(main)
