"""Guardrails: an input check beside the first model call, a blocking one, and a check of the answer."""

from __future__ import annotations

import re

import anyio
import attrs

from agentflow import (
    Agent,
    GuardrailContext,
    InputGuardrailTripped,
    OpenAIChatModel,
    OutputGuardrailTripped,
    Tripwire,
    guardrail,
)
from agentflow.testing import Reply, ScriptedServer


@attrs.frozen
class Deps:
    """What the run's checks need: here, the user's plan."""

    plan: str


# --8<-- [start:input]
async def no_homework(ctx: GuardrailContext[Deps], text: str) -> Tripwire | None:
    # Runs while the model already answers: a trip cancels that call, and no tool of it runs.
    if ctx.deps.plan == "free" and "solve" in text.lower():
        return Tripwire("asks us to do homework", info={"plan": ctx.deps.plan})
    return None  # passes


@guardrail(blocking=True)  # before the model call: nothing is sent, nor streamed, until it passes
def no_card_numbers(ctx: GuardrailContext[Deps], text: str) -> Tripwire | None:
    return Tripwire("holds a card number") if re.search(r"\b\d{16}\b", text) else None


# --8<-- [end:input]


# --8<-- [start:output]
def no_emails(ctx: GuardrailContext[Deps], answer: str) -> Tripwire | None:
    found = re.findall(r"\S+@\S+", answer)
    return Tripwire("the answer holds an email address", info=found) if found else None


# --8<-- [end:output]


async def main() -> None:
    # Every request gets this answer (whether the first run's call reached the server before its
    # guardrail tripped is a race the example does not care about).
    async with ScriptedServer(default=Reply(text="Write to ada@example.com.")) as server:
        model = OpenAIChatModel(base_url=server.base_url, model="gpt-4o-mini")
        # --8<-- [start:agent]
        agent = Agent(
            model,
            input_guardrails=[no_homework, no_card_numbers],
            output_guardrails=[no_emails],
        )
        async with agent:
            try:
                await agent.run("Solve 3x + 1 = 7 for me", deps=Deps(plan="free"))
            except InputGuardrailTripped as exc:
                print(exc.guardrail, "stopped the run:", exc.reason)  # no_homework … asks us to do homework
            try:
                await agent.run("Who do I write to?", deps=Deps(plan="pro"))
            except OutputGuardrailTripped as exc:
                print("held back:", exc.partial.output_text)  # the stopped answer, for your logs
        # --8<-- [end:agent]
        # The second run's model was asked, and its answer was stopped.
        assert server.requests[-1].body["messages"][-1]["content"] == "Who do I write to?"


if __name__ == "__main__":
    anyio.run(main)
