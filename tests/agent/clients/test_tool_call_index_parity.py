"""The same reply streams the same tool-call event indexes to an agent run on Chat and on Responses.

DESIGN §2: both protocols emit the same event vocabulary. The reply reasons and says something before its
two calls, which on Responses puts the calls at output items 2 and 3; the events still number them 0 and 1.
"""

from __future__ import annotations

import pytest

from agentflow.agent.agent import Agent
from agentflow.model.events import ToolCallArgumentsDelta, ToolCallReady, ToolCallStarted
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.testing import Reply, ScriptedServer


def echo(x: str) -> str:
    """Echo ``x``."""
    return x


_NAMES = {ToolCallStarted: "started", ToolCallArgumentsDelta: "delta", ToolCallReady: "ready"}


async def _call_event_indexes(
    model_type: type[OpenAIChatModel | OpenAIResponsesModel],
) -> list[tuple[str, int]]:
    script = [
        Reply(reasoning="hmm", text="Let me check.", tool_calls=[("echo", {"x": "a"}), ("echo", {"x": "b"})]),
        Reply(text="ok"),
    ]
    seen: list[tuple[str, int]] = []
    async with ScriptedServer(script) as server:
        agent = Agent(model_type(base_url=server.base_url, api_key="k", model="m"), tools=[echo])
        try:
            async with agent.stream("go") as run:
                async for event in run:
                    name = _NAMES.get(type(event))
                    if name is not None:
                        seen.append((name, event.index))  # type: ignore[attr-defined]
        finally:
            await agent.aclose()
    return seen


@pytest.mark.parametrize("model_type", [OpenAIChatModel, OpenAIResponsesModel])
async def test_tool_call_events_number_the_calls_of_a_reply_from_zero(
    model_type: type[OpenAIChatModel | OpenAIResponsesModel],
) -> None:
    seen = await _call_event_indexes(model_type)
    assert [e for e in seen if e[0] != "delta"] == [
        ("started", 0),
        ("ready", 0),
        ("started", 1),
        ("ready", 1),
    ]
    assert {index for kind, index in seen if kind == "delta"} == {0, 1}


async def test_chat_and_responses_stream_the_same_tool_call_indexes() -> None:
    assert await _call_event_indexes(OpenAIResponsesModel) == await _call_event_indexes(OpenAIChatModel)
