"""``store=False`` on the Responses path: the server keeps nothing, so the reasoning items an agent replays
must carry their ``encrypted_content``; the request asks for it with ``include:
["reasoning.encrypted_content"]`` (as the stateless recording
``responses_reasoning_parallel_function_calls.json`` does), added to whatever ``include`` the user asked
for elsewhere."""

from __future__ import annotations

from typing import Any

import pytest
from agent_wire_replay import recording

from agentflow.agent.agent import Agent
from agentflow.agent.items import user_item
from agentflow.agent.options import ModelSettings
from agentflow.agent.prompt import AgentPrompt
from agentflow.agent.responses_client import (
    ResponsesModelClient,
    to_responses_request,
    wants_encrypted_reasoning,
)
from agentflow.providers.openai.responses_codec import encode_request
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.testing import Reply, ScriptedServer
from agentflow.tools import tool

ENCRYPTED = "reasoning.encrypted_content"
LOGPROBS = "message.output_text.logprobs"


def _body(prompt: AgentPrompt, model: OpenAIResponsesModel | None = None) -> dict[str, Any]:
    wanted = wants_encrypted_reasoning(prompt, model=model.model if model is not None else None)
    request = to_responses_request(prompt, encrypted_reasoning=wanted)
    if model is not None:
        request = model.build_request(request)
    return encode_request(request, stream=False)


def test_the_stateless_recording_pairs_store_false_with_encrypted_reasoning() -> None:
    sent = recording("responses_reasoning_parallel_function_calls.json")["request"]
    assert sent["store"] is False
    assert sent["include"] == [ENCRYPTED]
    body = _body(AgentPrompt(model="gpt-5.5", items=[user_item("hi")], store=False))
    assert (body["store"], body["include"]) == (False, sent["include"])


@pytest.mark.parametrize("store", [True, None])
def test_a_stored_or_default_prompt_asks_for_no_extra_output(store: bool | None) -> None:
    body = _body(AgentPrompt(model="m", items=[user_item("hi")], store=store))
    assert "include" not in body


def test_encrypted_reasoning_joins_an_extra_body_include_once() -> None:
    prompt = AgentPrompt(
        model="o4-mini", items=[user_item("hi")], store=False, extra_body={"include": [LOGPROBS, ENCRYPTED]}
    )
    assert _body(prompt)["include"] == [LOGPROBS, ENCRYPTED]
    prompt = AgentPrompt(
        model="o4-mini", items=[user_item("hi")], store=False, extra_body={"include": [LOGPROBS]}
    )
    assert _body(prompt)["include"] == [LOGPROBS, ENCRYPTED]


def test_encrypted_reasoning_joins_the_models_default_include() -> None:
    model = OpenAIResponsesModel(model="o3", include=[LOGPROBS])
    body = _body(AgentPrompt(items=[user_item("hi")], store=False), model)
    assert body["include"] == [LOGPROBS, ENCRYPTED]
    model = OpenAIResponsesModel(model="o3", custom_parameters={"include": [LOGPROBS]})
    assert _body(AgentPrompt(items=[user_item("hi")], store=False), model)["include"] == [LOGPROBS, ENCRYPTED]


def test_a_malformed_extra_body_include_is_a_clear_error() -> None:
    prompt = AgentPrompt(model="o3", items=[user_item("hi")], store=False, extra_body={"include": LOGPROBS})
    with pytest.raises(TypeError, match=r"extra_body\['include'\] must be a sequence of strings"):
        _body(prompt)


@pytest.mark.parametrize(
    ("model", "reasoning", "setting", "asked"),
    [
        ("o4-mini", None, None, True),
        ("openai/o3", None, None, True),  # a router's name for it
        ("gpt-5.1", None, None, True),
        ("gpt-5-chat-latest", None, None, False),  # does not reason
        # OpenAI's non-reasoning models answer 400 "Encrypted content is not supported with this model".
        ("gpt-4o", None, None, False),
        ("my-deployment", {"effort": "low"}, None, True),  # asking for reasoning says it reasons
        ("my-deployment", None, True, True),  # the client's setting decides when given
        ("o3", None, False, False),
    ],
)
def test_which_stateless_prompts_ask_for_encrypted_reasoning(
    model: str, reasoning: dict[str, str] | None, setting: bool | None, asked: bool
) -> None:
    prompt = AgentPrompt(model=model, items=[user_item("hi")], store=False, reasoning=reasoning)
    assert wants_encrypted_reasoning(prompt, setting=setting) is asked
    stored = AgentPrompt(model=model, items=[user_item("hi")], reasoning=reasoning)
    assert wants_encrypted_reasoning(stored, setting=setting) is False  # a stored prompt never needs it


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@pytest.mark.parametrize("streamed", [False, True])
async def test_stateless_agent_run_replays_reasoning_with_its_encrypted_content(streamed: bool) -> None:
    turns = [Reply(reasoning="adding", tool_calls=[("add", {"a": 1, "b": 2})]), Reply(text="3")]
    async with ScriptedServer(turns) as server:
        model = OpenAIResponsesModel(base_url=server.base_url, api_key="sk-test", model="gpt-5")
        async with Agent(model, tools=[add], settings=ModelSettings(store=False)) as agent:
            if streamed:
                async with agent.stream("add 1 and 2") as run:
                    async for _ in run:
                        pass
                result = run.result
            else:
                result = await agent.run("add 1 and 2")
    assert result.output_text == "3"
    first, second = (request.body for request in server.requests)
    assert first["include"] == second["include"] == [ENCRYPTED]
    replayed = [item for item in second["input"] if item.get("type") == "reasoning"]
    assert len(replayed) == 1
    assert replayed[0]["encrypted_content"]  # the server can read it back: no lookup of a stored rs_… id


async def test_a_client_without_encrypted_reasoning_sends_store_false_alone() -> None:
    async with ScriptedServer([Reply(text="hi")]) as server:
        model = OpenAIResponsesModel(base_url=server.base_url, api_key="sk-test", model="o3")
        client = ResponsesModelClient(model, encrypted_reasoning=False)
        async with Agent(client, settings=ModelSettings(store=False)) as agent:
            await agent.run("hi")
    body = server.requests[0].body
    assert body["store"] is False
    assert "include" not in body
