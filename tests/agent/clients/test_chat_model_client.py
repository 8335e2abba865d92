"""ChatModelClient: one test per row of seed 000's Chat mapping, plus where agentflow does better."""

from __future__ import annotations

import anyio
import pytest
from agent_client_fakes import FakeChatModel, completed

from agentflow.agent.chat_client import ChatModelClient, chat_result, to_chat_request
from agentflow.agent.items import (
    assistant_item,
    function_call_item,
    function_call_output_item,
    system_item,
    user_item,
)
from agentflow.agent.prompt import AgentModelResult, AgentPrompt, ModelClient
from agentflow.model.errors import StreamCutOffError
from agentflow.model.events import (
    ModelCompleted,
    ModelRetry,
    ReasoningDelta,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallReady,
    ToolCallStarted,
    UsageReported,
)
from agentflow.model.messages import (
    AiMessage,
    ImagePart,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from agentflow.model.response import ChatResponse, FinishReason, TokenUsage
from agentflow.model.tools import ToolChoice, ToolSpec

WEATHER = ToolSpec("get_weather", "Weather for a city", {"type": "object", "properties": {}})


def _reply(text: str = "ok") -> ChatResponse:
    return ChatResponse(AiMessage(text), finish_reason=FinishReason.STOP)


# --- prompt mapping -------------------------------------------------------------------------------


def test_chat_system_prompt_is_the_first_system_message_and_instructions_a_second() -> None:
    prompt = AgentPrompt(
        system_prompt="fixed system", instructions="fixed developer rules", items=[user_item("hi")]
    )
    assert to_chat_request(prompt).messages == (
        SystemMessage("fixed system"),
        SystemMessage("fixed developer rules"),
        UserMessage("hi"),
    )


def test_chat_blank_system_prompt_and_instructions_add_no_message() -> None:
    prompt = AgentPrompt(system_prompt="  ", instructions="", items=[user_item("hi")])
    assert to_chat_request(prompt).messages == (UserMessage("hi"),)


def test_chat_passes_model_temperature_top_p_user() -> None:
    params = to_chat_request(AgentPrompt(model="m", temperature=0.3, top_p=0.9, user="u-1")).parameters
    assert (params.model, params.temperature, params.top_p, params.user) == ("m", 0.3, 0.9, "u-1")


def test_chat_max_output_tokens_becomes_max_completion_tokens() -> None:
    params = to_chat_request(AgentPrompt(max_output_tokens=64)).parameters
    assert params.max_completion_tokens == 64
    assert params.max_tokens is None


def test_chat_tools_are_sent_with_parallel_tool_calls() -> None:
    params = to_chat_request(AgentPrompt(tools=[WEATHER], parallel_tool_calls=False)).parameters
    assert params.tools == (WEATHER,)
    assert params.parallel_tool_calls is False


def test_chat_parallel_tool_calls_is_not_sent_without_tools() -> None:
    params = to_chat_request(AgentPrompt(parallel_tool_calls=True)).parameters
    assert params.tools is None
    assert params.parallel_tool_calls is None


@pytest.mark.parametrize("mode", ["auto", "none", "required"])
def test_chat_string_tool_choice_passes_through(mode: str) -> None:
    assert to_chat_request(AgentPrompt(tool_choice=mode)).parameters.tool_choice == ToolChoice(mode)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "choice",
    [
        ToolChoice.function("get_weather"),
        {"type": "function", "function": {"name": "get_weather"}},
        {"type": "function", "name": "get_weather"},
    ],
)
def test_chat_structured_tool_choice_is_accepted(choice: object) -> None:
    prompt = AgentPrompt(tool_choice=choice)  # type: ignore[arg-type]
    assert to_chat_request(prompt).parameters.tool_choice == ToolChoice.function("get_weather")


def test_chat_tool_choice_map_without_chat_equivalent_is_sent_verbatim() -> None:
    choice = {"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": [{"type": "function"}]}}
    params = to_chat_request(AgentPrompt(tool_choice=choice, extra_body={"tool_choice": "x"})).parameters
    assert params.tool_choice is None
    assert params.custom["tool_choice"] == choice


def test_chat_unknown_tool_choice_string_is_rejected() -> None:
    with pytest.raises(ValueError, match="tool_choice"):
        to_chat_request(AgentPrompt(tool_choice="any"))
    with pytest.raises(ValueError, match="function name"):
        to_chat_request(AgentPrompt(tool_choice={"type": "function"}))


def test_chat_reasoning_effort_maps_to_reasoning_effort() -> None:
    params = to_chat_request(AgentPrompt(reasoning={"effort": "low", "summary": "auto"})).parameters
    assert params.reasoning_effort == "low"
    assert "reasoning" not in params.custom


def test_chat_store_is_not_sent() -> None:
    params = to_chat_request(AgentPrompt(store=True)).parameters
    assert "store" not in params.custom


def test_chat_extra_body_becomes_custom_parameters() -> None:
    params = to_chat_request(AgentPrompt(extra_body={"seed": 7, "vendor_flag": True})).parameters
    assert params.custom == {"seed": 7, "vendor_flag": True}


def test_chat_items_are_converted_one_by_one() -> None:
    plain = AiMessage("earlier answer")
    prompt = AgentPrompt(
        items=[
            user_item("look", ["https://x/a.png"]),
            plain,
            {"type": "message", "role": "user", "content": "plain string"},
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "a"}, {"type": "input_text", "text": "b"}],
            },
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_image", "image_url": {"url": "https://x/b.png"}}],
            },
            assistant_item("", [ToolCall("c1", "get_weather", "{}")]),
            function_call_output_item("c1", "sunny"),
        ]
    )
    assert to_chat_request(prompt).messages == (
        UserMessage([TextPart("look"), ImagePart("https://x/a.png", "auto")]),
        plain,
        UserMessage("plain string"),
        UserMessage("ab"),
        UserMessage([ImagePart("https://x/b.png")]),
        AiMessage(tool_calls=[ToolCall("c1", "get_weather", "{}")]),
        ToolResultMessage("c1", "sunny"),
    )


def test_chat_function_call_items_become_one_assistant_turn_and_reasoning_is_skipped() -> None:
    items = [
        {"type": "reasoning", "id": "rs_1", "encrypted_content": "gAAA", "summary": []},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking."}]},
        function_call_item("c1", "f", '{"a":1}'),
        function_call_item("c2", "g", "{}"),
        function_call_output_item("c1", "1"),
        function_call_output_item("c2", "2"),
    ]
    assert to_chat_request(AgentPrompt(items=items)).messages == (
        AiMessage("Checking.", tool_calls=[ToolCall("c1", "f", '{"a":1}'), ToolCall("c2", "g", "{}")]),
        ToolResultMessage("c1", "1"),
        ToolResultMessage("c2", "2"),
    )


@pytest.mark.parametrize(
    ("item", "error"),
    [
        ("just text", TypeError),
        ({"type": "web_search_call", "id": "ws_1"}, ValueError),
        (
            {"type": "message", "role": "user", "content": [{"type": "input_file", "file_id": "f"}]},
            ValueError,
        ),
        (
            {"type": "message", "role": "system", "content": [{"type": "input_image", "image_url": "u"}]},
            ValueError,
        ),
        ({"type": "function_call_output", "output": "x"}, ValueError),
        ({"type": "message", "role": "wizard", "content": "x"}, ValueError),
    ],
)
def test_chat_unconvertible_item_is_a_clear_error_never_dropped(item: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="item 1"):
        to_chat_request(AgentPrompt(items=[user_item("hi"), item]))


# --- result mapping -------------------------------------------------------------------------------


def test_chat_memory_item_is_one_converted_assistant_message() -> None:
    result = chat_result(ChatResponse(AiMessage("Paris.")))
    assert result.memory_items == (assistant_item("Paris."),)
    assert result.output_text == "Paris."


def test_chat_memory_item_carries_tool_calls() -> None:
    call = ToolCall("call_1", "get_weather", '{"city":"Paris"}')
    result = chat_result(
        ChatResponse(AiMessage(None, tool_calls=[call]), finish_reason=FinishReason.TOOL_EXECUTION)
    )
    assert result.tool_calls == (call,)
    assert result.memory_items == (assistant_item(None, [call]),)
    assert "content" not in result.memory_items[0]
    assert result.finish_reason is FinishReason.TOOL_EXECUTION
    # The memory item converts back to the same assistant turn.
    assert to_chat_request(AgentPrompt(items=result.memory_items)).messages == (AiMessage(tool_calls=[call]),)


def test_chat_empty_answer_stores_nothing() -> None:
    assert chat_result(ChatResponse(AiMessage(None))).memory_items == ()


def test_chat_reasoning_is_reported_but_not_stored_in_memory() -> None:
    result = chat_result(ChatResponse(AiMessage("42", reasoning="thinking…")))
    assert result.reasoning_text == "thinking…"
    assert "thinking" not in str(result.memory_items)


def test_chat_blank_call_ids_are_filled_the_same_in_result_and_memory() -> None:
    result = chat_result(
        ChatResponse(AiMessage(None, tool_calls=[ToolCall("", "f", "{}"), ToolCall("", "g", "")]))
    )
    ids = [call.id for call in result.tool_calls]
    assert all(ids)
    assert len(set(ids)) == 2
    assert [c["id"] for c in result.memory_items[0]["tool_calls"]] == ids


def test_chat_refusal_is_reported_and_kept_in_memory() -> None:
    result = chat_result(ChatResponse(AiMessage(None, refusal="I can't help with that.")))
    assert result.refusal == "I can't help with that."
    messages = to_chat_request(AgentPrompt(items=result.memory_items)).messages
    assert messages == (AiMessage(None, refusal="I can't help with that."),)


def test_usage_is_normalised_per_the_reference_vector() -> None:
    usage = TokenUsage(100, 20, 120, cached_input_tokens=60, cache_write_tokens=30, reasoning_tokens=7)
    result = chat_result(ChatResponse(AiMessage("x"), usage=usage))
    assert result.usage is not None
    assert (
        result.usage.input_tokens,
        result.usage.uncached_input_tokens,
        result.usage.cached_input_tokens,
    ) == (
        100,
        40,
        60,
    )
    assert (result.usage.cache_write_tokens, result.usage.output_tokens, result.usage.total_tokens) == (
        30,
        20,
        120,
    )
    assert result.usage.reasoning_tokens == 7


# --- the client -----------------------------------------------------------------------------------


async def test_chat_client_create_sends_the_request_and_returns_the_result() -> None:
    model = FakeChatModel(_reply("hello"))
    client = ChatModelClient(model)
    assert isinstance(client, ModelClient)
    result = await client.create(AgentPrompt(model="m", items=[user_item("hi")]))
    assert result.output_text == "hello"
    assert model.requests[0].messages == (UserMessage("hi"),)
    assert model.requests[0].parameters.model == "m"


async def test_chat_stream_surfaces_reasoning_text_and_tool_call_events_mid_stream() -> None:
    call = ToolCall("call_1", "get_weather", '{"city":"Paris"}')
    final = ChatResponse(
        AiMessage("Let me check.", tool_calls=[call], reasoning="hmm"),
        usage=TokenUsage(10, 5, 15),
        finish_reason=FinishReason.TOOL_EXECUTION,
    )
    script = [
        ModelRetry(2, 3, 0.5, "HTTP 503"),
        ReasoningDelta("hmm"),
        TextDelta("Let me check."),
        ToolCallStarted(0, "call_1", "get_weather"),
        ToolCallArgumentsDelta(0, '{"city":"Paris"}'),
        ToolCallReady(0, call),
        UsageReported(TokenUsage(10, 5, 15)),
        completed(final),
    ]
    client = ChatModelClient(FakeChatModel(events=script))
    async with client.create_stream(AgentPrompt(tools=[WEATHER], items=[user_item("weather?")])) as stream:
        seen = [event async for event in stream]
    assert seen[:-1] == script[:-1]
    last = seen[-1]
    assert isinstance(last, ModelCompleted)
    assert isinstance(last.response, AgentModelResult)
    assert stream.response is last.response
    assert stream.response.tool_calls == (call,)
    assert stream.response.reasoning_text == "hmm"
    assert stream.response.memory_items == (assistant_item("Let me check.", [call]),)


async def test_chat_stream_sends_nothing_until_entered_but_validates_at_once() -> None:
    model = FakeChatModel(events=[completed(_reply())])
    client = ChatModelClient(model)
    stream = client.create_stream(AgentPrompt(items=[user_item("hi")]))
    assert not model.stream_opened
    assert (await stream.collect()).output_text == "ok"
    with pytest.raises(TypeError):
        client.create_stream(AgentPrompt(items=["not an item"]))


async def test_chat_stream_closed_early_closes_the_model_stream() -> None:
    model = FakeChatModel(events=[TextDelta("a"), TextDelta("b"), completed(_reply())], hold_after=1)
    async with ChatModelClient(model).create_stream(AgentPrompt()) as stream:
        async for event in stream:
            assert event == TextDelta("a")
            break
    assert model.stream_closed


async def test_cancelling_the_consumer_closes_the_model_stream() -> None:
    model = FakeChatModel(events=[TextDelta("a"), TextDelta("b")], hold_after=1)
    seen: list[object] = []

    async def consume() -> None:
        async with ChatModelClient(model).create_stream(AgentPrompt()) as stream:
            async for event in stream:
                seen.append(event)

    async with anyio.create_task_group() as group:
        group.start_soon(consume)
        await model.reached_hold.wait()
        group.cancel_scope.cancel()
    assert seen == [TextDelta("a")]
    assert model.stream_closed


async def test_chat_stream_without_completion_raises_stream_cut_off() -> None:
    client = ChatModelClient(FakeChatModel(events=[TextDelta("a")]))
    with pytest.raises(StreamCutOffError):
        await client.create_stream(AgentPrompt()).collect()


async def test_chat_client_closes_its_model() -> None:
    model = FakeChatModel(_reply())
    async with ChatModelClient(model):
        pass
    assert model.model_closed


def test_chat_client_rejects_what_is_not_a_chat_model() -> None:
    with pytest.raises(TypeError, match="ChatModel"):
        ChatModelClient(object())  # type: ignore[arg-type]


def test_chat_items_round_trip_system_items() -> None:
    messages = to_chat_request(AgentPrompt(items=[system_item("plan: 1. x")])).messages
    assert messages == (SystemMessage("plan: 1. x"),)
