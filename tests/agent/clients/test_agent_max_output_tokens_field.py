"""An agent's ``max_output_tokens`` goes out as ``max_completion_tokens`` on Chat, or under the field the
model names with ``OpenAIChatModel(max_tokens_field=…)`` (``max_tokens`` for Ollama, LM Studio,
llama-cpp-python), on blocking and streamed calls alike."""

from __future__ import annotations

from typing import Any

from agent_wire_replay import replay_server

from agentflow.agent.chat_client import ChatModelClient
from agentflow.agent.items import user_item
from agentflow.agent.prompt import AgentPrompt
from agentflow.providers.openai.chat_model import OpenAIChatModel

PROMPT = AgentPrompt(items=[user_item("hi")], max_output_tokens=64)


def limits(body: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in body.items() if "tokens" in key}


async def test_max_output_tokens_is_max_completion_tokens_by_default() -> None:
    async with (
        replay_server("chat_text_stop.json") as (url, replay),
        ChatModelClient(OpenAIChatModel(base_url=url, model="m")) as client,
    ):
        await client.create(PROMPT)
    assert limits(replay.bodies[0]) == {"max_completion_tokens": 64}


async def test_max_output_tokens_goes_under_the_models_field_blocking_and_streamed() -> None:
    async with (
        replay_server("chat_text_stop.json", "chat_stream_text_usage.json") as (url, replay),
        ChatModelClient(OpenAIChatModel(base_url=url, model="m", max_tokens_field="max_tokens")) as client,
    ):
        await client.create(PROMPT)
        await client.create_stream(PROMPT).collect()
    assert [limits(body) for body in replay.bodies] == [{"max_tokens": 64}, {"max_tokens": 64}]
