"""``to_responses_input`` checks the items it knows before anything is sent, as the Chat path does.

A malformed ``message``, ``function_call`` or ``function_call_output`` item (or a dict that is no item at all)
raises an error naming the item's position instead of reaching the server; item types it does not know
(reasoning, hosted tool calls, item references, future ones) still go out verbatim.
"""

from __future__ import annotations

import decimal
import re
from typing import Any

import pytest

from agentflow.agent.agent import Agent
from agentflow.agent.items import function_call_item, to_chat_messages, to_responses_input, user_item
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.testing import Reply, ScriptedServer

GOOD = user_item("hi")

MALFORMED: dict[str, tuple[dict[str, Any], str]] = {
    "function_call without call_id": (
        {"type": "function_call", "name": "f", "arguments": "{}"},
        "a function_call item needs a non-empty string 'call_id'",
    ),
    "function_call with a blank name": (
        {"type": "function_call", "call_id": "c1", "name": "", "arguments": "{}"},
        "a function_call item needs a non-empty 'name'",
    ),
    "function_call arguments a number": (
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": 3},
        "'arguments' must be JSON text (a string), got int",
    ),
    "function_call_output without call_id": (
        {"type": "function_call_output", "output": "18C"},
        "a function_call_output item needs a non-empty string 'call_id'",
    ),
    "function_call_output output a mapping": (
        {"type": "function_call_output", "call_id": "c1", "output": {"temp": 18}},
        "'output' must be a string or a list of content parts, got dict",
    ),
    "content a number": ({"role": "user", "content": 123}, "'content' must be a string or a list of parts"),
    "message without content": ({"type": "message", "role": "user"}, "'content' must be a string"),
    "unknown role": ({"role": "robot", "content": "hi"}, "unknown message role 'robot'"),
    "message without role": ({"type": "message", "content": "hi"}, "unknown message role None"),
    "blank image_url": (
        {"role": "user", "content": [{"type": "input_image", "image_url": ""}]},
        "an input_image part needs a non-blank string 'image_url' or a 'file_id'",
    ),
    "non-string text part": (
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": decimal.Decimal("1.5")}],
        },
        "a input_text part needs a string 'text'",
    ),
    "typeless part": (
        {"role": "assistant", "content": [{"text": "hi"}]},
        "each content part must be an object with a 'type'",
    ),
    "refusal part without text": (
        {"role": "assistant", "content": [{"type": "refusal"}]},
        "a refusal part needs a string 'refusal'",
    ),
    "typeless dict": ({"content": "hi"}, "an item needs a string 'type' (or a 'role', for a message)"),
    "non-string type": ({"type": 7, "content": "hi"}, "an item needs a string 'type'"),
}


@pytest.mark.parametrize(("item", "problem"), MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_item_is_refused_naming_its_position(item: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=r"^item 1: .*" + re.escape(problem)):
        to_responses_input([GOOD, item])


@pytest.mark.parametrize(
    "name", ["function_call without call_id", "content a number", "unknown role", "typeless dict"]
)
def test_items_both_paths_refuse_are_refused_by_position_on_both(name: str) -> None:
    item, _ = MALFORMED[name]
    with pytest.raises(ValueError, match=r"^item 0: ") as on_chat:
        to_chat_messages([item])
    with pytest.raises(ValueError, match=r"^item 0: ") as on_responses:
        to_responses_input([item])
    if name != "typeless dict":  # the only message that names the protocol
        assert str(on_responses.value) == str(on_chat.value)


UNKNOWN_OR_UNCHECKED = [
    {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"},
    {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search"}},
    {"type": "item_reference", "id": "msg_0"},
    {"type": "some_future_item", "payload": [1, 2, 3]},
    {"role": "user", "content": "easy input message"},
    {"role": "developer", "content": [{"type": "input_text", "text": "d"}]},
    {"role": "user", "content": [{"type": "input_file", "file_id": "file_1"}, {"type": "input_audio"}]},
    {"role": "user", "content": [{"type": "input_image", "file_id": "file_2", "detail": "low"}]},
    {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "a", "annotations": []}],
    },
    {
        "type": "function_call",
        "call_id": "c1",
        "name": "f",
        "arguments": "",
        "id": "fc_1",
        "status": "completed",
    },
    {"type": "function_call_output", "call_id": "c1", "output": [{"type": "input_text", "text": "18C"}]},
]


def test_items_it_does_not_know_or_that_are_well_formed_go_out_verbatim() -> None:
    sent = to_responses_input(UNKNOWN_OR_UNCHECKED)
    assert len(sent) == len(UNKNOWN_OR_UNCHECKED)
    assert all(out is item for out, item in zip(sent, UNKNOWN_OR_UNCHECKED, strict=True))


def test_function_call_arguments_given_as_an_object_go_out_as_json_text() -> None:
    # What some compatible servers answer (and the decoder accepts), so memory may hold it.
    item = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": {"city": "Paris"}}
    assert to_responses_input([item]) == [function_call_item("c1", "f", '{"city":"Paris"}')]
    assert item["arguments"] == {"city": "Paris"}  # memory items are never mutated
    missing = {"type": "function_call", "call_id": "c2", "name": "g"}
    assert to_responses_input([missing]) == [function_call_item("c2", "g", "")]


def test_arguments_json_cannot_encode_are_a_type_error_naming_the_item() -> None:
    item = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": {"n": decimal.Decimal("1.5")}}
    with pytest.raises(TypeError, match=r"^item 1: a function_call item's 'arguments' cannot be JSON"):
        to_responses_input([GOOD, item])


async def test_a_malformed_item_fails_the_run_before_any_request() -> None:
    async with ScriptedServer([Reply(text="ok")]) as server:
        agent = Agent(OpenAIResponsesModel(base_url=server.base_url, api_key="k", model="m"))
        try:
            with pytest.raises(ValueError, match=r"item 0: a function_call item needs a non-empty string"):
                await agent.run([{"type": "function_call", "name": "f", "arguments": "{}"}, GOOD])
        finally:
            await agent.aclose()
        assert len(server.requests) == 0
