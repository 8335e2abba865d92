"""Guardrails per run (a request's own checks, after the agent's) and in ``agent.override`` (a test that
switches the application's off, or swaps in a fake)."""

from __future__ import annotations

import re

import anyio
import pytest

from agentflow import (
    Agent,
    GuardrailContext,
    InputGuardrailTripped,
    OpenAIChatModel,
    OutputGuardrailTripped,
    Tripwire,
)
from agentflow.testing import Reply, ScriptedServer
from agentflow.testing.fake import FakeModelClient, reply


def no_card_numbers(ctx: GuardrailContext[None], text: str) -> Tripwire | None:
    return Tripwire("holds a card number") if re.search(r"\b\d{16}\b", text) else None


def no_links(ctx: GuardrailContext[None], answer: str) -> Tripwire | None:
    return Tripwire("the answer holds a link") if "http" in answer else None


# --8<-- [start:per_run]
async def kids_endpoint(agent: Agent[str], question: str) -> str:
    # This endpoint's own check, run after the agent's no_card_numbers (on every run of the agent).
    result = await agent.run(question, output_guardrails=[no_links])
    return result.output_text


# --8<-- [end:per_run]


# --8<-- [start:override]
support_agent = Agent(FakeModelClient([]), input_guardrails=[no_card_numbers])  # built by the application


async def test_the_app_s_agent_without_its_guardrails() -> None:
    fake = FakeModelClient([reply("Your card 4111111111111111 is blocked.")])
    with support_agent.override(model=fake, input_guardrails=[]):  # [] switches them off
        result = await support_agent.run("Why is 4111111111111111 blocked?")
    assert "blocked" in result.output_text


async def test_the_app_when_its_check_trips() -> None:
    def always(ctx: GuardrailContext[None], text: str) -> Tripwire:  # a fake of a classifier agent
        return Tripwire("flagged")

    fake = FakeModelClient([reply("unused")])
    with support_agent.override(model=fake, input_guardrails=[always]), pytest.raises(InputGuardrailTripped):
        await support_agent.run("Hello")  # or the application code that runs it


# --8<-- [end:override]


async def main() -> None:
    async with ScriptedServer(default=Reply(text="See https://example.com/dinosaurs")) as server:
        agent = Agent(
            OpenAIChatModel(base_url=server.base_url, model="gpt-4o-mini"),
            input_guardrails=[no_card_numbers],
        )
        async with agent:
            try:
                await kids_endpoint(agent, "Tell me about dinosaurs")
            except OutputGuardrailTripped as exc:
                print(exc.guardrail, "stopped the answer:", exc.reason)  # no_links … holds a link
            else:
                raise AssertionError("the endpoint's own check should have stopped the answer")
            with pytest.raises(InputGuardrailTripped):  # the agent's own check still runs first
                await kids_endpoint(agent, "My card is 4111111111111111")
    await test_the_app_s_agent_without_its_guardrails()
    await test_the_app_when_its_check_trips()


if __name__ == "__main__":
    anyio.run(main)
