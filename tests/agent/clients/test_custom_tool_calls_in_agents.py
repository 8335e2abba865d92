"""GPT-5 custom (free-form) tool calls in agent runs, the same on both protocols: the call reaches the
runtime, which answers it as it answers any call (an unknown tool's ``TOOL_ERROR``; a registered function
tool of that name refuses the free-form input as not JSON), and the run goes on. The result goes back as a
``tool`` message on Chat and as a ``custom_tool_call_output`` on Responses (which pairs a custom call with
nothing else). ``ResponsesModelClient`` used to raise ``ProtocolError`` for such a call while Chat ran it.

A conversation held on Chat (custom calls, OpenRouter's ``reasoning_details``, Gemini's ``extra_content``)
and stored as JSON goes on over Responses with none of the Chat-only fields, which OpenAI refuses.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from typing import Any

import pytest

from agentflow.agent.agent import Agent
from agentflow.agent.chat_client import ChatModelClient
from agentflow.agent.items import dump_items, load_items, to_responses_input
from agentflow.agent.memory import InMemoryMemory
from agentflow.agent.options import AgentOptions
from agentflow.agent.responses_client import ResponsesModelClient
from agentflow.model.events import ModelEvent
from agentflow.model.messages import AiMessage, ToolCall, ToolResultMessage
from agentflow.model.response import ChatResponse
from agentflow.model.stream import ModelStream
from agentflow.providers.openai.chat_codec import encode_message
from agentflow.providers.openai.responses_codec import decode_response
from agentflow.providers.openai.responses_types import ResponsesRequest, ResponsesResponse
from agentflow.testing.fake import FakeChatModel, chat_reply, stream_events
from agentflow.tools import tool

CUSTOM = {
    "id": "ctc_1",
    "type": "custom_tool_call",
    "status": "completed",
    "call_id": "call_1",
    "name": "code_exec",
    "input": "print(1)",
}
CUSTOM_CALL = ToolCall("call_1", "code_exec", "print(1)", "custom")
DONE_MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "Done."}],
}
SIGNATURE = {"google": {"thought_signature": "CvcBAY8a…sig=="}}
DETAILS = [{"type": "reasoning.encrypted", "data": "gAAAA…", "id": "call_w", "format": "google-gemini-v1"}]


def responses(*output: dict[str, Any]) -> ResponsesResponse:
    return decode_response(
        {
            "id": "resp_1",
            "status": "completed",
            "model": "gpt-5",
            "output": list(output),
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    )


class ScriptedResponses:
    """A Responses model answering each request with the next scripted response (streamed as its events)."""

    def __init__(self, script: Sequence[ResponsesResponse]) -> None:
        self.script = list(script)
        self.requests: list[ResponsesRequest] = []

    def _next(self, request: ResponsesRequest) -> ResponsesResponse:
        self.requests.append(request)
        return self.script[len(self.requests) - 1]

    async def create(self, request: ResponsesRequest, /, **options: Any) -> ResponsesResponse:
        return self._next(request)

    def create_stream(self, request: ResponsesRequest, /, **options: Any) -> ModelStream[ResponsesResponse]:
        response = self._next(request)

        async def events() -> AsyncGenerator[ModelEvent, None]:
            for event in stream_events(response, text=response.output_text, tool_calls=response.tool_calls):
                yield event

        return ModelStream(events)

    async def aclose(self) -> None:
        pass


def code_exec(source: str) -> str:
    """Run Python source (a function tool: JSON arguments)."""
    return "ran"


def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


@pytest.mark.parametrize("stream", [False, True], ids=["blocking", "streamed"])
async def test_on_responses_an_unknown_custom_tool_is_answered_and_the_run_goes_on(stream: bool) -> None:
    model = ScriptedResponses([responses(CUSTOM), responses(DONE_MESSAGE)])
    agent = Agent(ResponsesModelClient(model), options=AgentOptions(stream=stream))
    session = agent.session()
    result = await session.run("Print 1.")

    assert result.output_text == "Done."
    assert result.tool_calls == (CUSTOM_CALL,)
    (answer,) = result.tool_results
    assert answer.error_type == "unknown_tool"
    assert "unknown tool 'code_exec'" in answer.output
    sent = list(model.requests[1].input)
    assert sent[1] == CUSTOM
    assert sent[2] == {"type": "custom_tool_call_output", "call_id": "call_1", "output": answer.output}
    assert len(sent) == 3


@pytest.mark.parametrize("stream", [False, True], ids=["blocking", "streamed"])
async def test_on_chat_an_unknown_custom_tool_is_answered_with_a_tool_message(stream: bool) -> None:
    model = FakeChatModel([chat_reply(tool_calls=[CUSTOM_CALL]), chat_reply("Done.")])
    agent = Agent(ChatModelClient(model), options=AgentOptions(stream=stream))
    result = await agent.run("Print 1.")

    assert result.output_text == "Done."
    (answer,) = result.tool_results
    assert answer.error_type == "unknown_tool"
    turn = result.new_items[1]
    # The memory item keeps the call's Chat shape, with no ``function`` beside its ``custom``.
    assert turn["tool_calls"] == [
        {"id": "call_1", "type": "custom", "custom": {"name": "code_exec", "input": "print(1)"}}
    ]
    call, output = model.requests[1].messages[-2:]
    assert call == AiMessage(tool_calls=[CUSTOM_CALL])
    assert output == ToolResultMessage("call_1", answer.output)
    assert encode_message(output) == {"role": "tool", "tool_call_id": "call_1", "content": answer.output}


@pytest.mark.parametrize("protocol", ["chat", "responses"])
async def test_a_registered_function_tool_refuses_a_custom_calls_free_form_input(protocol: str) -> None:
    model: Any
    if protocol == "chat":
        model = ChatModelClient(FakeChatModel([chat_reply(tool_calls=[CUSTOM_CALL]), chat_reply("Done.")]))
    else:
        model = ResponsesModelClient(ScriptedResponses([responses(CUSTOM), responses(DONE_MESSAGE)]))
    result = await Agent(model, tools=[code_exec]).run("Print 1.")

    assert result.output_text == "Done."
    (answer,) = result.tool_results
    assert answer.error_type == "invalid_arguments"
    assert "code_exec is a function tool: call it with JSON arguments" in answer.output


@pytest.mark.parametrize("protocol", ["chat", "responses"])
async def test_a_custom_call_whose_input_happens_to_be_json_does_not_run_a_function_tool(
    protocol: str,
) -> None:
    ran: list[str] = []

    @tool
    def lookup(q: str) -> str:
        """Look something up."""
        ran.append(q)
        return q

    call = ToolCall("call_1", "lookup", '{"q": "x"}', kind="custom")
    model: Any
    if protocol == "chat":
        model = ChatModelClient(FakeChatModel([chat_reply(tool_calls=[call]), chat_reply("Done.")]))
    else:
        item = {"type": "custom_tool_call", "call_id": "call_1", "name": "lookup", "input": '{"q": "x"}'}
        model = ResponsesModelClient(ScriptedResponses([responses(item), responses(DONE_MESSAGE)]))
    result = await Agent(model, tools=[lookup]).run("Look x up.")
    assert ran == []
    assert result.tool_results[0].error_type == "invalid_arguments"


async def test_a_responses_conversation_with_a_custom_call_is_stored_and_goes_on() -> None:
    model = ScriptedResponses([responses(CUSTOM), responses(DONE_MESSAGE), responses(DONE_MESSAGE)])
    agent = Agent(ResponsesModelClient(model))
    session = agent.session()
    await session.run("Print 1.")
    stored = load_items(dump_items(session.items))
    assert stored == list(session.items)

    await agent.session(InMemoryMemory(stored)).run("Again.")
    assert list(model.requests[2].input[:-1]) == [*model.requests[1].input, DONE_MESSAGE]


@pytest.mark.parametrize("stored", [False, True], ids=["in memory", "stored as JSON"])
async def test_a_chat_conversation_goes_on_over_responses_without_chat_only_fields(stored: bool) -> None:
    weather = ToolCall(
        "call_w", "get_weather", '{"city":"Paris"}', provider_fields={"extra_content": SIGNATURE}
    )
    turn = AiMessage(
        tool_calls=[weather, CUSTOM_CALL],
        reasoning="thinking",
        reasoning_field="reasoning",
        provider_fields={"reasoning_details": DETAILS},
    )
    chat = FakeChatModel([ChatResponse(turn), chat_reply("Sunny.")])
    session = Agent(ChatModelClient(chat), tools=[get_weather]).session()
    await session.run("Weather in Paris?")
    items = load_items(dump_items(session.items)) if stored else list(session.items)
    assert items[1]["reasoning_details"] == DETAILS  # what the Chat path sends back, kept

    model = ScriptedResponses([responses(DONE_MESSAGE)])
    await Agent(ResponsesModelClient(model), tools=[get_weather]).session(InMemoryMemory(items)).run("More?")
    sent = list(model.requests[0].input)
    assert sent[1:5] == [
        {
            "type": "function_call",
            "call_id": "call_w",
            "name": "get_weather",
            "arguments": '{"city":"Paris"}',
        },
        {"type": "custom_tool_call", "call_id": "call_1", "name": "code_exec", "input": "print(1)"},
        {"type": "function_call_output", "call_id": "call_w", "output": "sunny in Paris"},
        {"type": "custom_tool_call_output", "call_id": "call_1", "output": session.items[3]["output"]},
    ]
    assert sent[5]["role"] == "assistant"
    for item in sent:
        assert not {"reasoning_details", "extra_content", "reasoning", "tool_calls"} & set(item)


def test_message_values_with_custom_calls_round_trip_through_stored_items() -> None:
    items = [AiMessage("Running it.", [CUSTOM_CALL]), ToolResultMessage("call_1", "1")]
    expected = [
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Running it."}]},
        {"type": "custom_tool_call", "call_id": "call_1", "name": "code_exec", "input": "print(1)"},
        {"type": "custom_tool_call_output", "call_id": "call_1", "output": "1"},
    ]
    assert to_responses_input(items) == expected
    assert to_responses_input(load_items(dump_items(items))) == expected
