"""Integer keys in a request body (``logit_bias`` token ids, as the openai SDK takes them) are sent as JSON
strings instead of failing with orjson's ``TypeError: Dict key must be str`` before anything is sent."""

from __future__ import annotations

from agentflow import UserMessage
from agentflow.agent.agent import Agent
from agentflow.agent.options import ModelSettings
from agentflow.model.request import ChatParameters, ChatRequest
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.testing import Reply, ScriptedServer

BIAS = {50256: -100, 1734: 5}


async def test_chat_sends_integer_token_ids_as_strings_blocking_and_streamed() -> None:
    async with ScriptedServer([Reply(text="a"), Reply(text="b")]) as server:
        model = OpenAIChatModel(base_url=server.base_url, api_key="sk-test", model="m")
        request = ChatRequest([UserMessage("hi")], ChatParameters(custom={"logit_bias": BIAS}))
        await model.chat(request)
        await model.stream(request).collect()
        await model.aclose()
    assert [r.body["logit_bias"] for r in server.requests] == [{"50256": -100, "1734": 5}] * 2


async def test_an_agent_s_extra_body_and_the_responses_protocol_too() -> None:
    async with ScriptedServer([Reply(text="a")]) as server:
        model = OpenAIResponsesModel(base_url=server.base_url, api_key="sk-test", model="m")
        async with Agent(model, settings=ModelSettings(extra_body={"logit_bias": BIAS})) as agent:
            await agent.run("hi")
    assert server.requests[0].body["logit_bias"] == {"50256": -100, "1734": 5}
