"""A Chat assistant memory item keeps the reasoning under the wire field it came in: back to Chat under that
name, kept out of Responses input, plain JSON throughout."""

from __future__ import annotations

import itertools
from typing import Any

import orjson
import pytest

from agentflow.agent.chat_client import _remember_reply, chat_result
from agentflow.agent.items import assistant_item, to_chat_messages, to_responses_input
from agentflow.agent.prompt import AgentPrompt
from agentflow.model.messages import AiMessage, ToolCall
from agentflow.model.response import ChatResponse
from agentflow.providers.openai.chat_codec import encode_message

CALL = ToolCall("call_1", "roll", "{}")


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_a_reply_with_reasoning_is_remembered_under_its_field_and_sent_back_under_it(field: str) -> None:
    reply = AiMessage("Rolling.", [CALL], "I should roll.", None, field)
    (item,) = chat_result(ChatResponse(reply)).memory_items
    assert item[field] == "I should roll."
    # Memory is plain JSON: a conversation saved and loaded again still sends the reasoning back.
    (message,) = to_chat_messages([orjson.loads(orjson.dumps(item))])
    assert encode_message(message) == encode_message(reply)
    assert encode_message(message)[field] == "I should roll."


def test_a_reply_without_a_reasoning_field_keeps_no_reasoning_key() -> None:
    (item,) = chat_result(ChatResponse(AiMessage("4", reasoning="from a fake model"))).memory_items
    assert "reasoning" not in item
    assert "reasoning_content" not in item


def test_an_empty_reasoning_field_is_remembered_and_sent_back_empty() -> None:
    (item,) = chat_result(ChatResponse(AiMessage(None, [CALL], None, None, "reasoning_content"))).memory_items
    assert item["reasoning_content"] == ""
    (message,) = to_chat_messages([item])
    assert encode_message(message)["reasoning_content"] == ""


@pytest.mark.parametrize(
    ("text", "calls", "reasoning", "field"),
    list(
        itertools.product(
            [None, "", "hi"], [(), (CALL,)], [None, "", "think"], [None, "reasoning_content", "reasoning"]
        )
    ),
)
def test_the_noted_message_of_a_reply_with_reasoning_is_what_converting_its_item_gives(
    text: str | None, calls: tuple[ToolCall, ...], reasoning: str | None, field: str | None
) -> None:
    result = chat_result(ChatResponse(AiMessage(text, calls, reasoning, None, field)))
    cache: dict[str, Any] = {}
    _remember_reply(AgentPrompt(cache=cache), result)
    noted = cache.get("chat_messages", {})
    if not result.memory_items:
        assert not noted
        return
    (item,) = result.memory_items
    assert to_chat_messages([item]) == [noted[id(item)][1]]


def test_a_chat_wire_shaped_assistant_dict_carries_its_reasoning_too() -> None:
    # A transcript kept in the Chat wire shape (as DeepSeek's own examples keep it) converts as it reads.
    (message,) = to_chat_messages([{"role": "assistant", "content": "4", "reasoning_content": "2+2"}])
    assert (message.reasoning, message.reasoning_field) == ("2+2", "reasoning_content")


def test_a_reasoning_key_that_is_not_a_string_is_refused_naming_the_item() -> None:
    with pytest.raises(ValueError, match=r"item 1: 'reasoning_content' must be a string"):
        to_chat_messages([assistant_item("a"), {"role": "assistant", "content": "b", "reasoning_content": 1}])


def test_assistant_item_refuses_an_unknown_reasoning_field() -> None:
    with pytest.raises(ValueError, match="reasoning_field must be one of"):
        assistant_item("4", reasoning="2+2", reasoning_field="thinking")


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
@pytest.mark.parametrize("calls", [(), (CALL,)], ids=["text-only", "with-calls"])
def test_responses_input_leaves_the_chat_reasoning_out(field: str, calls: tuple[ToolCall, ...]) -> None:
    item = assistant_item("Rolling.", calls, reasoning="I should roll.", reasoning_field=field)
    sent = to_responses_input([item])
    assert sent[0] == {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Rolling."}],
    }
    assert [entry["call_id"] for entry in sent[1:]] == [c.id for c in calls]
    assert item[field] == "I should roll."  # the memory item itself is untouched


def test_responses_input_of_a_calls_only_turn_with_reasoning_is_the_calls() -> None:
    item = assistant_item(None, [CALL], reasoning="I should roll.", reasoning_field="reasoning_content")
    assert to_responses_input([item]) == [
        {"type": "function_call", "call_id": "call_1", "name": "roll", "arguments": "{}"}
    ]
