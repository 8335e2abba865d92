"""``OpenAIResponsesModel`` as a ``ChatModel``: unified requests mapped onto ``/responses``, answers as
``ChatResponse``, so either model can serve an agent."""

from __future__ import annotations

import pytest
from responses_support import LocalServer, Reply, kinds

from agentflow.model.errors import BadRequestError
from agentflow.model.events import ModelCompleted
from agentflow.model.messages import AiMessage, SystemMessage, ToolCall, ToolResultMessage, UserMessage
from agentflow.model.protocol import ChatModel
from agentflow.model.request import ChatParameters, ChatRequest
from agentflow.model.response import ChatResponse, FinishReason, TokenUsage
from agentflow.model.tools import ToolChoice, ToolSpec
from agentflow.providers.openai.responses_codec import request_from_chat
from agentflow.providers.openai.responses_model import OpenAIResponsesModel

TOOL = ToolSpec("multiply", "Multiply two numbers.", {"type": "object", "properties": {}}, strict=False)


def test_it_is_a_chat_model() -> None:
    assert isinstance(OpenAIResponsesModel(model="m"), ChatModel)


async def test_chat_maps_the_unified_request(server: LocalServer, model: OpenAIResponsesModel) -> None:
    server.queue(Reply.recording("responses_function_call.json"))
    request = ChatRequest(
        [
            SystemMessage("Use tools."),
            UserMessage("What is 1231 * 2331?"),
            AiMessage(tool_calls=[ToolCall("call_0", "multiply", '{"a":1,"b":2}')]),
            ToolResultMessage("call_0", "2"),
        ],
        ChatParameters(
            temperature=0.2,
            top_p=0.9,
            max_completion_tokens=300,
            max_tokens=100,
            tools=[TOOL],
            tool_choice=ToolChoice.function("multiply"),
            parallel_tool_calls=False,
            reasoning_effort="low",
            user="u1",
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": {"type": "object"}, "strict": True},
            },
            custom={"store": False, "service_tier": "flex", "temperature": 9},
        ),
    )
    response = await model.chat(request)
    body = server.body
    assert body == {
        "store": False,
        "service_tier": "flex",
        "temperature": 0.2,
        "model": "gpt-test",
        "input": [
            {"type": "message", "role": "system", "content": [{"type": "input_text", "text": "Use tools."}]},
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "What is 1231 * 2331?"}],
            },
            {"type": "function_call", "call_id": "call_0", "name": "multiply", "arguments": '{"a":1,"b":2}'},
            {"type": "function_call_output", "call_id": "call_0", "output": "2"},
        ],
        "tools": [
            {
                "type": "function",
                "name": "multiply",
                "description": "Multiply two numbers.",
                "parameters": {"type": "object", "properties": {}},
                "strict": False,
            }
        ],
        "tool_choice": {"type": "function", "name": "multiply"},
        "parallel_tool_calls": False,
        "top_p": 0.9,
        "max_output_tokens": 300,
        "reasoning": {"effort": "low"},
        "user": "u1",
        "text": {
            "format": {"type": "json_schema", "name": "answer", "schema": {"type": "object"}, "strict": True}
        },
    }
    assert isinstance(response, ChatResponse)
    assert response.message.tool_calls == (
        ToolCall("call_nJmCK7SJe3ajdYYplIbH0KgL", "multiply", '{"a":1231,"b":2331}'),
    )
    assert response.finish_reason is FinishReason.TOOL_EXECUTION
    assert response.usage == TokenUsage(58, 23, 81)
    assert response.metadata["id"] == "resp_05c01d5dceb461c50169fab1bb5ec08196b7e38f8207aae2dd"
    assert response.raw["output"][0]["type"] == "function_call"


async def test_chat_overrides_are_chat_parameters(server: LocalServer, model: OpenAIResponsesModel) -> None:
    server.queue(Reply.recording("responses_message.json"))
    response = await model.chat([UserMessage("ping")], max_tokens=20, model="other")
    assert server.body["max_output_tokens"] == 20
    assert server.body["model"] == "other"
    assert response.text == "pong"
    assert response.finish_reason is FinishReason.STOP
    with pytest.raises(TypeError, match="max_output_tokens"):
        await model.chat([UserMessage("ping")], max_output_tokens=20)


def test_chat_only_parameters_without_an_equivalent_are_refused() -> None:
    with pytest.raises(ValueError, match="stop sequences"):
        request_from_chat(ChatRequest([UserMessage("x")], ChatParameters(stop=["\n"])))
    with pytest.raises(ValueError, match="seed"):
        request_from_chat(ChatRequest([UserMessage("x")], ChatParameters(seed=1)))


def test_json_object_format_passes_through() -> None:
    params = ChatParameters(model="m", response_format={"type": "json_object"})
    assert request_from_chat(ChatRequest([UserMessage("x")], params)).text == {
        "format": {"type": "json_object"}
    }


async def test_stream_ends_with_a_chat_response(server: LocalServer, model: OpenAIResponsesModel) -> None:
    server.queue(Reply.recording("responses_stream_deepseek_reasoning_text.json", chunk_size=5))
    async with model.stream([UserMessage("What is the capital of France?")]) as stream:
        events = [event async for event in stream]
    assert kinds(events) == ["reasoning_delta"] * 7 + ["text_delta"] * 7 + [
        "usage_reported",
        "model_completed",
    ]
    last = events[-1]
    assert isinstance(last, ModelCompleted)
    chat = stream.response
    assert chat is last.response
    assert isinstance(chat, ChatResponse)
    assert chat.message.text == "The capital of France is Paris."
    assert chat.message.reasoning == "We need answer capital of France."
    assert chat.usage == TokenUsage(90, 15, 105, reasoning_tokens=7)
    assert chat.finish_reason is FinishReason.STOP
    assert server.body["stream"] is True


async def test_chat_errors_keep_their_type(server: LocalServer, model: OpenAIResponsesModel) -> None:
    server.queue(Reply.recording("error_responses_400_stream_request.json"))
    with pytest.raises(BadRequestError) as caught:
        await model.stream([UserMessage("x")], temperature=-1).collect()
    assert caught.value.param == "temperature"
