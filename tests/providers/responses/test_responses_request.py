"""Request mapping: one test per field, checked on the JSON body the local server actually received."""

from __future__ import annotations

from typing import Any

import attrs
import orjson
import pytest
from responses_support import API_KEY, LocalServer, Reply, load

from agentflow.model.messages import (
    AiMessage,
    DeveloperMessage,
    ImagePart,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from agentflow.model.tools import ToolChoice, ToolSpec
from agentflow.providers.openai.responses_codec import encode_request
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.providers.openai.responses_types import ResponsesRequest
from agentflow.tools import tool

WEATHER = ToolSpec(
    "get_weather",
    "Weather for a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def ok() -> Reply:
    return Reply.recording("responses_message.json")


async def sent(
    server: LocalServer, target: OpenAIResponsesModel, request: Any, /, **overrides: Any
) -> dict[str, Any]:
    server.queue(ok())
    await target.create(request, **overrides)
    body: dict[str, Any] = server.body
    return body


async def test_minimal_request_sends_only_model_and_input(
    server: LocalServer, model: OpenAIResponsesModel
) -> None:
    body = await sent(server, model, "hi")
    assert body == {
        "model": "gpt-test",
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
    }
    request = server.requests[0]
    assert request.path == "/v1/responses"
    assert request.headers["Authorization"] == f"Bearer {API_KEY}"
    assert request.headers["Content-Type"] == "application/json"


async def test_stream_request_sets_stream_true(server: LocalServer, model: OpenAIResponsesModel) -> None:
    server.queue(Reply.recording("responses_stream_text.json"))
    await model.create_stream("hi").collect()
    assert server.body["stream"] is True
    assert server.requests[0].headers["Accept"] == "text/event-stream"


async def test_model_field_precedence_default_request_override(
    server: LocalServer, model: OpenAIResponsesModel
) -> None:
    assert (await sent(server, model, "hi"))["model"] == "gpt-test"
    server.requests.clear()
    assert (await sent(server, model, ResponsesRequest("hi", model="from-request")))[
        "model"
    ] == "from-request"
    server.requests.clear()
    body = await sent(server, model, ResponsesRequest("hi", model="from-request"), model="from-call")
    assert body["model"] == "from-call"


async def test_missing_model_fails_locally(server: LocalServer) -> None:
    async with OpenAIResponsesModel(base_url=server.url) as no_model:
        with pytest.raises(ValueError, match="no model set"):
            await no_model.create("hi")
        with pytest.raises(ValueError, match="no model set"):
            no_model.create_stream("hi")
    assert server.requests == []


# --- input items ----------------------------------------------------------------------------------------


async def test_input_messages_map_to_message_items(server: LocalServer, model: OpenAIResponsesModel) -> None:
    body = await sent(
        server,
        model,
        [
            SystemMessage("be brief"),
            DeveloperMessage("dev rules"),
            UserMessage(
                [TextPart("what is this?"), ImagePart("https://x/cat.png"), ImagePart("data:,", "low")]
            ),
            AiMessage("It is a cat."),
        ],
    )
    assert body["input"] == [
        {"type": "message", "role": "system", "content": [{"type": "input_text", "text": "be brief"}]},
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "dev rules"}]},
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "what is this?"},
                {"type": "input_image", "image_url": "https://x/cat.png", "detail": "auto"},
                {"type": "input_image", "image_url": "data:,", "detail": "low"},
            ],
        },
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "It is a cat."}],
        },
    ]


async def test_tool_calls_and_results_map_to_function_call_items(
    server: LocalServer, model: OpenAIResponsesModel
) -> None:
    calls = [ToolCall("call_1", "get_weather", '{"city":"Paris"}'), ToolCall("call_2", "get_time", "")]
    body = await sent(
        server,
        model,
        [
            AiMessage("Checking.", tool_calls=calls, reasoning="not replayed"),
            ToolResultMessage("call_1", "22C", name="get_weather"),
            ToolResultMessage("call_2", "noon"),
        ],
    )
    assert body["input"] == [
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking."}]},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city":"Paris"}',
        },
        {"type": "function_call", "call_id": "call_2", "name": "get_time", "arguments": ""},
        {"type": "function_call_output", "call_id": "call_1", "output": "22C"},
        {"type": "function_call_output", "call_id": "call_2", "output": "noon"},
    ]


async def test_assistant_tool_calls_without_text_send_no_empty_message(
    server: LocalServer, model: OpenAIResponsesModel
) -> None:
    body = await sent(server, model, [AiMessage(tool_calls=[ToolCall("c", "f", "{}")])])
    assert body["input"] == [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}]


async def test_raw_items_pass_verbatim(server: LocalServer, model: OpenAIResponsesModel) -> None:
    # The reasoning item, call and output exactly as a real request replayed them (encrypted_content kept).
    recorded = load("responses_reasoning_parallel_function_calls.json")["request"]["input"]
    body = await sent(server, model, [UserMessage("go"), *recorded[1:]])
    assert body["input"][1:] == recorded[1:]
    assert body["input"][1]["encrypted_content"].startswith("gAAAA")


async def test_output_items_round_trip_as_input_verbatim(
    server: LocalServer, model: OpenAIResponsesModel
) -> None:
    server.queue(Reply.recording("responses_reasoning_parallel_function_calls.json"), ok())
    response = await model.create("go")
    results = [ToolResultMessage(call.id, "7") for call in response.tool_calls]
    await model.create([UserMessage("go"), *response.output, *results])
    sent_input = server.requests[1].json["input"]
    recorded = orjson.loads(load("responses_reasoning_parallel_function_calls.json")["response_body"])
    assert sent_input[1 : 1 + len(response.output)] == recorded["output"]  # encrypted_content, ids, status
    assert sent_input[-1] == {
        "type": "function_call_output",
        "call_id": response.tool_calls[-1].id,
        "output": "7",
    }


async def test_unsupported_input_fails_with_a_clear_error(model: OpenAIResponsesModel) -> None:
    with pytest.raises(TypeError, match="cannot send int"):
        await model.create([42])
    with pytest.raises(ValueError, match="no per-message name"):
        await model.create([UserMessage("hi", name="bob")])
    with pytest.raises(TypeError, match="input must be a string or a sequence"):
        ResponsesRequest({"role": "user"})  # type: ignore[arg-type]


# --- one test per top-level field -------------------------------------------------------------------------


async def test_instructions(server: LocalServer, model: OpenAIResponsesModel) -> None:
    assert (await sent(server, model, "hi", instructions="Answer in French."))[
        "instructions"
    ] == "Answer in French."


async def test_function_tools_are_flat(server: LocalServer, model: OpenAIResponsesModel) -> None:
    strict = ToolSpec("lookup", "", {"type": "object", "properties": {}}, strict=True)
    body = await sent(server, model, "hi", tools=[WEATHER, strict])
    assert body["tools"] == [
        {
            "type": "function",
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": WEATHER.parameters,
            "strict": False,
        },
        {
            "type": "function",
            "name": "lookup",
            "parameters": {"type": "object", "properties": {}},
            "strict": True,
        },
    ]


async def test_unset_strict_is_sent_as_false_so_defaults_still_apply(
    server: LocalServer, model: OpenAIResponsesModel
) -> None:
    # /responses reads a missing "strict" as true and would make `limit` required; Chat reads it as false.
    @tool
    def search(query: str, limit: int = 10) -> str:
        """Search the docs."""
        return query

    body = await sent(server, model, "hi", tools=[search.spec])
    assert search.spec.strict is None
    assert body["tools"][0]["strict"] is False
    assert body["tools"][0]["parameters"]["required"] == ["query"]


async def test_hosted_tools_pass_verbatim(server: LocalServer, model: OpenAIResponsesModel) -> None:
    hosted = {"type": "web_search", "search_context_size": "low"}
    body = await sent(server, model, "hi", tools=[hosted, WEATHER])
    assert body["tools"][0] == hosted
    assert body["tools"][1]["name"] == "get_weather"


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        (ToolChoice.auto(), "auto"),
        (ToolChoice.none(), "none"),
        (ToolChoice.required(), "required"),
        ("required", "required"),
        (ToolChoice.function("get_weather"), {"type": "function", "name": "get_weather"}),
        ({"type": "web_search"}, {"type": "web_search"}),
        (
            {"type": "allowed_tools", "mode": "auto", "tools": [{"type": "function", "name": "get_weather"}]},
            {"type": "allowed_tools", "mode": "auto", "tools": [{"type": "function", "name": "get_weather"}]},
        ),
    ],
)
async def test_tool_choice_forms(
    server: LocalServer, model: OpenAIResponsesModel, choice: Any, wire: Any
) -> None:
    assert (await sent(server, model, "hi", tools=[WEATHER], tool_choice=choice))["tool_choice"] == wire


def test_unknown_tool_choice_string_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"ToolChoice\.function"):
        ResponsesRequest("hi", tool_choice="get_weather")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("parallel_tool_calls", False),
        ("temperature", 0.3),
        ("top_p", 0.9),
        ("max_output_tokens", 256),
        ("reasoning", {"effort": "high", "summary": "auto"}),
        ("store", False),
        ("user", "user-42"),
        ("previous_response_id", "resp_abc"),
        (
            "text",
            {
                "format": {
                    "type": "json_schema",
                    "name": "answer",
                    "schema": {"type": "object", "properties": {"a": {"type": "string"}}},
                    "strict": True,
                }
            },
        ),
        ("metadata", {"run": "r1"}),
    ],
)
async def test_scalar_and_object_fields_are_sent_as_given(
    server: LocalServer, model: OpenAIResponsesModel, field: str, value: Any
) -> None:
    body = await sent(server, model, "hi", **{field: value})
    assert body[field] == value
    assert set(body) == {"model", "input", field}


async def test_include(server: LocalServer, model: OpenAIResponsesModel) -> None:
    body = await sent(server, model, "hi", include=("reasoning.encrypted_content",))
    assert body["include"] == ["reasoning.encrypted_content"]


async def test_false_and_zero_values_are_sent(server: LocalServer, model: OpenAIResponsesModel) -> None:
    body = await sent(server, model, "hi", temperature=0, store=False, parallel_tool_calls=False)
    assert (body["temperature"], body["store"], body["parallel_tool_calls"]) == (0, False, False)


async def test_extra_body_is_written_first_and_standard_fields_win(
    server: LocalServer, model: OpenAIResponsesModel
) -> None:
    body = await sent(
        server,
        model,
        ResponsesRequest(
            "hi",
            temperature=0.5,
            extra_body={"model": "sneaky", "temperature": 2, "service_tier": "flex", "truncation": "auto"},
        ),
    )
    assert body["model"] == "gpt-test"
    assert body["temperature"] == 0.5
    assert body["service_tier"] == "flex"
    assert body["truncation"] == "auto"
    assert list(body)[:2] == ["model", "temperature"]  # custom keys first, then overwritten in place


async def test_extra_body_stream_cannot_turn_a_blocking_call_into_a_stream(
    server: LocalServer, model: OpenAIResponsesModel
) -> None:
    body = await sent(server, model, ResponsesRequest("hi", extra_body={"stream": True}))
    assert body["stream"] is False


async def test_defaults_fill_unset_fields_and_call_overrides_win(server: LocalServer) -> None:
    async with OpenAIResponsesModel(
        base_url=server.url,
        model="m",
        temperature=0.1,
        store=False,
        custom_parameters={"service_tier": "flex", "truncation": "auto"},
        extra_body={"truncation": "disabled"},
    ) as configured:
        server.queue(ok())
        await configured.create(
            ResponsesRequest("hi", temperature=0.2, extra_body={"prompt_cache_key": "k"}),
            store=True,
            extra_body={"service_tier": "priority"},
        )
    body = server.body
    assert body["temperature"] == 0.2  # the request beats the model default
    assert body["store"] is True  # the call override beats the default
    assert body["truncation"] == "disabled"  # the model's extra_body beats its custom_parameters
    assert body["service_tier"] == "priority"
    assert body["prompt_cache_key"] == "k"


def test_unknown_options_are_rejected() -> None:
    with pytest.raises(TypeError, match="unknown Responses request option"):
        OpenAIResponsesModel(model="m", temprature=0.2)
    with pytest.raises(TypeError, match="unknown Responses request option"):
        ResponsesRequest("hi").merged(overrides={"max_tokens": 5})
    with pytest.raises(TypeError, match="unknown Responses request option"):
        ResponsesRequest("hi").merged(overrides={"input": "other"})


def test_every_request_field_is_sent_when_set() -> None:
    values: dict[str, Any] = {
        "model": "m",
        "instructions": "i",
        "tools": [WEATHER],
        "tool_choice": "auto",
        "parallel_tool_calls": True,
        "temperature": 0.1,
        "top_p": 0.2,
        "max_output_tokens": 3,
        "reasoning": {"effort": "low"},
        "store": True,
        "user": "u",
        "previous_response_id": "resp_0",
        "text": {"verbosity": "low"},
        "include": ["reasoning.encrypted_content"],
        "metadata": {"k": "v"},
        "truncation": "auto",
    }
    # A new ResponsesRequest field must be added here, and so checked to reach the wire.
    assert set(values) == {f.name for f in attrs.fields(ResponsesRequest)} - {"input", "extra_body"}
    body = encode_request(ResponsesRequest("hi", **values), stream=False)
    assert list(body) == ["model", "input", *list(values)[1:]]


def test_encode_request_is_pure_and_deterministic() -> None:
    request = ResponsesRequest(
        "hi", model="m", tools=[WEATHER], tool_choice=ToolChoice.function("get_weather")
    )
    assert encode_request(request, stream=True) == encode_request(request, stream=True)
    assert encode_request(request, stream=False).get("stream") is None


def test_api_key_never_appears_in_the_repr() -> None:
    model = OpenAIResponsesModel(api_key=API_KEY, model="m")
    assert API_KEY not in repr(model)
    assert "api_key=<set>" in repr(model)
