"""Both agent model clients end to end: the real OpenAI models against a local server replaying recordings
from ``shared/wire``. Events arrive mid-stream, and the memory items of one call make a valid next request."""

from __future__ import annotations

from agent_wire_replay import replay_server

from agentflow.agent.chat_client import ChatModelClient
from agentflow.agent.items import function_call_output_item, user_item
from agentflow.agent.prompt import AgentModelResult, AgentPrompt
from agentflow.agent.responses_client import ResponsesModelClient
from agentflow.model.events import ModelCompleted, ModelEvent, ReasoningDelta, ToolCallReady, ToolCallStarted
from agentflow.model.tools import ToolSpec
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.responses_model import OpenAIResponsesModel

WEATHER = ToolSpec(
    "get_current_weather",
    "Get the current weather in a given location",
    {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]},
)


def _completed(events: list[ModelEvent]) -> AgentModelResult:
    last = events[-1]
    assert isinstance(last, ModelCompleted)
    assert isinstance(last.response, AgentModelResult)
    return last.response


async def test_chat_client_streams_tool_calls_then_sends_its_memory_back() -> None:
    async with (
        replay_server("chat_stream_parallel_tool_calls_usage.json", "chat_text_stop.json") as (
            url,
            replay,
        ),
        ChatModelClient(OpenAIChatModel(base_url=url, api_key="sk-test", model="gpt-4o-mini")) as client,
    ):
        prompt = AgentPrompt(
            system_prompt="You're a helpful assistant.",
            instructions="Use tools when necessary.",
            items=[user_item("What's the weather in Seattle and San Francisco today?")],
            tools=[WEATHER],
            tool_choice="auto",
            max_output_tokens=200,
            reasoning={"effort": "low"},
            store=True,
        )
        async with client.create_stream(prompt) as stream:
            events = [event async for event in stream]
        result = _completed(events)
        ready = [i for i, e in enumerate(events) if isinstance(e, ToolCallReady)]
        assert len(result.tool_calls) == 2
        assert len(ready) == 2
        assert ready[-1] < len(events) - 1
        assert isinstance(
            events[min(i for i, e in enumerate(events) if isinstance(e, ToolCallStarted))],
            ToolCallStarted,
        )
        assert result.usage is not None
        assert result.usage.total_tokens > 0

        outputs = [function_call_output_item(call.id, "sunny") for call in result.tool_calls]
        follow_up = AgentPrompt(items=[*prompt.items, *result.memory_items, *outputs])
        final = await client.create(follow_up)
        assert final.output_text

    first, second = replay.bodies
    assert [m["role"] for m in first["messages"]] == ["system", "system", "user"]
    assert first["messages"][0]["content"] == "You're a helpful assistant."
    assert first["max_completion_tokens"] == 200
    assert first["reasoning_effort"] == "low"
    assert "store" not in first
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "tool", "tool"]
    assert [c["id"] for c in second["messages"][1]["tool_calls"]] == [c.id for c in result.tool_calls]
    assert [m["tool_call_id"] for m in second["messages"][2:]] == [c.id for c in result.tool_calls]


async def test_responses_client_streams_reasoning_and_tool_calls_and_replays_encrypted_reasoning() -> None:
    names = ("responses_stream_reasoning_summary_function_call.json", "responses_message.json")
    async with replay_server(*names) as (url, replay):
        model = OpenAIResponsesModel(base_url=url, api_key="sk-test", model="gpt-5.1-codex-max")
        async with ResponsesModelClient(model) as client:
            prompt = AgentPrompt(
                system_prompt="You are a calculator.",
                instructions="Call the tool once per step.",
                items=[user_item("What is 2+3?")],
                tools=[WEATHER],
                reasoning={"effort": "high", "summary": "detailed"},
                store=False,
                extra_body={"include": ["reasoning.encrypted_content"]},
            )
            async with client.create_stream(prompt) as stream:
                events = [event async for event in stream]
            result = _completed(events)
            reasoning_at = [i for i, e in enumerate(events) if isinstance(e, ReasoningDelta)]
            ready_at = [i for i, e in enumerate(events) if isinstance(e, ToolCallReady)]
            assert reasoning_at
            assert ready_at
            assert max(reasoning_at) < min(ready_at) < len(events) - 1
            assert result.reasoning_text
            assert len(result.tool_calls) == 1
            reasoning_item = result.memory_items[0]
            assert reasoning_item["type"] == "reasoning"
            assert reasoning_item["encrypted_content"]

            outputs = [function_call_output_item(call.id, "5") for call in result.tool_calls]
            await client.create(AgentPrompt(items=[*prompt.items, *result.memory_items, *outputs]))

    first, second = replay.bodies
    assert first["instructions"] == "You are a calculator."
    assert first["input"][0] == {
        "type": "message",
        "role": "system",
        "content": [{"type": "input_text", "text": "Call the tool once per step."}],
    }
    assert first["store"] is False
    assert first["tools"][0]["name"] == "get_current_weather"
    assert second["input"][1] == reasoning_item
    assert second["input"][2]["type"] == "function_call"
    assert second["input"][3] == {
        "type": "function_call_output",
        "call_id": result.tool_calls[0].id,
        "output": "5",
    }
