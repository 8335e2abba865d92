"""Tool guardrails: a policy check of a call's arguments before the tool runs, and of its result before the
model sees it; a rejection the model reads and works around, a trip that stops the run."""

from __future__ import annotations

import re
from typing import Any

import anyio
import attrs

from agentflow import (
    Agent,
    OpenAIChatModel,
    Rejection,
    ToolGuardrailContext,
    ToolGuardrailTripped,
    Tripwire,
    tool,
)
from agentflow.testing import Reply, ScriptedServer


@attrs.frozen
class Deps:
    """What the checks need: here, the most the signed-in agent may refund."""

    refund_limit: int


# --8<-- [start:input]
def within_limit(ctx: ToolGuardrailContext[Deps], arguments: dict[str, Any]) -> Rejection | Tripwire | None:
    amount = arguments["amount"]
    if amount > 10 * ctx.deps.refund_limit:
        # Not a request to work around: stop the run, for a person to look at.
        return Tripwire("refund far over the limit", info={"order": arguments["order"], "amount": amount})
    if amount > ctx.deps.refund_limit:
        # Written for the model: the call is not run, the model reads this and may answer otherwise.
        return Rejection(f"refunds over {ctx.deps.refund_limit} EUR need a manager; offer to escalate")
    return None  # the call goes on


# --8<-- [end:input]


# --8<-- [start:output]
async def no_card_numbers(ctx: ToolGuardrailContext[Deps], value: object) -> Rejection | None:
    # ``value`` is what the tool returned; ``ctx.output_text`` the text the model would be sent.
    if ctx.output_text and re.search(r"\b\d{16}\b", ctx.output_text):
        return Rejection("the customer record holds a card number; it cannot be shown")
    return None


# --8<-- [end:output]


# --8<-- [start:tool]
@tool(input_guardrails=[within_limit])
async def refund(order: str, amount: int) -> str:
    """Refund part of an order, in euros."""
    return f"refunded {amount} EUR on order {order}"


@tool(output_guardrails=[no_card_numbers])
async def customer(order: str) -> dict[str, str]:
    """The customer record of an order."""
    return {"name": "Ada Lovelace", "card": "4111111111111111"}


# --8<-- [end:tool]


async def main() -> None:
    turns = [
        # First run: a refund over the limit is rejected, the customer record withheld; the model answers.
        Reply(
            tool_calls=[
                ("refund", {"order": "A-17", "amount": 900}, "call_1"),
                ("customer", {"order": "A-17"}, "call_2"),
            ]
        ),
        Reply(text="I can't refund 900 EUR myself; shall I ask a manager?"),
        # Second run: far over the limit, the run stops.
        Reply(tool_calls=[("refund", {"order": "B-2", "amount": 90000}, "call_3")]),
    ]
    async with ScriptedServer(turns) as server:
        model = OpenAIChatModel(base_url=server.base_url, api_key="sk-test", model="gpt-test")
        # --8<-- [start:run]
        async with Agent(model, tools=[refund, customer]) as agent:
            result = await agent.run("Refund 900 EUR on A-17.", deps=Deps(refund_limit=500))
            print(result.output_text)  # the model worked around the rejection
            print([(r.name, r.error_type) for r in result.tool_results])  # both 'rejected'
            try:
                await agent.run("Refund 90000 EUR on B-2.", deps=Deps(refund_limit=500))
            except ToolGuardrailTripped as exc:
                print(exc.tool, exc.guardrail, "stopped the run:", exc.reason, exc.info)
        # --8<-- [end:run]
        assert [(r.name, r.error_type) for r in result.tool_results] == [
            ("refund", "rejected"),
            ("customer", "rejected"),
        ]
        # What the model was told, in place of running the refund and of the record's text.
        told = [m["content"] for m in server.requests[1].body["messages"] if m["role"] == "tool"]
        assert "need a manager" in told[0]
        assert "4111" not in told[1]
        assert len(server.requests) == 3  # the stopped run made no second model call

        # --8<-- [start:evolve]
        # A tool you did not decorate (an agent's as_tool(), an MCP server's) takes them by attrs.evolve.
        billing = Agent(model, name="Billing")
        ask_billing = attrs.evolve(
            billing.as_tool(description="Answers questions about invoices."),
            output_guardrails=[no_card_numbers],
        )
        # --8<-- [end:evolve]
        assert ask_billing.output_guardrails == (no_card_numbers,)


if __name__ == "__main__":
    anyio.run(main)
