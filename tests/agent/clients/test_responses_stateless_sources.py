"""A stateless request asks for ``reasoning.encrypted_content`` whichever way ``store=False`` (and
``reasoning``) reach it: the prompt, its ``extra_body``, or the model's defaults. Deciding from the prompt's
own fields alone missed the other two, and the next step replayed bare ``rs_…`` ids that a ``store=False``
request cannot look up (OpenAI answers 404)."""

from __future__ import annotations

from typing import Any

import pytest

from agentflow.agent.agent import Agent
from agentflow.agent.items import user_item
from agentflow.agent.options import ModelSettings
from agentflow.agent.prompt import AgentPrompt
from agentflow.agent.responses_client import outgoing_field, wants_encrypted_reasoning
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.testing import Reply, ScriptedServer
from agentflow.tools import tool

ENCRYPTED = "reasoning.encrypted_content"


@pytest.mark.parametrize(
    ("prompt", "defaults", "asked"),
    [
        (AgentPrompt(model="o4-mini"), {"store": False}, True),
        (AgentPrompt(model="o4-mini", extra_body={"store": False}), {}, True),
        (AgentPrompt(model="o4-mini"), {"extra_body": {"store": False}}, True),
        # The model's name comes from its defaults when the prompt has none.
        (AgentPrompt(store=False), {"model": "o3"}, True),
        (AgentPrompt(store=False), {"model": "gpt-4o"}, False),
        # Reasoning asked for by default says the deployment reasons, whatever its name.
        (AgentPrompt(model="my-deployment", store=False), {"reasoning": {"effort": "low"}}, True),
        (
            AgentPrompt(model="my-deployment", store=False, extra_body={"reasoning": {"effort": "low"}}),
            {},
            True,
        ),
        # What goes out decides: the prompt's store over the model's, a standard field over extra_body.
        (AgentPrompt(model="o3", store=True), {"store": False}, False),
        (AgentPrompt(model="o3", extra_body={"store": False}), {"store": True}, False),
    ],
)
def test_store_and_reasoning_are_read_as_the_request_sends_them(
    prompt: AgentPrompt, defaults: dict[str, Any], asked: bool
) -> None:
    assert wants_encrypted_reasoning(prompt, defaults=defaults) is asked


def test_outgoing_field_follows_the_wire_order() -> None:
    defaults = {"store": None, "extra_body": {"store": False}}
    assert outgoing_field(AgentPrompt(), "store", None, defaults) is False
    assert outgoing_field(AgentPrompt(extra_body={"store": True}), "store", None, defaults) is True
    assert (
        outgoing_field(AgentPrompt(), "store", None, {"store": True, "extra_body": {"store": False}}) is True
    )
    assert outgoing_field(AgentPrompt(), "store") is None


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@pytest.mark.parametrize(
    ("model_options", "settings"),
    [
        ({"store": False}, ModelSettings()),
        ({"custom_parameters": {"store": False}}, ModelSettings()),
        ({}, ModelSettings(extra_body={"store": False})),
        ({"store": False, "reasoning": {"effort": "low"}}, ModelSettings(model="my-deployment")),
    ],
    ids=["model-default", "model-custom-parameters", "settings-extra-body", "default-reasoning"],
)
async def test_an_agent_replays_encrypted_reasoning_when_store_false_comes_from_elsewhere(
    model_options: dict[str, Any], settings: ModelSettings
) -> None:
    turns = [Reply(reasoning="adding", tool_calls=[("add", {"a": 1, "b": 2})]), Reply(text="3")]
    async with ScriptedServer(turns) as server:
        model = OpenAIResponsesModel(
            base_url=server.base_url, api_key="sk-test", model="o4-mini", **model_options
        )
        async with Agent(model, tools=[add], settings=settings) as agent:
            result = await agent.run("add 1 and 2")
    assert result.output_text == "3"
    first, second = (request.body for request in server.requests)
    assert first["store"] is False
    assert first["include"] == second["include"] == [ENCRYPTED]
    (replayed,) = [item for item in second["input"] if item.get("type") == "reasoning"]
    assert replayed["encrypted_content"]


def test_a_prompt_built_by_hand_still_decides_alone() -> None:
    prompt = AgentPrompt(model="o4-mini", items=[user_item("hi")], store=False)
    assert wants_encrypted_reasoning(prompt) is True
    assert wants_encrypted_reasoning(prompt, setting=False) is False
