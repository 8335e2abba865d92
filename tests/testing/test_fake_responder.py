"""One callable instead of a script answers every call of a fake model (pydantic-ai's ``FunctionModel``)."""

from __future__ import annotations

from typing import Any

import pytest

from agentflow import Agent, AgentPrompt, tool
from agentflow.agent.prompt import AgentModelResult
from agentflow.model.request import ChatRequest
from agentflow.model.response import ChatResponse
from agentflow.testing.fake import FakeChatModel, FakeModelClient, chat_reply, reply


@tool
def lookup(q: str) -> str:
    """Look something up."""
    return "found " + q


async def test_one_callable_answers_every_call_of_a_fake_client() -> None:
    def answer(prompt: AgentPrompt) -> AgentModelResult:
        if prompt.items[-1].get("type") == "function_call_output":
            return reply("done: " + prompt.items[-1]["output"])
        return reply(tool_calls=[("lookup", {"q": "x"})])

    model = FakeModelClient(answer)
    result = await Agent(model, tools=[lookup]).run("hi")
    assert result.output_text == "done: found x"
    assert len(model.prompts) == 2
    assert model.remaining == 0


async def test_one_async_callable_answers_a_fake_chat_model_streamed_or_not() -> None:
    async def answer(request: ChatRequest) -> ChatResponse:
        return chat_reply(f"{len(request.messages)} messages")

    model = FakeChatModel(answer)
    assert (await Agent(model).run("x")).output_text == "2 messages"
    async with Agent(model).stream("y") as run:
        async for _ in run:
            pass
    assert run.result is not None
    assert run.result.output_text == "2 messages"
    assert len(model.requests) == 2


@pytest.mark.parametrize("script", [3, None])
def test_neither_a_script_nor_a_callable_is_refused(script: Any) -> None:
    with pytest.raises(TypeError, match=r"takes a script .* or one callable answering every call"):
        FakeModelClient(script)
