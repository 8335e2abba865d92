"""ResponsesModelClient: a test per row of seed 000's Responses mapping, plus where agentflow does better."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from agent_client_fakes import FakeResponsesModel, completed
from agent_wire_replay import recording

from agentflow.agent.items import (
    assistant_item,
    function_call_item,
    function_call_output_item,
    system_item,
    user_item,
)
from agentflow.agent.prompt import AgentModelResult, AgentPrompt, ModelClient
from agentflow.agent.responses_client import ResponsesModelClient, responses_result, to_responses_request
from agentflow.model.events import (
    ModelCompleted,
    ReasoningDelta,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallReady,
    ToolCallStarted,
)
from agentflow.model.messages import AiMessage, SystemMessage, ToolCall, ToolResultMessage, UserMessage
from agentflow.model.response import FinishReason, TokenUsage
from agentflow.model.tools import ToolChoice, ToolSpec
from agentflow.providers.openai.responses_codec import decode_response, encode_request
from agentflow.providers.openai.responses_types import ResponsesResponse

WEATHER = ToolSpec("get_weather", "Weather for a city", {"type": "object", "properties": {}}, strict=True)


def _response(output: list[dict[str, Any]], **fields: Any) -> ResponsesResponse:
    return ResponsesResponse("resp_1", "m", fields.pop("status", "completed"), tuple(output), **fields)


def _wire_response(name: str) -> ResponsesResponse:
    return decode_response(orjson.loads(recording(name)["response_body"]))


# --- prompt mapping -------------------------------------------------------------------------------


def test_responses_system_prompt_becomes_request_instructions() -> None:
    request = to_responses_request(AgentPrompt(system_prompt="fixed system", items=[user_item("hi")]))
    assert request.instructions == "fixed system"
    assert list(request.input) == [user_item("hi")]


def test_responses_instructions_become_a_system_item_at_index_0() -> None:
    prompt = AgentPrompt(
        system_prompt="fixed system",
        instructions="fixed developer rules",
        items=[user_item("a"), user_item("b")],
    )
    request = to_responses_request(prompt)
    assert request.instructions == "fixed system"
    assert list(request.input) == [system_item("fixed developer rules"), user_item("a"), user_item("b")]


def test_responses_blank_system_prompt_and_instructions_are_not_sent() -> None:
    request = to_responses_request(AgentPrompt(system_prompt=" ", instructions="", items=[user_item("a")]))
    assert request.instructions is None
    assert list(request.input) == [user_item("a")]


def test_responses_passes_through_every_top_level_field() -> None:
    prompt = AgentPrompt(
        model="gpt-4.1",
        tools=[WEATHER],
        tool_choice="required",
        parallel_tool_calls=False,
        temperature=0.2,
        top_p=0.9,
        max_output_tokens=128,
        reasoning={"effort": "high", "summary": "auto"},
        store=False,
        user="u-1",
        extra_body={"include": ["reasoning.encrypted_content"], "vendor_flag": 1},
    )
    body = encode_request(to_responses_request(prompt), stream=False)
    assert body["model"] == "gpt-4.1"
    assert body["tool_choice"] == "required"
    assert body["parallel_tool_calls"] is False
    assert (body["temperature"], body["top_p"], body["max_output_tokens"]) == (0.2, 0.9, 128)
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert body["store"] is False
    assert body["user"] == "u-1"
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["vendor_flag"] == 1


def test_responses_tools_are_sent_flat() -> None:
    body = encode_request(to_responses_request(AgentPrompt(model="m", tools=[WEATHER])), stream=False)
    assert body["tools"] == [
        {
            "type": "function",
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": {"type": "object", "properties": {}},
            "strict": True,
        }
    ]


@pytest.mark.parametrize(
    "choice",
    ["auto", ToolChoice.function("get_weather"), {"type": "allowed_tools", "mode": "auto", "tools": []}],
)
def test_responses_tool_choice_passes_through_in_any_form(choice: Any) -> None:
    assert to_responses_request(AgentPrompt(tool_choice=choice)).tool_choice == choice


def test_responses_dict_items_are_sent_verbatim() -> None:
    reasoning = {"type": "reasoning", "id": "rs_1", "encrypted_content": "gAAA", "summary": [], "future": 1}
    web_search = {"type": "web_search_call", "id": "ws_1", "status": "completed"}
    items = [
        user_item("hi"),
        reasoning,
        function_call_item("c1", "f", "{}"),
        function_call_output_item("c1", "x"),
    ]
    request = to_responses_request(AgentPrompt(items=[*items, web_search]))
    assert list(request.input) == [*items, web_search]
    assert request.input[1] is reasoning


def test_responses_message_values_and_chat_shaped_items_become_responses_items() -> None:
    call = ToolCall("c1", "f", "{}")
    items = [
        SystemMessage("s"),
        UserMessage("hi"),
        AiMessage("checking", tool_calls=[call]),
        ToolResultMessage("c1", "done"),
        assistant_item("again", [ToolCall("c2", "g", "{}")]),
        {"role": "tool", "tool_call_id": "c2", "content": "ok"},
    ]
    assert list(to_responses_request(AgentPrompt(items=items)).input) == [
        system_item("s"),
        user_item("hi"),
        assistant_item("checking"),
        function_call_item("c1", "f", "{}"),
        function_call_output_item("c1", "done"),
        assistant_item("again"),
        function_call_item("c2", "g", "{}"),
        function_call_output_item("c2", "ok"),
    ]


def test_responses_non_item_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="item 0"):
        to_responses_request(AgentPrompt(items=[42]))


# --- result mapping -------------------------------------------------------------------------------


def test_responses_memory_items_are_the_raw_output_items_verbatim() -> None:
    response = _wire_response("responses_reasoning_parallel_function_calls.json")
    result = responses_result(response)
    assert result.memory_items == response.output
    assert result.memory_items[0]["type"] == "reasoning"
    assert result.memory_items[0]["encrypted_content"].startswith("gAAAA")
    assert len(result.tool_calls) == 5
    assert [c.id for c in result.tool_calls] == [i["call_id"] for i in response.output[1:]]
    assert result.finish_reason is FinishReason.TOOL_EXECUTION
    assert result.raw is response


def test_responses_encrypted_reasoning_survives_a_round_trip_into_the_next_request() -> None:
    result = responses_result(_wire_response("responses_reasoning_parallel_function_calls.json"))
    outputs = [function_call_output_item(call.id, "ok") for call in result.tool_calls]
    body = encode_request(
        to_responses_request(AgentPrompt(model="m", items=[user_item("go"), *result.memory_items, *outputs])),
        stream=False,
    )
    assert body["input"][1] == result.memory_items[0]
    assert body["input"][2] == result.memory_items[1]


def test_responses_reasoning_text_is_filled() -> None:
    result = responses_result(_wire_response("responses_reasoning_summary_message.json"))
    assert result.reasoning_text
    assert result.output_text
    assert result.finish_reason is FinishReason.STOP


def test_responses_blank_call_ids_are_filled_the_same_in_result_and_memory() -> None:
    item = {"type": "function_call", "id": "fc_1", "call_id": "", "name": "f", "arguments": "{}"}
    result = responses_result(_response([item], tool_calls=(ToolCall("", "f", "{}"),)))
    assert result.tool_calls[0].id
    assert result.memory_items[0]["call_id"] == result.tool_calls[0].id
    assert result.memory_items[0]["id"] == "fc_1"
    assert item["call_id"] == ""


def test_usage_is_normalised_per_the_reference_vector_on_responses() -> None:
    payload = orjson.loads(recording("responses_message.json")["response_body"])
    payload["usage"] = {
        "input_tokens": 100,
        "input_tokens_details": {"cached_tokens": 60, "cache_write_tokens": 30},
        "output_tokens": 20,
        "output_tokens_details": {"reasoning_tokens": 7},
        "total_tokens": 120,
    }
    usage = responses_result(decode_response(payload)).usage
    assert usage == TokenUsage(
        100, 20, 120, cached_input_tokens=60, cache_write_tokens=30, reasoning_tokens=7
    )
    assert usage.uncached_input_tokens == 40


# --- the client -----------------------------------------------------------------------------------


async def test_responses_client_create_sends_the_request_and_returns_the_result() -> None:
    message = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]}
    model = FakeResponsesModel(_response([message], output_text="hi"))
    client = ResponsesModelClient(model)
    assert isinstance(client, ModelClient)
    result = await client.create(AgentPrompt(model="m", system_prompt="s", items=[user_item("q")]))
    assert result.output_text == "hi"
    assert result.memory_items == (message,)
    assert model.requests[0].instructions == "s"


async def test_responses_stream_surfaces_reasoning_and_tool_calls_mid_stream() -> None:
    call = ToolCall("call_1", "get_weather", "{}")
    output: list[dict[str, Any]] = [
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "think"}]},
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": "{}",
        },
    ]
    script = [
        ReasoningDelta("think"),
        ToolCallStarted(0, "call_1", "get_weather"),
        ToolCallArgumentsDelta(0, "{}"),
        ToolCallReady(0, call),
        completed(_response(output, reasoning="think", tool_calls=(call,))),
    ]
    model = FakeResponsesModel(events=script)
    async with ResponsesModelClient(model).create_stream(AgentPrompt(tools=[WEATHER])) as stream:
        seen = [event async for event in stream]
    assert seen[:-1] == script[:-1]
    last = seen[-1]
    assert isinstance(last, ModelCompleted)
    assert isinstance(last.response, AgentModelResult)
    assert last.response.tool_calls == (call,)
    assert last.response.memory_items == tuple(output)


async def test_responses_stream_closed_early_closes_the_model_stream() -> None:
    model = FakeResponsesModel(events=[TextDelta("a"), TextDelta("b")], hold_after=1)
    async with ResponsesModelClient(model).create_stream(AgentPrompt()) as stream:
        async for _ in stream:
            break
    assert model.stream_closed


async def test_responses_client_closes_its_model() -> None:
    model = FakeResponsesModel()
    async with ResponsesModelClient(model):
        pass
    assert model.model_closed


def test_responses_client_rejects_a_plain_chat_model() -> None:
    with pytest.raises(TypeError, match="create_stream"):
        ResponsesModelClient(object())  # type: ignore[arg-type]
