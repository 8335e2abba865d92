"""``to_responses_input`` over what a Chat server left in memory: OpenRouter's ``reasoning_details`` on an
assistant item and Gemini's ``extra_content`` on a call are Chat-only fields (OpenAI refuses unknown fields),
so they are left out; a custom call (``{"type": "custom", "custom": {"name", "input"}}``, or a
``kind="custom"`` ``ToolCall``) goes out as a ``custom_tool_call`` and its result, written by the runtime as a
``function_call_output``, as a ``custom_tool_call_output``. ``custom_tool_call`` items are checked like
``function_call`` ones. Memory keeps its own items."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from agentflow.agent.items import (
    assistant_item,
    function_call_item,
    function_call_output_item,
    to_responses_input,
    user_item,
)
from agentflow.agent.responses_client import responses_result
from agentflow.model.messages import AiMessage, ToolCall, ToolResultMessage
from agentflow.providers.openai.responses_codec import decode_response

DETAILS = [{"type": "reasoning.text", "text": "…", "signature": "sig", "format": "anthropic-claude-v1"}]
SIGNATURE = {"google": {"thought_signature": "CvcBAY8a…sig=="}}
CUSTOM_ENTRY = {"id": "call_c", "type": "custom", "custom": {"name": "code_exec", "input": "print(1)"}}
CUSTOM_ITEM = {"type": "custom_tool_call", "call_id": "call_c", "name": "code_exec", "input": "print(1)"}
TEXT = [{"type": "output_text", "text": "Checking."}]


def chat_turn(**fields: Any) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", **fields}


def test_reasoning_details_are_left_out_with_or_without_calls() -> None:
    alone = chat_turn(content=TEXT, reasoning_details=DETAILS)
    with_call = chat_turn(
        content=TEXT,
        reasoning_details=DETAILS,
        tool_calls=[{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
    )
    assert to_responses_input([alone]) == [chat_turn(content=TEXT)]
    assert to_responses_input([with_call]) == [chat_turn(content=TEXT), function_call_item("c1", "f", "{}")]
    assert alone["reasoning_details"] == DETAILS  # memory keeps it, for a Chat request


def test_extra_content_is_left_out() -> None:
    entry = {
        "id": "c1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": "{}"},
        "extra_content": SIGNATURE,
    }
    message = AiMessage(tool_calls=[ToolCall("c2", "f", "{}", provider_fields={"extra_content": SIGNATURE})])
    sent = to_responses_input([chat_turn(content=None, tool_calls=[entry]), message])
    assert sent == [function_call_item("c1", "get_weather", "{}"), function_call_item("c2", "f", "{}")]


def test_a_chat_custom_call_and_its_outputs_go_out_in_the_custom_shape() -> None:
    turn = chat_turn(content=TEXT, tool_calls=[CUSTOM_ENTRY])
    output = function_call_output_item("call_c", "1")
    chat_output = {"role": "tool", "tool_call_id": "call_c", "content": "1"}
    answer = {"type": "custom_tool_call_output", "call_id": "call_c", "output": "1"}
    for result in (output, chat_output, ToolResultMessage("call_c", "1")):
        assert to_responses_input([turn, result]) == [chat_turn(content=TEXT), CUSTOM_ITEM, answer]
    assert output == function_call_output_item("call_c", "1")  # a copy was sent


def test_a_custom_call_of_a_message_value_and_its_result() -> None:
    message = AiMessage(tool_calls=[ToolCall("call_c", "code_exec", "print(1)", "custom")])
    sent = to_responses_input([message, function_call_output_item("call_c", "1")])
    assert sent == [CUSTOM_ITEM, {"type": "custom_tool_call_output", "call_id": "call_c", "output": "1"}]


def test_a_responses_custom_tool_call_item_makes_its_output_a_custom_one() -> None:
    item = {**CUSTOM_ITEM, "id": "ctc_1", "status": "completed"}
    sent = to_responses_input([item, function_call_output_item("call_c", "1")])
    assert sent[0] is item
    assert sent[1] == {"type": "custom_tool_call_output", "call_id": "call_c", "output": "1"}


def test_outputs_of_function_calls_are_sent_as_they_are() -> None:
    items = [
        user_item("hi"),
        assistant_item(None, [ToolCall("c1", "f", "{}"), ToolCall("call_c", "code_exec", "x", "custom")]),
        function_call_output_item("c1", "one"),
        function_call_output_item("call_c", "two"),
    ]
    before = copy.deepcopy(items)
    sent = to_responses_input(items)
    assert sent[3] is items[2]
    assert [item["type"] for item in sent] == [
        "message",
        "function_call",
        "custom_tool_call",
        "function_call_output",
        "custom_tool_call_output",
    ]
    assert items == before


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ({**CUSTOM_ITEM, "name": ""}, "item 0: a custom_tool_call item needs a non-empty 'name'"),
        ({**CUSTOM_ITEM, "call_id": ""}, "item 0"),
        ({**CUSTOM_ITEM, "input": {"a": 1}}, "item 0: a custom_tool_call item's 'input' must be a string"),
    ],
)
def test_a_malformed_custom_tool_call_item_is_refused_before_anything_is_sent(
    item: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        to_responses_input([item])


def test_a_custom_tool_call_item_without_input_sends_an_empty_one() -> None:
    item = {key: value for key, value in CUSTOM_ITEM.items() if key != "input"}
    assert to_responses_input([item]) == [{**item, "input": ""}]


# -- what ResponsesModelClient keeps of a custom call --------------------------------------------------------


def _response(*output: dict[str, Any], status: str = "completed") -> Any:
    return decode_response({"id": "resp_1", "status": status, "model": "gpt-5", "output": list(output)})


def test_a_custom_call_is_a_tool_call_and_its_item_is_kept_verbatim() -> None:
    item = {**CUSTOM_ITEM, "id": "ctc_1", "status": "completed"}
    result = responses_result(_response(item))
    assert result.tool_calls == (ToolCall("call_c", "code_exec", "print(1)", "custom"),)
    assert result.memory_items == (item,)


def test_a_blank_custom_call_id_is_filled_in_and_patched_into_its_item() -> None:
    item = {**CUSTOM_ITEM, "call_id": " ", "status": "completed"}
    result = responses_result(_response(item))
    (call,) = result.tool_calls
    assert call.id.startswith("call_")
    assert result.memory_items == ({**item, "call_id": call.id},)


def test_an_unfinished_custom_call_is_neither_a_call_nor_kept() -> None:
    item = {**CUSTOM_ITEM, "status": "incomplete"}
    result = responses_result(_response(item, status="incomplete"))
    assert result.tool_calls == ()
    assert result.memory_items == ()
