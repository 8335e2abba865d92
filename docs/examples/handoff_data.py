"""Handoff data: the model says why it escalates (``input_type``), and ``on_handoff`` records it; offline."""

from __future__ import annotations

import anyio
import attrs

from agentflow import Agent, ToolContext, handoff
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.testing import Reply, ScriptedServer


# --8<-- [start:data]
@attrs.frozen
class Escalation:
    """Why the conversation goes to a person."""

    reason: str
    urgent: bool = False


async def open_ticket(ctx: ToolContext[list[Escalation]], escalation: Escalation) -> None:
    ctx.deps.append(escalation)  # a real service would open a ticket here


# --8<-- [end:data]


async def main() -> None:
    script = [
        Reply(tool_calls=[("transfer_to_escalations", {"reason": "charged twice", "urgent": True})]),
        Reply(text="A colleague will call you within the hour."),
    ]
    async with ScriptedServer(script) as server:
        model = OpenAIChatModel(base_url=server.base_url, model="gpt-4.1-mini")
        # --8<-- [start:agents]
        escalations = Agent(model, name="Escalations", system_prompt="Reassure; a person follows up.")
        triage = Agent(
            model,
            name="Triage",
            handoffs=[handoff(escalations, input_type=Escalation, on_handoff=open_ticket)],
        )
        tickets: list[Escalation] = []
        result = await triage.run("I was charged twice and I'm furious.", deps=tickets)
        print(result.agent_name, tickets)  # Escalations [Escalation(reason='charged twice', urgent=True)]
        # --8<-- [end:agents]
        assert result.agent_name == "Escalations"
        assert tickets == [Escalation(reason="charged twice", urgent=True)]
        await model.aclose()


if __name__ == "__main__":
    anyio.run(main)
