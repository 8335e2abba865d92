"""Provider fields survive the agent layer: ``ChatModelClient`` keeps OpenRouter's ``reasoning_details`` and
Gemini's per-call ``extra_content`` in the reply's memory item, the next step sends them back as they came,
and so does a session stored as JSON (``dump_items`` / ``load_items``) and loaded again. Without them, the
next request of a Gemini 3 tool loop answers 400. ``echo_reasoning=False`` (or a 400 naming the field) sends
none. A custom tool call keeps its own shape through memory too."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from agent_wire_replay import replay_server

from agentflow.agent.agent import Agent
from agentflow.agent.chat_client import ChatModelClient, _remember_reply, chat_result
from agentflow.agent.items import dump_items, load_items, message_to_item, to_chat_messages
from agentflow.agent.memory import InMemoryMemory
from agentflow.agent.options import AgentOptions
from agentflow.agent.prompt import AgentPrompt
from agentflow.model.messages import AiMessage, ToolCall
from agentflow.model.response import ChatResponse
from agentflow.providers.openai.chat_codec import decode_chat_response, encode_message
from agentflow.providers.openai.chat_model import OpenAIChatModel

SIGNATURE = {"google": {"thought_signature": "CvcBAY8a…sig=="}}
DETAILS = [{"type": "reasoning.encrypted", "data": "gAAAA…", "id": "call_w", "format": "google-gemini-v1"}]
CALL = {
    "id": "call_w",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
    "extra_content": SIGNATURE,
}


def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


def answer(**message: Any) -> dict[str, Any]:
    finish = "tool_calls" if "tool_calls" in message else "stop"
    body = {"role": "assistant", "content": None, **message}
    return {
        "id": "g-1",
        "model": "gemini-3",
        "choices": [{"index": 0, "message": body, "finish_reason": finish}],
    }


def streamed(**message: Any) -> str:
    """``answer(**message)`` as an SSE stream (the tool calls with their index)."""
    delta = {"role": "assistant", **message}
    if "tool_calls" in delta:
        delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(delta["tool_calls"])]
    finish = "tool_calls" if "tool_calls" in message else "stop"
    chunks = [
        {"id": "g-1", "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {"id": "g-1", "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
    ]
    return "".join(f"data: {orjson.dumps(c).decode()}\n\n" for c in chunks) + "data: [DONE]\n\n"


def record(body: dict[str, Any], *, stream: bool, status: int = 200) -> dict[str, Any]:
    if stream and status == 200:
        return {"stream": True, "status": status, "response_body": streamed(**body["choices"][0]["message"])}
    return {"stream": False, "status": status, "response_body": orjson.dumps(body).decode()}


def assistant_turns(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "assistant"]


TOOL_TURN = answer(tool_calls=[CALL], reasoning_details=DETAILS)
FINAL = answer(content="Sunny in Paris.")


def test_the_memory_item_keeps_them_and_converts_back_to_the_same_message() -> None:
    response = decode_chat_response(TOOL_TURN)
    (item,) = chat_result(response).memory_items
    assert item["reasoning_details"] == DETAILS
    assert item["tool_calls"] == [CALL]
    (message,) = to_chat_messages([item])
    assert message == response.message
    assert encode_message(message) == TOOL_TURN["choices"][0]["message"]
    # The step's cached message is the one converting the item gives.
    cache: dict[str, Any] = {}
    result = _remember_reply(AgentPrompt(cache=cache), chat_result(response))
    assert cache["chat_messages"][id(result.memory_items[0])][1] == message


def test_a_stored_conversation_keeps_them() -> None:
    message = decode_chat_response(TOOL_TURN).message
    items = [message_to_item(message), *chat_result(ChatResponse(message)).memory_items]
    loaded = load_items(dump_items(items))
    assert [item["reasoning_details"] for item in loaded] == [DETAILS, DETAILS]
    assert to_chat_messages(loaded) == [message, message]
    assert message.provider_fields == {"reasoning_details": DETAILS}
    assert message.tool_calls[0].provider_fields == {"extra_content": SIGNATURE}


def test_a_custom_call_keeps_its_shape_through_memory() -> None:
    custom = {"id": "call_c", "type": "custom", "custom": {"name": "code_exec", "input": "print(1)"}}
    response = decode_chat_response(answer(tool_calls=[custom]))
    (item,) = chat_result(response).memory_items
    assert item["tool_calls"] == [custom]
    (message,) = to_chat_messages(load_items(dump_items([item])))
    assert message.tool_calls == (ToolCall("call_c", "code_exec", "print(1)", kind="custom"),)
    assert encode_message(message)["tool_calls"] == [custom]


def test_ids_filled_in_keep_the_call_kind_and_fields() -> None:
    call = ToolCall("", "get_weather", "{}", provider_fields={"extra_content": SIGNATURE})
    (filled,) = chat_result(ChatResponse(AiMessage(tool_calls=[call]))).tool_calls
    assert filled.id
    assert filled.provider_fields == {"extra_content": SIGNATURE}


@pytest.mark.parametrize("stream", [False, True], ids=["blocking", "streamed"])
async def test_a_tool_loop_and_a_reloaded_session_send_them_back(stream: bool) -> None:
    async with replay_server("chat_text_stop.json") as (url, replay):
        replay.recordings[:] = [record(TOOL_TURN, stream=stream), record(FINAL, stream=stream)] * 2
        model = OpenAIChatModel(base_url=url, api_key="sk-test", model="gemini-3")
        agent = Agent(model, tools=[get_weather], options=AgentOptions(stream=stream))
        async with agent:
            session = agent.session()
            assert (await session.run("Weather in Paris?")).output_text == "Sunny in Paris."
            stored = dump_items(session.items)
            # The stored conversation, loaded in another session, sends them back too.
            again = agent.session(InMemoryMemory(load_items(stored)))
            await again.run("And tomorrow?")
    (turn,) = assistant_turns(replay.bodies[1])
    assert turn["reasoning_details"] == DETAILS
    assert turn["tool_calls"] == [CALL]
    reloaded = assistant_turns(replay.bodies[2])
    assert reloaded[0] == turn
    assert [m.get("content") for m in reloaded] == [None, "Sunny in Paris."]


async def test_echo_reasoning_false_sends_none_of_them() -> None:
    async with replay_server("chat_text_stop.json") as (url, replay):
        replay.recordings[:] = [record(TOOL_TURN, stream=False), record(FINAL, stream=False)]
        model = OpenAIChatModel(base_url=url, api_key="sk-test", model="gemini-3")
        agent = Agent(ChatModelClient(model, echo_reasoning=False), tools=[get_weather])
        async with agent:
            await agent.run("Weather in Paris?")
    (turn,) = assistant_turns(replay.bodies[1])
    assert "reasoning_details" not in turn
    assert turn["tool_calls"] == [{k: v for k, v in CALL.items() if k != "extra_content"}]


async def test_a_server_refusing_them_gets_the_request_again_without_them() -> None:
    refused = {"error": {"message": "property 'reasoning_details' is unsupported", "type": "invalid_request"}}
    async with replay_server("chat_text_stop.json") as (url, replay):
        replay.recordings[:] = [
            record(TOOL_TURN, stream=False),
            record(refused, stream=False, status=400),
            record(FINAL, stream=False),
        ]
        model = OpenAIChatModel(base_url=url, api_key="sk-test", model="m")
        agent = Agent(model, tools=[get_weather])
        async with agent:
            assert (await agent.run("Weather in Paris?")).output_text == "Sunny in Paris."
    assert "reasoning_details" in assistant_turns(replay.bodies[1])[0]
    (retried,) = assistant_turns(replay.bodies[2])
    assert "reasoning_details" not in retried
    assert "extra_content" not in retried["tool_calls"][0]
