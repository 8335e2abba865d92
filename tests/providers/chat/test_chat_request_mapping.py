"""Seed 003's request tables, row by row, checked on the body and headers a real local server received."""

from __future__ import annotations

from typing import Any

import pytest
from chat_local_server import LocalServer, Recorded, json_reply, sse_body, sse_reply

from agentflow import (
    AiMessage,
    ChatParameters,
    ChatRequest,
    DeveloperMessage,
    ImagePart,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolChoice,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from agentflow.model.messages import Message
from agentflow.providers.openai.chat_model import OpenAIChatModel

OK = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}

WEATHER = ToolSpec(
    "getWeather",
    "Weather for a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


async def sent(
    server: LocalServer,
    request: ChatRequest | list[Message] | None = None,
    overrides: dict[str, Any] | None = None,
    **model_options: Any,
) -> Recorded:
    """Make one blocking call and return what the server received."""
    server.add(json_reply(OK))
    model_options.setdefault("model", "gpt-test")
    async with OpenAIChatModel(base_url=server.base_url, **model_options) as model:
        await model.chat(request or [UserMessage("hi")], **(overrides or {}))
    return server.requests[-1]


async def body_of(server: LocalServer, *messages: Message, **parameters: Any) -> dict[str, Any]:
    request = ChatRequest(messages or [UserMessage("hi")], ChatParameters(**parameters))
    result: dict[str, Any] = (await sent(server, request)).json()
    return result


# --- 3.1 headers ----------------------------------------------------------------------------------


async def test_headers_json_and_bearer_when_api_key_set(server: LocalServer) -> None:
    headers = (await sent(server, api_key="sk-test-123")).headers
    assert headers["Content-Type"] == "application/json"
    assert headers["Accept"] == "application/json"
    assert headers["Authorization"] == "Bearer sk-test-123"


@pytest.mark.parametrize("api_key", [None, ""])
async def test_no_authorization_header_without_api_key(server: LocalServer, api_key: str | None) -> None:
    assert "Authorization" not in (await sent(server, api_key=api_key)).headers


async def test_custom_headers_are_added_after_the_standard_ones(server: LocalServer) -> None:
    headers = (
        await sent(server, api_key="k", custom_headers={"X-Tenant": "acme", "Accept": "application/x-custom"})
    ).headers
    assert headers["X-Tenant"] == "acme"
    assert headers["Accept"] == "application/x-custom"
    assert headers["Authorization"] == "Bearer k"


async def test_stream_asks_for_an_event_stream(server: LocalServer) -> None:
    server.add(
        sse_reply([sse_body({"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": "stop"}]})])
    )
    async with OpenAIChatModel(base_url=server.base_url, model="m", api_key="k") as model:
        await model.stream([UserMessage("hi")]).collect()
    assert server.requests[0].headers["Accept"] == "text/event-stream"
    assert server.requests[0].headers["Authorization"] == "Bearer k"


# --- base URL ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("suffix", "path"),
    [
        ("", "/v1/chat/completions"),
        ("/", "/v1/chat/completions"),
        ("/v1", "/v1/chat/completions"),
        ("/v1/", "/v1/chat/completions"),
        ("/api/v1", "/api/v1/chat/completions"),
        ("/openai/deployments/d?api-version=2024-10-21", "/openai/deployments/d/chat/completions"),
    ],
)
async def test_base_url_with_or_without_v1(server: LocalServer, suffix: str, path: str) -> None:
    server.add(json_reply(OK))
    async with OpenAIChatModel(base_url=server.base_url + suffix, model="m") as model:
        await model.chat([UserMessage("hi")])
    assert server.requests[0].path == path


def test_base_url_must_be_absolute_http() -> None:
    with pytest.raises(ValueError, match="base_url"):
        OpenAIChatModel(base_url="api.openai.com/v1", model="m")


# --- 3.2 messages -----------------------------------------------------------------------------------


async def test_system_developer_and_user_text_messages(server: LocalServer) -> None:
    body = await body_of(
        server, SystemMessage("be brief"), DeveloperMessage("use tools"), UserMessage("What is CAS?")
    )
    assert body["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "developer", "content": "use tools"},
        {"role": "user", "content": "What is CAS?"},
    ]


async def test_user_message_with_text_and_image_parts(server: LocalServer) -> None:
    message = UserMessage(
        [
            TextPart("Describe"),
            ImagePart("https://x/cat.png"),
            ImagePart("data:image/png;base64,AA", detail="low"),
        ],
        name="ann",
    )
    body = await body_of(server, message)
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Describe"},
                {"type": "image_url", "image_url": {"url": "https://x/cat.png"}},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA", "detail": "low"}},
            ],
            "name": "ann",
        }
    ]


async def test_assistant_plain_text(server: LocalServer) -> None:
    body = await body_of(server, UserMessage("hi"), AiMessage("hello"))
    assert body["messages"][1] == {"role": "assistant", "content": "hello"}


async def test_assistant_with_tool_calls_has_null_content_and_raw_arguments(server: LocalServer) -> None:
    call = ToolCall("call_1", "getWeather", '{"city":"hangzhou"}')
    body = await body_of(
        server,
        UserMessage("hi"),
        AiMessage(tool_calls=[call]),
        ToolResultMessage("call_1", '{"temperature":22}'),
    )
    assert body["messages"][1:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "getWeather", "arguments": '{"city":"hangzhou"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temperature":22}'},
    ]


async def test_assistant_text_and_tool_calls_both_kept_reasoning_not_sent(server: LocalServer) -> None:
    message = AiMessage("let me check", [ToolCall("c", "f", "{ }")], reasoning="secret thoughts")
    body = await body_of(server, UserMessage("hi"), message)
    assert body["messages"][1] == {
        "role": "assistant",
        "content": "let me check",
        "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{ }"}}],
    }


async def test_assistant_refusal_is_sent_back(server: LocalServer) -> None:
    body = await body_of(server, UserMessage("hi"), AiMessage(refusal="I can't"))
    assert body["messages"][1] == {"role": "assistant", "content": None, "refusal": "I can't"}


async def test_unsupported_message_fails_locally(server: LocalServer) -> None:
    async with OpenAIChatModel(base_url=server.base_url, model="m") as model:
        with pytest.raises(TypeError, match="cannot send a str"):
            await model.chat([UserMessage("hi"), "not a message"])  # type: ignore[list-item]
    assert server.requests == []


# --- 3.3 parameters ---------------------------------------------------------------------------------


async def test_model_name_missing_fails_locally_before_any_request(server: LocalServer) -> None:
    async with OpenAIChatModel(base_url=server.base_url) as model:
        with pytest.raises(ValueError, match="model name"):
            await model.chat([UserMessage("hi")])
        with pytest.raises(ValueError, match="model name"):
            model.stream([UserMessage("hi")])
    assert server.requests == []


async def test_unset_parameters_are_not_sent(server: LocalServer) -> None:
    assert set(await body_of(server)) == {"model", "messages"}


@pytest.mark.parametrize(
    ("parameter", "value", "field", "wire"),
    [
        ("temperature", 0.2, "temperature", 0.2),
        ("max_tokens", 1024, "max_tokens", 1024),
        ("max_completion_tokens", 512, "max_completion_tokens", 512),
        ("top_p", 0.9, "top_p", 0.9),
        ("stop", ["END", "STOP"], "stop", ["END", "STOP"]),
        ("reasoning_effort", "low", "reasoning_effort", "low"),
        ("seed", 42, "seed", 42),
        ("user", "user-7", "user", "user-7"),
        (
            "response_format",
            {
                "type": "json_schema",
                "json_schema": {"name": "r", "strict": True, "schema": {"type": "object"}},
            },
            "response_format",
            {
                "type": "json_schema",
                "json_schema": {"name": "r", "strict": True, "schema": {"type": "object"}},
            },
        ),
    ],
)
async def test_standard_parameter_mapping(
    server: LocalServer, parameter: str, value: Any, field: str, wire: Any
) -> None:
    body = await body_of(server, **{parameter: value})
    assert body[field] == wire
    assert set(body) == {"model", "messages", field}


async def test_stop_is_sent_only_when_non_empty_and_a_string_is_one_sequence(server: LocalServer) -> None:
    assert (await body_of(server, stop="END"))["stop"] == ["END"]
    assert "stop" not in await body_of(server, stop=[])
    # An empty override clears the model's default stop sequences.
    assert "stop" not in (await sent(server, overrides={"stop": ()}, stop=["X"])).json()


async def test_model_defaults_request_parameters_and_call_overrides_layer(server: LocalServer) -> None:
    request = ChatRequest([UserMessage("hi")], ChatParameters(temperature=0.5, top_p=0.8))
    recorded = await sent(
        server, request, {"top_p": 0.1, "model": "call-model"}, temperature=0.9, max_tokens=7
    )
    body = recorded.json()
    assert (body["model"], body["temperature"], body["top_p"], body["max_tokens"]) == (
        "call-model",
        0.5,
        0.1,
        7,
    )


async def test_custom_parameters_first_standard_fields_win(server: LocalServer) -> None:
    recorded = await sent(
        server,
        ChatRequest([UserMessage("hi")], ChatParameters(temperature=0.3, custom={"logprobs": True})),
        custom_parameters={"model": "other", "temperature": 2.0, "top_k": 40},
    )
    body = recorded.json()
    assert body["model"] == "gpt-test"
    assert body["temperature"] == 0.3
    assert body["top_k"] == 40
    assert body["logprobs"] is True
    assert list(body)[:3] == ["model", "temperature", "top_k"]  # custom keys written first


async def test_tools_mapping_strict_only_when_set(server: LocalServer) -> None:
    strict = ToolSpec("lookup", "", {"type": "object", "properties": {}}, strict=True)
    body = await body_of(server, tools=[WEATHER, strict])
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "getWeather",
                "description": "Weather for a city",
                "parameters": WEATHER.parameters,
            },
        },
        {
            "type": "function",
            "function": {
                "name": "lookup",
                "description": "",
                "parameters": {"type": "object", "properties": {}},
                "strict": True,
            },
        },
    ]


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        (ToolChoice.auto(), "auto"),
        (ToolChoice.none(), "none"),
        (ToolChoice.required(), "required"),
        (ToolChoice.function("getWeather"), {"type": "function", "function": {"name": "getWeather"}}),
    ],
)
async def test_tool_choice_all_four_forms(server: LocalServer, choice: ToolChoice, wire: Any) -> None:
    body = await body_of(server, tools=[WEATHER], tool_choice=choice)
    assert body["tool_choice"] == wire


async def test_parallel_tool_calls_sent_with_tools_only(server: LocalServer) -> None:
    assert (await body_of(server, tools=[WEATHER], parallel_tool_calls=False))["parallel_tool_calls"] is False
    assert "parallel_tool_calls" not in await body_of(server, parallel_tool_calls=False)


async def test_stream_forces_stream_and_include_usage(server: LocalServer) -> None:
    server.add(
        sse_reply([sse_body({"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": "stop"}]})])
    )
    async with OpenAIChatModel(
        base_url=server.base_url,
        model="m",
        custom_parameters={"stream": False, "stream_options": {"include_obfuscation": False}},
    ) as model:
        await model.stream([UserMessage("hi")]).collect()
    body = server.requests[0].json()
    assert body["stream"] is True
    assert body["stream_options"] == {"include_obfuscation": False, "include_usage": True}


async def test_blocking_call_never_asks_for_a_stream(server: LocalServer) -> None:
    body = (
        await sent(server, custom_parameters={"stream": True, "stream_options": {"include_usage": True}})
    ).json()
    assert body["stream"] is False
    assert "stream_options" not in body


def test_unknown_model_keyword_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match="temprature"):
        OpenAIChatModel(model="m", temprature=0.2)


async def test_unknown_override_is_a_clear_error(server: LocalServer) -> None:
    async with OpenAIChatModel(base_url=server.base_url, model="m") as model:
        with pytest.raises(TypeError, match="max_token"):
            await model.chat([UserMessage("hi")], max_token=3)


async def test_a_plain_message_list_is_sent_as_a_request_without_parameters(server: LocalServer) -> None:
    # A model takes a list without building a request of it: the same errors, the same body.
    model = OpenAIChatModel(base_url=server.base_url, model="m", temperature=0.5, custom_parameters={"k": 1})
    async with model:
        listed = model._request([UserMessage("hi")], {})
        assert listed == model._request(ChatRequest([UserMessage("hi")]), {})
        assert listed.parameters is model.defaults  # nothing merged onto the defaults
        assert model._request((m for m in [UserMessage("hi")]), {}).messages == (UserMessage("hi"),)
        with pytest.raises(TypeError, match="not a string"):
            await model.chat("hi")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"not a UserMessage \(wrap a single message in a list"):
            model.stream(UserMessage("hi"))  # type: ignore[arg-type]
        assert server.requests == []
        server.add(json_reply(OK))
        await model.chat([UserMessage("hi")], top_p=0.9)
    assert server.requests[-1].json() == {
        "k": 1,
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "temperature": 0.5,
        "top_p": 0.9,
    }
