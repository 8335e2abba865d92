"""Hosted tools on an agent: ``Agent(tools=[add, {"type": "web_search"}])`` sends the function tools, then
the hosted ones (as ``Agent(tools=[WebSearchTool(), fn])`` does in the Agents SDK); tools given in
``extra_body`` or as the model's default join them instead of being silently replaced; Chat Completions,
which has no hosted tools, refuses them when the agent is built (or the prompt mapped)."""

from __future__ import annotations

from typing import Any

import pytest

from agentflow.agent.agent import Agent
from agentflow.agent.chat_client import ChatModelClient, to_chat_request
from agentflow.agent.items import user_item
from agentflow.agent.options import ModelSettings
from agentflow.agent.prompt import AgentPrompt
from agentflow.agent.responses_client import to_responses_request
from agentflow.model.tools import ToolSpec
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.testing import Reply, ScriptedServer
from agentflow.tools import tool

WEB_SEARCH = {"type": "web_search"}
FILE_SEARCH = {"type": "file_search", "vector_store_ids": ["vs_1"]}


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def _wire_tools(body: dict[str, Any]) -> list[str]:
    return [f"{t['type']}:{t.get('name', '')}" for t in body.get("tools", ())]


async def test_an_agent_sends_function_tools_then_hosted_tools_and_runs_its_functions() -> None:
    turns = [Reply(tool_calls=[("add", {"a": 1, "b": 2})]), Reply(text="3")]
    async with ScriptedServer(turns) as server:
        model = OpenAIResponsesModel(base_url=server.base_url, api_key="sk-test", model="gpt-4.1")
        async with Agent(model, tools=[WEB_SEARCH, add, FILE_SEARCH]) as agent:
            result = await agent.run("1+2?")
    assert result.output_text == "3"
    assert [r.output for r in result.tool_results] == ["3"]
    first, second = (request.body for request in server.requests)
    assert _wire_tools(first) == _wire_tools(second) == ["function:add", "web_search:", "file_search:"]
    assert first["tools"][2] == FILE_SEARCH  # verbatim


async def test_hosted_tools_alone_go_out_without_parallel_tool_calls() -> None:
    async with ScriptedServer([Reply(text="found")]) as server:
        model = OpenAIResponsesModel(base_url=server.base_url, api_key="sk-test", model="gpt-4.1")
        settings = ModelSettings(parallel_tool_calls=False)
        async with Agent(model, tools=[WEB_SEARCH], settings=settings) as agent:
            await agent.run("news?")
    body = server.requests[0].body
    assert body["tools"] == [WEB_SEARCH]
    assert "parallel_tool_calls" not in body


@pytest.mark.parametrize(
    ("model_options", "settings"),
    [
        ({"tools": [WEB_SEARCH]}, ModelSettings()),
        ({"custom_parameters": {"tools": [WEB_SEARCH]}}, ModelSettings()),
        ({}, ModelSettings(extra_body={"tools": [WEB_SEARCH]})),
        # Given twice (the model's default and the agent's): sent once.
        ({"tools": [WEB_SEARCH]}, ModelSettings(extra_body={"tools": [WEB_SEARCH]})),
    ],
    ids=["model-default", "model-custom-parameters", "settings-extra-body", "both"],
)
async def test_tools_given_elsewhere_join_the_agents_function_tools(
    model_options: dict[str, Any], settings: ModelSettings
) -> None:
    async with ScriptedServer([Reply(text="ok")]) as server:
        model = OpenAIResponsesModel(
            base_url=server.base_url, api_key="sk-test", model="gpt-4.1", **model_options
        )
        async with Agent(model, tools=[add], settings=settings) as agent:
            await agent.run("hi")
    assert _wire_tools(server.requests[0].body) == ["function:add", "web_search:"]


def test_the_request_lists_every_tool_once_in_order() -> None:
    spec = ToolSpec("add", "Add.", {"type": "object"})
    prompt = AgentPrompt(
        model="m",
        items=[user_item("hi")],
        tools=[spec],
        hosted_tools=[WEB_SEARCH],
        extra_body={"tools": [WEB_SEARCH, FILE_SEARCH], "store": False},
    )
    request = to_responses_request(prompt, default_tools=[FILE_SEARCH, {"type": "image_generation"}])
    assert request.tools == (spec, WEB_SEARCH, FILE_SEARCH, {"type": "image_generation"})
    assert request.extra_body == {"store": False}  # the tools moved out: nothing to overwrite
    assert prompt.extra_body["tools"] == [WEB_SEARCH, FILE_SEARCH]  # the prompt's own map is untouched


def test_extra_body_tools_join_the_models_default_tools_without_tools_of_the_prompts_own() -> None:
    # Left in extra_body, they would lose to the request's tools field filled from the model's defaults.
    request = to_responses_request(
        AgentPrompt(model="m", extra_body={"tools": [FILE_SEARCH]}), default_tools=[WEB_SEARCH]
    )
    assert request.tools == (FILE_SEARCH, WEB_SEARCH)
    assert request.extra_body == {}
    request = to_responses_request(AgentPrompt(model="m", extra_body={"tools": [WEB_SEARCH]}))
    assert request.tools == (WEB_SEARCH,)


def test_malformed_extra_body_tools_are_a_clear_error() -> None:
    prompt = AgentPrompt(model="m", hosted_tools=[WEB_SEARCH], extra_body={"tools": WEB_SEARCH})
    with pytest.raises(TypeError, match=r"extra_body\['tools'\] must be a list of tools"):
        to_responses_request(prompt)


def test_an_agent_over_chat_completions_refuses_hosted_tools_when_built() -> None:
    model = OpenAIChatModel(model="gpt-4.1", api_key="sk-test")
    with pytest.raises(TypeError, match=r"'web_search'.*Responses API only.*OpenAIResponsesModel"):
        Agent(model, tools=[add, WEB_SEARCH])
    with pytest.raises(TypeError, match=r"OpenAIResponsesModel"):
        Agent(ChatModelClient(model), tools=[WEB_SEARCH])
    Agent(model, tools=[add])  # function tools alone are fine


def test_overriding_the_model_of_an_agent_with_hosted_tools_with_a_chat_one_is_refused() -> None:
    responses = OpenAIResponsesModel(model="gpt-4.1", api_key="sk-test")
    agent = Agent(responses, tools=[add, WEB_SEARCH])
    chat = OpenAIChatModel(model="gpt-4.1", api_key="sk-test")
    with pytest.raises(TypeError, match=r"'web_search'.*Responses API only"), agent.override(model=chat):
        pass  # pragma: no cover - refused
    with agent.override(tools=[add]), agent.override(model=OpenAIChatModel(model="m", api_key="sk-test")):
        pass  # no hosted tools in the overriding tools: a Chat model is fine


def test_a_chat_prompt_with_hosted_tools_is_refused_before_sending() -> None:
    prompt = AgentPrompt(model="m", items=[user_item("hi")], hosted_tools=[WEB_SEARCH])
    with pytest.raises(TypeError, match=r"hosted tools \('web_search'\) have no Chat Completions form"):
        to_chat_request(prompt)
    client = ChatModelClient(OpenAIChatModel(model="m", api_key="sk-test"))
    with pytest.raises(TypeError, match=r"no Chat Completions form"):
        client.create_stream(prompt)


def test_hosted_tools_is_the_last_prompt_field() -> None:
    # Positional construction of the fields before it must keep working.
    prompt = AgentPrompt("m", "system", "instructions", [user_item("hi")])
    assert (prompt.model, prompt.system_prompt, prompt.hosted_tools) == ("m", "system", ())
    with pytest.raises(TypeError, match=r"hosted_tools takes tool mappings"):
        AgentPrompt(hosted_tools=["web_search"])
