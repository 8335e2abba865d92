"""``return_direct``: a tool's result as the run's answer, and a router whose specialists answer the user
themselves (``as_tool(return_direct=True)``), offline."""

from __future__ import annotations

import anyio
import attrs

from agentflow.agent.agent import Agent
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.result import StopReason
from agentflow.testing import Reply, ScriptedServer
from agentflow.tools import tool


# --8<-- [start:tool]
@tool(return_direct=True)  # its result is the answer: the model is not called again to repeat it
async def order_status(order: str) -> str:
    """The status of an order, in a sentence the customer reads as it is."""
    return f"Order {order} left our warehouse on 2 May."


# --8<-- [end:tool]


# --8<-- [start:answers]
@attrs.frozen
class Refund:
    """A refund decision."""

    order: str
    amount: float
    approved: bool


@attrs.frozen
class Advice:
    """A fix for a technical problem."""

    steps: list[str]


# --8<-- [end:answers]


async def status_run() -> None:
    turns = [Reply(text="Let me look.", tool_calls=[("order_status", {"order": "A-17"})])]
    async with ScriptedServer(turns) as server:
        model = OpenAIChatModel(base_url=server.base_url, model="gpt-4.1-mini")
        # --8<-- [start:status]
        async with Agent(model, tools=[order_status]) as agent:
            result = await agent.run("Where is my order A-17?")
        print(result.output_text)  # Order A-17 left our warehouse on 2 May.
        print(result.stop_reason.value, result.steps)  # final_answer 1: one model call
        # --8<-- [end:status]
        assert result.output == "Order A-17 left our warehouse on 2 May."
        assert len(server.requests) == 1


async def router_runs() -> None:
    refund_json = '{"order": "A-17", "amount": 42.0, "approved": true}'
    advice_json = '{"steps": ["Update its firmware.", "Restart it."]}'
    async with (
        ScriptedServer(
            [
                Reply(tool_calls=[("tech", {"input": "The customer's router keeps dropping Wi-Fi."})]),
                Reply(tool_calls=[("billing", {"input": "Refund order A-17 (42 EUR, arrived broken)?"})]),
            ]
        ) as router_server,
        ScriptedServer([Reply(text=refund_json)]) as billing_server,
        ScriptedServer([Reply(text=advice_json)]) as tech_server,
    ):
        # --8<-- [start:router]
        billing = Agent(
            OpenAIChatModel(base_url=billing_server.base_url, model="gpt-4.1-mini"),
            name="Billing",
            system_prompt="You decide refunds by the policy: …",
            output_type=Refund,
        )
        tech = Agent(
            OpenAIChatModel(base_url=tech_server.base_url, model="gpt-4.1-mini"),
            name="Tech",
            system_prompt="You solve the customer's technical problem in a few steps.",
            output_type=Advice,
        )
        router = Agent(
            OpenAIChatModel(base_url=router_server.base_url, model="gpt-4.1-mini"),
            system_prompt="Hand each request to the one specialist it is for.",
            tools=[
                # The specialist's answer is the router's: no second router call to repeat it.
                billing.as_tool(description="Refunds and invoices.", return_direct=True),
                tech.as_tool(description="Technical problems with a device.", return_direct=True),
            ],
            output_type=Refund | Advice,  # each specialist's value comes through as it is
        )
        wifi = await router.run("My router keeps dropping Wi-Fi.")
        print(wifi.output)  # Advice(steps=['Update its firmware.', 'Restart it.'])
        refund = await router.run("Order A-17 arrived broken; I want my 42 EUR back.")
        print(refund.output)  # Refund(order='A-17', amount=42.0, approved=True)
        # --8<-- [end:router]
        assert wifi.output == Advice(["Update its firmware.", "Restart it."])
        assert refund.stop_reason is StopReason.FINAL_ANSWER
        assert refund.output == Refund("A-17", 42.0, True)
        assert len(router_server.requests) == 2  # one model call per run: the specialist answered
        for agent in (router, billing, tech):
            await agent.aclose()


async def main() -> None:
    await status_run()
    await router_runs()


if __name__ == "__main__":
    anyio.run(main)
