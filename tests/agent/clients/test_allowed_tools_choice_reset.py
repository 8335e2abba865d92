"""A ``tool_choice`` that forces a tool call is dropped once tools ran (``reset_tool_choice``), so the model
can answer: ``allowed_tools`` in mode ``required`` forces one as ``"required"`` does, in the Responses shape
(mode at the top) and the Chat one (mode inside ``allowed_tools``). Kept, it made every step call a tool
until ``max_steps``."""

from __future__ import annotations

from typing import Any

import pytest

from agentflow.agent.agent import Agent
from agentflow.agent.options import AgentOptions, ModelSettings
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.result import StopReason
from agentflow.testing import FakeModelClient, Reply, ScriptedServer, reply
from agentflow.tools import tool

ADD = [{"type": "function", "name": "add"}]


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@pytest.mark.parametrize(
    ("choice", "reset"),
    [
        ({"type": "allowed_tools", "mode": "required", "tools": ADD}, True),
        ({"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": ADD}}, True),
        ({"type": "required"}, True),
        ({"type": "allowed_tools", "mode": "auto", "tools": ADD}, False),  # forces nothing: kept
        ({"type": "web_search"}, False),  # a hosted tool runs inside the call: kept
    ],
)
async def test_a_forcing_choice_is_dropped_once_tools_ran(choice: dict[str, Any], reset: bool) -> None:
    client = FakeModelClient([reply(tool_calls=[("add", {"a": 1, "b": 2})]), reply("3")])
    agent = Agent(client, tools=[add], settings=ModelSettings(tool_choice=choice))
    result = await agent.run("1+2?")
    assert result.stop_reason is StopReason.FINAL_ANSWER
    first, second = client.prompts
    assert first.tool_choice == choice
    assert second.tool_choice == (None if reset else choice)


async def test_an_allowed_tools_required_run_answers_over_responses() -> None:
    choice = {"type": "allowed_tools", "mode": "required", "tools": ADD}
    turns = [Reply(tool_calls=[("add", {"a": 1, "b": 2})]), Reply(text="3")]
    async with ScriptedServer(turns) as server:
        model = OpenAIResponsesModel(base_url=server.base_url, api_key="sk-test", model="gpt-4.1")
        settings = ModelSettings(tool_choice=choice)
        async with Agent(model, tools=[add], settings=settings, options=AgentOptions(max_steps=2)) as agent:
            result = await agent.run("1+2?")
    assert (result.stop_reason, result.output_text) == (StopReason.FINAL_ANSWER, "3")
    first, second = (request.body for request in server.requests)
    assert first["tool_choice"] == choice
    assert "tool_choice" not in second
