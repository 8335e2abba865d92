"""Pure call completion: ids and names completed, memory items rewritten to match, mismatches refused."""

from __future__ import annotations

import pytest

from agentflow.agent.items import assistant_item, function_call_item, user_item
from agentflow.model.messages import AiMessage, ToolCall
from agentflow.runtimes.calls import MemoryItemsMismatchError, complete_tool_calls, patch_memory_items


def test_blank_and_repeated_ids_get_step_based_ids_and_blank_names_a_placeholder() -> None:
    calls = [ToolCall("", "a"), ToolCall("x", ""), ToolCall("x", "b")]
    assert complete_tool_calls(calls, step=4) == (
        ToolCall("tool_step_4_0", "a"),
        ToolCall("x", "tool"),
        ToolCall("tool_step_4_2", "b"),
    )


def test_a_made_up_id_is_never_one_the_model_sent() -> None:
    calls = [ToolCall("tool_step_0_1", "a"), ToolCall("", "b"), ToolCall("tool_step_0_1", "c")]
    ids = [call.id for call in complete_tool_calls(calls, step=0)]
    assert ids == ["tool_step_0_1", "tool_step_0_1_1", "tool_step_0_2"]
    assert len(set(ids)) == 3


def test_complete_calls_are_returned_unchanged() -> None:
    calls = (ToolCall("c1", "a", "{}"),)
    assert complete_tool_calls(calls, 0)[0] is calls[0]
    items = (assistant_item("", calls),)
    patched = patch_memory_items(items, calls, calls)
    assert patched == items
    assert patched[0] is items[0]


def test_names_are_normalised_with_the_registry_rule() -> None:
    [call] = complete_tool_calls([ToolCall("c1", "functions.add")], 0, lambda n: n.removeprefix("functions."))
    assert call.name == "add"


def test_chat_shaped_assistant_items_are_patched_by_position() -> None:
    raw = (ToolCall("", "a", "{}"), ToolCall("", "b", "{}"))
    done = complete_tool_calls(raw, 1)
    item = assistant_item("text", raw)
    [patched] = patch_memory_items((item,), raw, done)
    assert [c["id"] for c in patched["tool_calls"]] == ["tool_step_1_0", "tool_step_1_1"]
    assert patched["content"] == item["content"]
    assert item["tool_calls"][0]["id"] == ""  # the input is not mutated


def test_ai_message_items_are_patched() -> None:
    raw = (ToolCall("", "a"),)
    [patched] = patch_memory_items((AiMessage(tool_calls=raw),), raw, complete_tool_calls(raw, 0))
    assert isinstance(patched, AiMessage)
    assert patched.tool_calls[0].id == "tool_step_0_0"


def test_items_in_a_different_order_than_the_calls_are_paired_by_id() -> None:
    raw = (ToolCall("c1", "a"), ToolCall("c2", " b "))
    done = complete_tool_calls(raw, 0)
    items = (function_call_item("c2", " b ", ""), function_call_item("c1", "a", ""))
    patched = patch_memory_items(items, raw, done)
    assert [(i["call_id"], i["name"]) for i in patched] == [("c2", "b"), ("c1", "a")]


def test_a_turn_without_call_items_gets_an_assistant_item_with_the_calls() -> None:
    raw = (ToolCall("", "a", "{}"),)
    done = complete_tool_calls(raw, 0)
    patched = patch_memory_items((), raw, done, "thinking")
    assert patched == (assistant_item("thinking", done),)


def test_items_that_cannot_be_matched_are_refused() -> None:
    raw = (ToolCall("c1", "a"), ToolCall("c2", "b"))
    items = (function_call_item("zz", "a", ""),)
    with pytest.raises(MemoryItemsMismatchError):
        patch_memory_items(items, raw, complete_tool_calls([ToolCall("c1", "a "), ToolCall("c2", "b")], 0))


def test_items_without_calls_pass_through() -> None:
    items = (user_item("hi"),)
    assert patch_memory_items(items, (), ()) == items
