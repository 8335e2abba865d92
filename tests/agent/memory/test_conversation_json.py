"""Keeping a conversation between processes: ``dump_items`` / ``load_items``, lossless for every item a run
writes, so a conversation loaded into a new session makes the very request the original would have made."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import orjson
import pytest

import agentflow
from agentflow.agent.agent import Agent
from agentflow.agent.items import dump_items, load_items, message_to_item, user_item
from agentflow.agent.memory import InMemoryMemory
from agentflow.agent.options import ModelSettings
from agentflow.model.messages import AiMessage, ToolCall, ToolResultMessage, UserMessage
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.testing import Reply, ScriptedServer
from agentflow.tools import tool


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def boom(x: int) -> int:
    """Always fails."""
    raise RuntimeError("kaboom")


def _script() -> list[Reply]:
    return [
        Reply(reasoning="think", tool_calls=[("add", {"a": 1, "b": 2}), ("boom", {"x": 1})]),
        Reply(reasoning="done", text="3, and boom failed"),
        Reply(text="again"),  # the session going on
        Reply(text="again"),  # the same conversation, loaded in a "new process"
    ]


@pytest.mark.parametrize("protocol", ["chat", "responses"])
async def test_a_loaded_conversation_makes_the_same_next_request(protocol: str) -> None:
    async with ScriptedServer(_script()) as server:
        if protocol == "chat":
            model: Any = OpenAIChatModel(base_url=server.base_url, model="m")
            settings = None
        else:
            # store=False: reasoning items carry encrypted_content, the conversation needs no server state
            model = OpenAIResponsesModel(base_url=server.base_url, model="o4-mini")  # a reasoning model
            settings = ModelSettings(store=False)
        agent = Agent(model, tools=[add, boom], settings=settings, system_prompt="sys")
        async with agent:
            chat = agent.session()
            await chat.run(user_item("what is this?", ["data:image/png;base64,AAAA"]))
            saved = dump_items(chat.items)
            await chat.run("again")

            loaded = load_items(saved)
            assert loaded == list(chat.items[: len(loaded)])
            await agent.session(InMemoryMemory(loaded)).run("again")

    kinds = {item.get("type") for item in loaded}
    assert {"message", "function_call_output"} <= kinds
    text = saved.decode()
    assert "TOOL_ERROR" in text
    assert "data:image/png;base64,AAAA" in text
    if protocol == "responses":
        assert "encrypted_content" in text
    else:
        assert '"reasoning_content":"think"' in text
    assert server.requests[2].raw_body == server.requests[3].raw_body


def test_message_values_are_dumped_as_their_items() -> None:
    messages = [
        UserMessage("q"),
        AiMessage(None, [ToolCall("c1", "f", "{}")], reasoning="why", reasoning_field="reasoning_content"),
        ToolResultMessage("c1", "42"),
    ]
    assert load_items(dump_items(messages)) == [message_to_item(m) for m in messages]


def test_every_item_kind_round_trips() -> None:
    items: list[Any] = [
        {"type": "message", "role": "system", "content": [{"type": "input_text", "text": "sys"}]},
        user_item("see", ["https://x/cat.png"]),
        {
            "id": "rs_1",
            "type": "reasoning",
            "encrypted_content": "gAAA",
            "summary": [{"type": "summary_text"}],
        },
        {
            "type": "function_call",
            "call_id": "c1",
            "name": "f",
            "arguments": '{"n":1}',
            "status": "completed",
        },
        {"type": "function_call_output", "call_id": "c1", "output": 'TOOL_ERROR: {"errorType":"timeout"}'},
        {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"query": "q"}},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "é ✓"}]},
        {"type": "custom_tool_call", "call_id": "c2", "name": "sql", "input": "SELECT 1"},
        {"type": "function_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "x"}]},
    ]
    assert load_items(dump_items(items)) == items


# The JSON form alone: ``check=False`` reads any array of objects, conversation or not.


def test_integers_beyond_64_bits_keep_every_digit() -> None:
    items = [{"type": "custom", "account": 10**30 + 1, "nested": [{"n": -(2**70)}]}]
    assert load_items(dump_items(items), check=False) == items


def test_mappings_that_are_not_dicts_are_written_as_objects() -> None:
    item = MappingProxyType({"type": "message", "role": "user", "content": MappingProxyType({"a": 1})})
    assert load_items(dump_items([item]), check=False) == [
        {"type": "message", "role": "user", "content": {"a": 1}}
    ]


def test_tuples_in_items_come_back_as_lists() -> None:
    assert load_items(dump_items([{"type": "x", "parts": ("a", "b")}]), check=False) == [
        {"type": "x", "parts": ["a", "b"]}
    ]


def test_dump_refuses_what_is_not_an_item() -> None:
    with pytest.raises(TypeError, match="item 1 is a str"):
        dump_items([user_item("a"), "b"])
    with pytest.raises(TypeError, match="cannot be written as JSON"):
        dump_items([{"type": "x", "value": object()}])


def test_load_refuses_what_is_not_a_list_of_objects() -> None:
    with pytest.raises(ValueError, match="JSON array"):
        load_items(b'{"type": "message"}')
    with pytest.raises(ValueError, match="item 1 is not a JSON object"):
        load_items(b'[{"type": "message"}, 3]')
    with pytest.raises(orjson.JSONDecodeError):
        load_items(b"[")
    with pytest.raises(TypeError, match="JSON bytes or text"):
        load_items([{"type": "message"}])  # type: ignore[arg-type]


def test_load_takes_text_too() -> None:
    assert load_items('[{"type": "x"}]', check=False) == [{"type": "x"}]


def test_the_helpers_are_public() -> None:
    assert agentflow.dump_items is dump_items
    assert agentflow.load_items is load_items
