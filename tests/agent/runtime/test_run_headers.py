"""``ModelSettings(extra_headers=...)``: HTTP headers on every model call of an agent's runs, or of one run
(``settings=``, merged key by key over the agent's), after the model's own headers — a request id, a trace
header, a gateway's per-user key — on both protocols, blocking and streamed, planning calls included."""

from __future__ import annotations

from typing import Any

import pytest

from agentflow.agent.agent import Agent
from agentflow.agent.agents import Agents
from agentflow.agent.options import AgentOptions, ModelSettings, merge_settings
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.testing import Reply, ScriptedServer
from agentflow.testing.fake import FakeChatModel, chat_reply
from agentflow.tools import tool


@tool
def lookup(q: str) -> str:
    """Look something up."""
    return f"about {q}"


def model_for(protocol: str, server: ScriptedServer) -> Any:
    cls = OpenAIChatModel if protocol == "chat" else OpenAIResponsesModel
    return cls(base_url=server.base_url, api_key="sk-test", model="m", custom_headers={"X-App": "shop"})


@pytest.mark.parametrize("stream", [False, True], ids=["blocking", "stream"])
@pytest.mark.parametrize("protocol", ["chat", "responses"])
async def test_a_run_s_headers_go_with_each_of_its_model_calls_and_not_the_next_run_s(
    protocol: str, stream: bool
) -> None:
    turns = [Reply(tool_calls=[("lookup", {"q": "x"})]), Reply(text="done"), Reply(text="again")]
    async with ScriptedServer(turns) as server:
        settings = ModelSettings(extra_headers={"X-Tenant": "acme", "X-App": "shop-eu"})
        agent = Agent(
            model_for(protocol, server),
            tools=[lookup],
            settings=settings,
            options=AgentOptions(stream=stream),
        )
        async with agent:
            await agent.run("go", settings=ModelSettings(extra_headers={"X-Request-Id": "req-1"}))
            await agent.run("again")
    first, second, other_run = (r.headers for r in server.requests)
    for sent in (first, second):
        assert (sent["x-request-id"], sent["x-tenant"], sent["x-app"]) == ("req-1", "acme", "shop-eu")
    assert "x-request-id" not in other_run
    assert other_run["x-tenant"] == "acme"


async def test_a_planning_call_carries_the_run_s_headers() -> None:
    turns = [Reply(text='["Look it up"]'), Reply(text="done")]
    async with ScriptedServer(turns) as server:
        agent = Agents.deep_research(model_for("chat", server), planner="model")
        async with agent:
            await agent.run("goal", settings=ModelSettings(extra_headers={"X-Request-Id": "req-2"}))
    assert [r.headers.get("x-request-id") for r in server.requests] == ["req-2", "req-2"]


def test_settings_merge_headers_key_by_key_and_check_them() -> None:
    agent = ModelSettings(extra_headers={"X-Tenant": "acme", "X-App": "shop"})
    merged = merge_settings(agent, ModelSettings(extra_headers={"X-App": "eu"}))
    assert dict(merged.extra_headers) == {"X-Tenant": "acme", "X-App": "eu"}
    with pytest.raises(TypeError, match="extra_headers header 'X-Id' must have a str value, got int"):
        ModelSettings(extra_headers={"X-Id": 7})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match=r"did you mean ModelSettings\(extra_headers="):
        ModelSettings(headers={"X-Id": "7"})  # type: ignore[call-arg]


async def test_fake_chat_model_takes_the_run_s_headers_and_records_them() -> None:
    model = FakeChatModel([chat_reply("hi")])
    await Agent(model, settings=ModelSettings(extra_headers={"X-Request-Id": "r1"})).run("hi")
    assert model.headers == [{"X-Request-Id": "r1"}]
    assert model.requests[0].parameters.custom == {}
