"""Content parts on the Responses path: every ``input_image`` goes out with a ``detail`` (``"auto"`` when
unset, as ``OpenAIResponsesModel`` sends an ``ImagePart``; vLLM's ``/responses`` refuses one without), and
the Chat part shapes (``{"type": "text"}``, ``{"type": "image_url", …}``), which Responses would refuse, are
converted before sending. Items that need no fix are sent as they are, not copied."""

from __future__ import annotations

from typing import Any

import pytest

from agentflow.agent.items import to_responses_input, user_item
from agentflow.model.messages import ImagePart, TextPart, UserMessage

URL = "data:image/png;base64,iVBORw0KGgo="


def test_user_item_images_carry_the_default_detail() -> None:
    assert user_item("what is it?", [URL])["content"][1] == {
        "type": "input_image",
        "image_url": URL,
        "detail": "auto",
    }


@pytest.mark.parametrize(("detail", "sent"), [(None, "auto"), ("low", "low")])
def test_an_image_part_message_goes_out_with_a_detail(detail: str | None, sent: str) -> None:
    (item,) = to_responses_input([UserMessage([TextPart("what is it?"), ImagePart(URL, detail)])])
    assert item["content"][1] == {"type": "input_image", "image_url": URL, "detail": sent}


def test_an_image_dict_without_detail_gets_auto_and_stays_unchanged_in_memory() -> None:
    by_file = {"type": "message", "role": "user", "content": [{"type": "input_image", "file_id": "file-abc"}]}
    (sent,) = to_responses_input([by_file])
    assert sent["content"] == [{"type": "input_image", "file_id": "file-abc", "detail": "auto"}]
    assert by_file["content"] == [{"type": "input_image", "file_id": "file-abc"}]


def test_items_that_need_no_fix_are_sent_as_they_are() -> None:
    items = [user_item("hi", [URL]), {"role": "system", "content": "Be brief."}]
    sent = to_responses_input(items)
    assert all(a is b for a, b in zip(sent, items, strict=True))


def test_chat_shaped_user_parts_become_responses_parts() -> None:
    item = {
        "role": "user",
        "content": [
            {"type": "text", "text": "hi"},
            {"type": "image_url", "image_url": {"url": URL, "detail": "low"}},
            {"type": "image_url", "image_url": URL},
        ],
    }
    (sent,) = to_responses_input([item])
    assert sent["content"] == [
        {"type": "input_text", "text": "hi"},
        {"type": "input_image", "image_url": URL, "detail": "low"},
        {"type": "input_image", "image_url": URL, "detail": "auto"},
    ]


def test_a_chat_text_part_of_an_assistant_becomes_output_text() -> None:
    item = {"role": "assistant", "content": [{"type": "text", "text": "Paris."}]}
    (sent,) = to_responses_input([item])
    assert sent["content"] == [{"type": "output_text", "text": "Paris."}]


def test_a_chat_text_part_of_a_tool_output_becomes_input_text() -> None:
    item = {"type": "function_call_output", "call_id": "c1", "output": [{"type": "text", "text": "18°C"}]}
    (sent,) = to_responses_input([item])
    assert sent["output"] == [{"type": "input_text", "text": "18°C"}]


@pytest.mark.parametrize(
    ("part", "message"),
    [
        ({"type": "text", "text": 3}, r"item 0: a text part needs a string 'text'"),
        (
            {"type": "image_url", "image_url": {"url": " "}},
            r"item 0: an image part needs a non-blank 'image_url'",
        ),
        (
            {"type": "input_image"},
            r"item 0: an input_image part needs a non-blank string 'image_url' or a 'file_id'",
        ),
    ],
)
def test_malformed_parts_are_refused_before_sending(part: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        to_responses_input([{"role": "user", "content": [part]}])
