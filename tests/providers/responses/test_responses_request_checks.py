"""Request fields checked where they are given, and the wire shapes ``/responses`` wants whatever shape the
user passed: bad types raise ``TypeError`` naming the field, ``truncation`` is a field, ``include`` entries
add up, and Chat-shaped function choices and tools are flattened."""

from __future__ import annotations

from typing import Any

import pytest
from responses_support import LocalServer, Reply

from agentflow.model.tools import ToolChoice
from agentflow.providers.openai.responses_codec import encode_request
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.providers.openai.responses_types import ResponsesRequest


async def sent(server: LocalServer, model: OpenAIResponsesModel, request: Any, **overrides: Any) -> Any:
    server.queue(Reply.recording("responses_message.json"))
    await model.create(request, **overrides)
    return server.body


# --- bad arguments ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad_input", [123, None, 4.5])
async def test_input_that_is_not_a_sequence_names_input_and_its_forms(
    server: LocalServer, model: OpenAIResponsesModel, bad_input: Any
) -> None:
    with pytest.raises(TypeError, match=r"input must be a string or a sequence of input items .*not "):
        await model.create(bad_input)
    with pytest.raises(TypeError, match="input must be"):
        model.create_stream(bad_input)
    assert server.requests == []


@pytest.mark.parametrize(
    ("field", "value", "forms"),
    [
        ("reasoning", "low", r"reasoning must be a mapping such as \{'effort': 'low'"),
        ("text", "json", r"text must be a mapping such as \{'format'"),
        ("metadata", [1], "metadata must be a mapping"),
        ("include", "reasoning.encrypted_content", "include must be a sequence of strings"),
        ("include", [1], "include must be a sequence of strings"),
        ("max_output_tokens", "10", "max_output_tokens must be an integer"),
        ("max_output_tokens", True, "max_output_tokens must be an integer"),
        ("store", "no", "store must be True or False"),
        ("temperature", "hot", "temperature must be a number"),
        ("truncation", 1, "truncation must be 'auto' or 'disabled'"),
        ("tools", "web_search", "tools must be a sequence"),
        ("tool_choice", 3, "tool_choice must be a ToolChoice"),
    ],
)
async def test_a_field_of_the_wrong_type_names_the_field_and_what_it_takes(
    server: LocalServer, model: OpenAIResponsesModel, field: str, value: Any, forms: str
) -> None:
    with pytest.raises(TypeError, match=forms):
        await model.create("hi", **{field: value})
    with pytest.raises(TypeError, match=forms):
        OpenAIResponsesModel(model="m", **{field: value})  # a bad default fails when the model is built
    assert server.requests == []


def test_a_function_choice_without_a_name_fails_before_anything_is_sent() -> None:
    with pytest.raises(ValueError, match="needs a function name"):
        ResponsesRequest("hi", tool_choice={"type": "function", "function": {}})


# --- truncation and include -------------------------------------------------------------------------------


async def test_truncation_is_a_request_field(server: LocalServer, model: OpenAIResponsesModel) -> None:
    assert (await sent(server, model, "hi", truncation="auto"))["truncation"] == "auto"
    assert ResponsesRequest("hi").merged({"truncation": "disabled"}).truncation == "disabled"


async def test_include_entries_add_up_across_extra_body_and_the_field(
    server: LocalServer, model: OpenAIResponsesModel
) -> None:
    body = await sent(
        server,
        model,
        ResponsesRequest(
            "hi",
            include=["reasoning.encrypted_content"],
            extra_body={"include": ["message.output_text.logprobs", "reasoning.encrypted_content"]},
        ),
    )
    assert body["include"] == ["message.output_text.logprobs", "reasoning.encrypted_content"]


def test_default_include_entries_are_added_to_the_requests_and_an_override_replaces_them() -> None:
    request = ResponsesRequest("hi", model="m", include=["b"])
    assert request.merged({"include": ["a", "b"]}).include == ("a", "b")
    assert request.merged({"include": ["a"]}, {"include": ["c"]}).include == ("c",)
    assert ResponsesRequest("hi").merged({"include": ["a"]}).include == ("a",)


# --- tool_choice and tools in the Chat shape --------------------------------------------------------------


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ({"type": "function", "function": {"name": "f"}}, {"type": "function", "name": "f"}),
        ({"type": "function", "name": "f"}, {"type": "function", "name": "f"}),
        (ToolChoice.function("f"), {"type": "function", "name": "f"}),
        ({"type": "required"}, "required"),
        ({"type": "web_search_preview"}, {"type": "web_search_preview"}),
        (
            {"type": "allowed_tools", "mode": "auto", "tools": [{"type": "function", "name": "f"}]},
            {"type": "allowed_tools", "mode": "auto", "tools": [{"type": "function", "name": "f"}]},
        ),
    ],
)
async def test_function_choices_go_out_flat_and_other_maps_verbatim(
    server: LocalServer, model: OpenAIResponsesModel, choice: Any, wire: Any
) -> None:
    assert (await sent(server, model, "hi", tool_choice=choice))["tool_choice"] == wire


def test_a_chat_shaped_function_tool_mapping_is_flattened() -> None:
    chat_tool = {
        "type": "function",
        "function": {"name": "f", "description": "d", "parameters": {"type": "object"}, "strict": True},
    }
    hosted = {"type": "web_search"}
    body = encode_request(ResponsesRequest("hi", model="m", tools=[chat_tool, hosted]), stream=False)
    assert body["tools"] == [
        {
            "type": "function",
            "name": "f",
            "description": "d",
            "parameters": {"type": "object"},
            "strict": True,
        },
        hosted,
    ]
