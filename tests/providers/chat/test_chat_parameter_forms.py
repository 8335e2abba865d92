"""The forms ``OpenAIChatModel`` parameters accept besides the typed ones (``"auto"``, a raw function tool
mapping), the clear typed errors for the others — raised when the parameters are built, before any
request — and the ``tool_choice`` that is only sent with tools."""

from __future__ import annotations

from typing import Any

import pytest
from chat_local_server import LocalServer, json_reply, sse_body, sse_reply

from agentflow import ChatParameters, ChatRequest, ToolChoice, ToolSpec, UserMessage
from agentflow.http.retry import RetryPolicy
from agentflow.providers.openai.chat_model import OpenAIChatModel

OK = {"id": "c", "choices": [{"index": 0, "message": {"content": "ok"}, "finish_reason": "stop"}]}
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}
WEATHER = ToolSpec("get_weather", "Weather for a city", SCHEMA)
CHAT_TOOL = {
    "type": "function",
    "function": {"name": "get_weather", "description": "Weather for a city", "parameters": SCHEMA},
}
WIRE_TOOL = CHAT_TOOL  # what Chat Completions receives for WEATHER
HI = [UserMessage("hi")]


def model_for(server: LocalServer, **options: Any) -> OpenAIChatModel:
    return OpenAIChatModel(base_url=server.base_url, model="m", retry=RetryPolicy.none(), **options)


# --- the shared coercions ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("auto", ToolChoice.auto()),
        ("none", ToolChoice.none()),
        ("required", ToolChoice.required()),
        ({"type": "function", "function": {"name": "f"}}, ToolChoice.function("f")),
        ({"type": "function", "name": "f"}, ToolChoice.function("f")),
        ({"type": "required"}, ToolChoice.required()),
        (ToolChoice.function("f"), ToolChoice.function("f")),
    ],
)
def test_tool_choice_coerce_reads_the_wire_forms(value: Any, expected: ToolChoice) -> None:
    assert ToolChoice.coerce(value) == expected
    assert ChatParameters(tool_choice=value).tool_choice == expected


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        ("any", ValueError, "tool_choice must be 'auto', 'none', 'required'"),
        ({"type": "function"}, ValueError, "needs a function name"),
        ({"type": "allowed_tools", "allowed_tools": {}}, ValueError, r"no ToolChoice form.*custom"),
        (3, TypeError, "tool_choice must be a ToolChoice, a string or a mapping, not int"),
    ],
)
def test_tool_choice_without_a_tool_choice_form_is_a_clear_error(
    value: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        ChatParameters(tool_choice=value)


@pytest.mark.parametrize(
    "value",
    [
        CHAT_TOOL,
        {
            "type": "function",
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": SCHEMA,
        },
        WEATHER,
    ],
)
def test_function_tool_mappings_become_tool_specs(value: Any) -> None:
    assert ToolSpec.coerce(value) == WEATHER
    assert ChatParameters(tools=[value]).tools == (WEATHER,)


def test_tool_spec_coerce_keeps_strict_and_defaults_the_schema() -> None:
    spec = ToolSpec.coerce({"type": "function", "function": {"name": "f", "strict": True}})
    assert spec == ToolSpec("f", "", {"type": "object", "properties": {}}, strict=True)


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        ([{"type": "web_search"}], TypeError, "a tool must be a ToolSpec or a function tool mapping"),
        ([{"type": "function", "function": {"description": "x"}}], ValueError, "needs a name"),
        (["get_weather"], TypeError, "a tool must be a ToolSpec"),
        ("get_weather", TypeError, "tools must be a sequence of ToolSpec"),
    ],
)
def test_other_tools_are_a_clear_error(value: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        ChatParameters(tools=value)


def test_tool_specs_are_kept_as_they_are() -> None:
    tools = (WEATHER,)
    params = ChatParameters(tools=tools)
    assert params.tools is tools
    assert params.merged(ChatParameters(temperature=0.1)).tools is tools


@pytest.mark.parametrize("value", ["json_object", ["json_object"]])
def test_response_format_must_be_a_mapping(value: Any) -> None:
    with pytest.raises(
        TypeError, match=r"response_format must be a mapping such as \{'type': 'json_object'\}"
    ):
        ChatParameters(response_format=value)


def test_a_string_is_not_a_list_of_messages() -> None:
    with pytest.raises(TypeError, match=r"expected a list of messages, not a string"):
        ChatRequest("hello")  # type: ignore[arg-type]


# --- through OpenAIChatModel ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "wire"),
    [
        ({"tools": [WEATHER], "tool_choice": "auto"}, {"tools": [WIRE_TOOL], "tool_choice": "auto"}),
        (
            {"tools": [CHAT_TOOL], "tool_choice": "required"},
            {"tools": [WIRE_TOOL], "tool_choice": "required"},
        ),
        (
            {"tools": [WEATHER], "tool_choice": {"type": "function", "name": "get_weather"}},
            {"tools": [WIRE_TOOL], "tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
        ),
    ],
)
async def test_shorthand_parameters_are_sent_in_chat_form(
    server: LocalServer, overrides: dict[str, Any], wire: dict[str, Any]
) -> None:
    server.add(
        json_reply(OK),
        sse_reply([sse_body({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})]),
    )
    async with model_for(server) as model:
        await model.chat(HI, **overrides)
        await model.stream(HI, **overrides).collect()
    for request in server.requests:
        body = request.json()
        assert {key: body[key] for key in wire} == wire


async def test_shorthand_defaults_of_the_model_are_read_at_construction(server: LocalServer) -> None:
    server.add(json_reply(OK))
    async with model_for(server, tools=[CHAT_TOOL], tool_choice="none") as model:
        assert model.defaults.tools == (WEATHER,)
        await model.chat(HI)
    assert server.requests[0].json()["tool_choice"] == "none"


@pytest.mark.parametrize(
    ("overrides", "error"),
    [
        ({"tool_choice": "any"}, ValueError),
        ({"tools": [{"type": "web_search"}]}, TypeError),
        ({"response_format": "json_object"}, TypeError),
    ],
)
async def test_bad_parameters_fail_before_any_request(
    server: LocalServer, overrides: dict[str, Any], error: type[Exception]
) -> None:
    async with model_for(server) as model:
        with pytest.raises(error):
            await model.chat(HI, **overrides)
        with pytest.raises(error):
            model.stream(HI, **overrides)
        with pytest.raises(error):
            model_for(server, **overrides)
        with pytest.raises(TypeError, match="not a string"):
            await model.chat(ChatRequest("hello"))  # type: ignore[arg-type]
    assert server.requests == []


# --- tool_choice only with tools -----------------------------------------------------------------


async def test_tool_choice_is_sent_with_tools_only(server: LocalServer) -> None:
    server.add(json_reply(OK), json_reply(OK), json_reply(OK))
    async with model_for(server) as model:
        await model.chat(HI, tool_choice=ToolChoice.none())
        await model.chat(HI, tools=[WEATHER], tool_choice=ToolChoice.none())
        await model.chat(
            ChatRequest(HI, ChatParameters(tool_choice="required", custom={"tools": [CHAT_TOOL]}))
        )
    without, with_tools, with_custom_tools = (r.json() for r in server.requests)
    assert "tool_choice" not in without
    assert with_tools["tool_choice"] == "none"
    assert with_custom_tools["tool_choice"] == "required"
