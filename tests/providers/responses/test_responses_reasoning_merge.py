"""``reasoning`` holds independent settings (``effort``, ``summary``), as ``text`` does: a request's
``reasoning`` (an agent's ``ModelSettings(reasoning=…)``, the chat view's ``reasoning_effort``) is merged key
by key over the model's default, so asking for more effort no longer turns the model's summaries off. An
override keyword still replaces it."""

from __future__ import annotations

from agentflow import UserMessage
from agentflow.agent.agent import Agent
from agentflow.agent.options import ModelSettings
from agentflow.model.request import ChatParameters, ChatRequest
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.providers.openai.responses_types import ResponsesRequest
from agentflow.testing import Reply, ScriptedServer


def test_a_request_s_effort_keeps_the_model_s_summary() -> None:
    model = OpenAIResponsesModel(model="gpt-5", reasoning={"summary": "auto", "effort": "low"})
    request = model.build_request(ResponsesRequest("hi", reasoning={"effort": "high"}))
    assert request.reasoning == {"summary": "auto", "effort": "high"}
    assert model.build_request("hi").reasoning == {"summary": "auto", "effort": "low"}


def test_an_override_keyword_replaces_the_reasoning() -> None:
    model = OpenAIResponsesModel(model="gpt-5", reasoning={"summary": "auto"})
    request = model.build_request(ResponsesRequest("hi"), reasoning={"effort": "high"})
    assert request.reasoning == {"effort": "high"}


async def test_the_chat_view_s_reasoning_effort_and_an_agent_s_settings_keep_the_summary() -> None:
    turns = [Reply(text="a"), Reply(text="b")]
    async with ScriptedServer(turns) as server:
        model = OpenAIResponsesModel(
            base_url=server.base_url, api_key="sk-test", model="gpt-5", reasoning={"summary": "auto"}
        )
        request = ChatRequest([UserMessage("hi")], ChatParameters(reasoning_effort="high"))
        await model.chat(request)
        async with Agent(model, settings=ModelSettings(reasoning={"effort": "minimal"})) as agent:
            await agent.run("hi")
    sent = [r.body["reasoning"] for r in server.requests]
    assert sent == [{"summary": "auto", "effort": "high"}, {"summary": "auto", "effort": "minimal"}]
