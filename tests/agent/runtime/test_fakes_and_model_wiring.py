"""The public fakes, and how an Agent wraps the model it is given."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from runtime_support import add

from agentflow.agent.agent import Agent, as_model_client
from agentflow.agent.chat_client import ChatModelClient
from agentflow.agent.prompt import AgentPrompt
from agentflow.agent.responses_client import ResponsesModelClient
from agentflow.model.events import ModelCompleted, TextDelta, ToolCallReady, UsageReported
from agentflow.model.messages import SystemMessage, ToolResultMessage, UserMessage
from agentflow.result import StopReason
from agentflow.testing.fake import (
    FakeChatModel,
    FakeModelClient,
    ScriptExhaustedError,
    chat_reply,
    reply,
)


async def test_fake_model_client_streams_a_result_as_provider_like_events() -> None:
    fake = FakeModelClient([reply("Hello", tool_calls=[("c1", "add", {"a": 1})], usage=(3, 2))], chunk_size=2)
    async with fake.create_stream(AgentPrompt()) as stream:
        events = [e async for e in stream]
    kinds = [type(e).__name__ for e in events]
    assert kinds[:3] == ["TextDelta", "TextDelta", "TextDelta"]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello"
    assert any(isinstance(e, ToolCallReady) and e.call.id == "c1" for e in events)
    assert isinstance(events[-2], UsageReported)
    assert isinstance(events[-1], ModelCompleted)
    assert fake.streams_open == 0
    assert fake.streams_opened == 1


async def test_fake_model_client_raises_scripted_errors_and_reports_exhaustion() -> None:
    fake = FakeModelClient([ValueError("boom")])
    with pytest.raises(ValueError, match="boom"):
        await fake.create(AgentPrompt())
    with pytest.raises(ScriptExhaustedError, match="called 2 times"):
        await fake.create(AgentPrompt())


async def test_fake_model_client_accepts_callables_and_async_generators() -> None:
    def sync_entry(prompt: AgentPrompt) -> Any:
        return reply(f"{len(prompt.items)} items")

    async def gen_entry(_prompt: AgentPrompt) -> Any:
        yield TextDelta("a")
        yield ModelCompleted(reply("a"))

    fake = FakeModelClient([sync_entry, gen_entry])
    assert (
        await fake.create(AgentPrompt(items=[{"type": "message", "role": "user", "content": "x"}]))
    ).output_text == "1 items"
    assert (await fake.create(AgentPrompt())).output_text == "a"


async def test_an_agent_on_a_chat_model_goes_through_chat_model_client() -> None:
    model = FakeChatModel(
        [chat_reply(tool_calls=[("c1", "add", {"a": 2, "b": 2})], usage=(5, 5)), chat_reply("4")]
    )
    agent = Agent(model, tools=[add], system_prompt="Be brief.")

    assert isinstance(agent.model_client, ChatModelClient)
    result = await agent.run("2+2?")

    assert (result.output_text, result.stop_reason) == ("4", StopReason.FINAL_ANSWER)
    second = model.requests[1]
    assert isinstance(second.messages[0], SystemMessage)
    assert second.messages[0].text.startswith("Be brief.\n\nUse tools when necessary.")
    assert isinstance(second.messages[1], UserMessage)
    assert second.messages[-1] == ToolResultMessage("c1", "4")
    assert [t.name for t in second.parameters.tools or ()] == ["add"]


async def test_an_agent_streams_a_chat_model_mid_call() -> None:
    model = FakeChatModel([chat_reply("streamed text")], chunk_size=4)
    agent = Agent(model)
    async with agent.stream("hi") as run:
        deltas = [e.text async for e in run if isinstance(e, TextDelta)]
    assert deltas == ["stre", "amed", " tex", "t"]
    assert model.streams_open == 0


async def test_model_wiring_rules() -> None:
    fake = FakeModelClient([])
    assert as_model_client(fake) is fake
    chat_client = ChatModelClient(FakeChatModel([]))
    assert as_model_client(chat_client) is chat_client
    with pytest.raises(TypeError, match="ChatModel"):
        Agent(object())


async def test_an_openai_responses_model_is_wrapped_in_a_responses_model_client() -> None:
    from agentflow.providers.openai.responses_model import OpenAIResponsesModel

    model = OpenAIResponsesModel(base_url="http://127.0.0.1:9", api_key="sk-test", model="m")
    try:
        assert isinstance(as_model_client(model), ResponsesModelClient)
    finally:
        await model.aclose()


async def test_unknown_runtime_names_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="unknown runtime 'nope'"):
        Agent(FakeModelClient([]), runtime="nope")


async def test_agent_async_context_manager_closes_the_model() -> None:
    fake = FakeModelClient([reply("x")])
    async with Agent(fake) as agent:
        await agent.run("hi")
    assert fake.closed
    await anyio.lowlevel.checkpoint()
