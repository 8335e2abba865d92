"""Handoffs: a triage agent hands the conversation to a billing agent, which may hand it back; offline."""

from __future__ import annotations

import anyio

from agentflow import Agent, HandedOff, handoff, tool, without_tool_calls
from agentflow.model.events import TextDelta
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.testing import Reply, ScriptedServer


@tool
def refund(order: str) -> str:
    """Refund an order.

    Args:
        order: The order's number.
    """
    return f"order {order} refunded"


async def main() -> None:
    script = [
        Reply(text="Let me pass you to billing.", tool_calls=[("transfer_to_billing", {})]),  # triage
        Reply(tool_calls=[("refund", {"order": "A-17"})]),  # billing, on the same conversation
        Reply(text="Done: order A-17 is refunded."),
    ]
    async with ScriptedServer(script) as server:
        model = OpenAIChatModel(base_url=server.base_url, model="gpt-4.1-mini")
        # --8<-- [start:agents]
        triage = Agent(model, name="Triage", system_prompt="Find out what the user needs; hand over.")
        billing = Agent(
            model,
            name="Billing",
            system_prompt="You handle refunds and invoices.",
            tools=[refund],
        )
        triage.handoffs = [
            handoff(
                billing, description="Refunds, invoices and payment methods.", input_filter=without_tool_calls
            )
        ]
        billing.handoffs = [triage]  # back to the triage for anything else: set once both exist

        async with triage.stream("Please refund order A-17.") as run:
            async for event in run:
                if isinstance(event, HandedOff):
                    print(f"[{event.source} -> {event.target}]")
                elif isinstance(event, TextDelta):
                    print(event.text, end="")
        result = run.result
        print()
        print(result.agent_name, result.output)  # Billing Done: order A-17 is refunded.
        # --8<-- [end:agents]
        assert (result.agent_name, result.output) == ("Billing", "Done: order A-17 is refunded.")
        assert [r.name for r in result.tool_results] == ["transfer_to_billing", "refund"]
        await model.aclose()


if __name__ == "__main__":
    anyio.run(main)
