"""Memory item constructors and the item conversions to each protocol."""

from __future__ import annotations

import pytest

from agentflow.agent.items import (
    assistant_item,
    developer_item,
    function_call_item,
    function_call_output_item,
    to_chat_messages,
    to_responses_input,
    user_item,
    with_call_ids,
)
from agentflow.model.messages import (
    AiMessage,
    DeveloperMessage,
    ImagePart,
    TextPart,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)


def test_user_item_has_the_responses_shape_with_string_image_urls() -> None:
    assert user_item("see", ["data:image/png;base64,AAAA"]) == {
        "type": "message",
        "role": "user",
        "content": [
            {"type": "input_text", "text": "see"},
            {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "auto"},
        ],
    }
    assert user_item("", ["https://x/a.png"])["content"] == [
        {"type": "input_image", "image_url": "https://x/a.png", "detail": "auto"}
    ]


def test_user_item_rejects_a_blank_image_url() -> None:
    with pytest.raises(ValueError, match="non-blank"):
        user_item("see", [" "])


def test_assistant_item_leaves_out_empty_content_and_calls() -> None:
    assert assistant_item("hi") == {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "hi"}],
    }
    assert assistant_item(None) == {"type": "message", "role": "assistant"}


def test_chat_conversion_reads_reference_shaped_items() -> None:
    # The reference's own shapes: input_text on every role, image_url as {url}, tool_calls on assistant.
    items = [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "rules"}]},
        {"type": "message", "role": "assistant", "content": [{"type": "input_text", "text": "a"}]},
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "x"},
                {"type": "input_image", "image_url": {"url": "https://x/a.png", "detail": "low"}},
            ],
        },
    ]
    assert to_chat_messages(items) == [
        DeveloperMessage("rules"),
        AiMessage("a"),
        UserMessage([TextPart("x"), ImagePart("https://x/a.png", "low")]),
    ]


def test_chat_conversion_accepts_easy_and_chat_shaped_dicts() -> None:
    items = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": {"a": 1}}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]
    assert to_chat_messages(items) == [
        UserMessage("hi"),
        AiMessage(tool_calls=[ToolCall("c1", "f", '{"a":1}')]),
        ToolResultMessage("c1", "ok"),
    ]


def test_chat_conversion_joins_text_parts_of_a_tool_output() -> None:
    item = {"type": "function_call_output", "call_id": "c1", "output": [{"type": "input_text", "text": "a"}]}
    assert to_chat_messages([item]) == [ToolResultMessage("c1", "a")]


def test_chat_conversion_rejects_an_assistant_tool_call_without_a_function() -> None:
    with pytest.raises(ValueError, match="function"):
        to_chat_messages([{"type": "message", "role": "assistant", "tool_calls": [{"id": "c1"}]}])


def test_responses_conversion_fixes_input_text_on_assistant_messages() -> None:
    item = {"type": "message", "role": "assistant", "content": [{"type": "input_text", "text": "a"}]}
    assert to_responses_input([item]) == [assistant_item("a")]


def test_responses_conversion_keeps_multimodal_user_messages() -> None:
    message = UserMessage([TextPart("x"), ImagePart("https://x/a.png", "high")])
    assert to_responses_input([message, DeveloperMessage("d")]) == [
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "x"},
                {"type": "input_image", "image_url": "https://x/a.png", "detail": "high"},
            ],
        },
        developer_item("d"),
    ]


def test_items_round_trip_between_the_protocols() -> None:
    items = [
        user_item("q"),
        assistant_item("checking", [ToolCall("c1", "f", "{}")]),
        function_call_output_item("c1", "x"),
    ]
    as_responses = to_responses_input(items)
    assert as_responses == [
        user_item("q"),
        assistant_item("checking"),
        function_call_item("c1", "f", "{}"),
        items[2],
    ]
    assert to_chat_messages(as_responses) == to_chat_messages(items)


def test_with_call_ids_keeps_given_ids_and_fills_blank_ones_uniquely() -> None:
    calls = with_call_ids([ToolCall("a", "f"), ToolCall("", "g"), ToolCall(" ", "h")])
    assert calls[0] == ToolCall("a", "f")
    assert calls[1].id != calls[2].id
    assert all(c.id.strip() for c in calls)
