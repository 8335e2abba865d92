"""``stream_options`` can be left out: ``OpenAIChatModel(stream_usage=False)`` and a custom
``stream_options: None`` send none, for the servers that reject the field (Mistral 422, Databricks and
Bedrock 400, older Azure API versions 400)."""

from __future__ import annotations

from typing import Any

import pytest
from chat_local_server import LocalServer, json_reply, sse_body, sse_reply

from agentflow import UserMessage
from agentflow.model.request import ChatParameters, ChatRequest
from agentflow.providers.openai.chat_codec import encode_chat_body
from agentflow.providers.openai.chat_model import OpenAIChatModel

ANSWER = {"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": "stop"}]}
OK = {"choices": [{"index": 0, "message": {"content": "ok"}, "finish_reason": "stop"}]}
HI = [UserMessage("hi")]


async def streamed_body(
    server: LocalServer, request: ChatRequest | None = None, **options: Any
) -> dict[str, Any]:
    server.add(sse_reply([sse_body(ANSWER)]))
    async with OpenAIChatModel(base_url=server.base_url, model="m", **options) as model:
        response = await model.stream(request or HI).collect()
    assert response.message.text == "x"
    body: dict[str, Any] = server.requests[-1].json()
    return body


async def test_a_stream_asks_for_its_usage_by_default(server: LocalServer) -> None:
    body = await streamed_body(server)
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


async def test_stream_usage_false_sends_no_stream_options(server: LocalServer) -> None:
    body = await streamed_body(server, stream_usage=False)
    assert body["stream"] is True
    assert "stream_options" not in body


async def test_a_custom_stream_options_of_none_is_not_sent(server: LocalServer) -> None:
    body = await streamed_body(server, custom_parameters={"stream_options": None})
    assert "stream_options" not in body


async def test_a_request_can_drop_stream_options_the_model_would_send(server: LocalServer) -> None:
    request = ChatRequest(HI, ChatParameters(custom={"stream_options": None}))
    body = await streamed_body(server, request, custom_parameters={"stream_options": {"x": 1}})
    assert "stream_options" not in body


async def test_stream_usage_false_keeps_a_custom_stream_options_as_given(server: LocalServer) -> None:
    body = await streamed_body(
        server, stream_usage=False, custom_parameters={"stream_options": {"include_obfuscation": False}}
    )
    assert body["stream_options"] == {"include_obfuscation": False}


async def test_a_blocking_call_drops_a_custom_stream_options(server: LocalServer) -> None:
    # OpenAI rejects stream_options without a stream.
    server.add(json_reply(OK))
    async with OpenAIChatModel(
        base_url=server.base_url, model="m", custom_parameters={"stream_options": {"include_usage": True}}
    ) as model:
        await model.chat(HI)
    body = server.requests[-1].json()
    assert "stream_options" not in body
    assert "stream" not in body


def test_the_codec_takes_stream_usage() -> None:
    params = ChatParameters(model="m")
    assert "stream_options" not in encode_chat_body(HI, params, stream=True, stream_usage=False)
    assert encode_chat_body(HI, params, stream=True)["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("value", [1, "false", None])
def test_stream_usage_must_be_a_bool(value: Any) -> None:
    with pytest.raises(TypeError, match="stream_usage must be True or False"):
        OpenAIChatModel(model="m", stream_usage=value)


def test_stream_usage_is_readable() -> None:
    assert OpenAIChatModel(model="m").stream_usage is True
    assert OpenAIChatModel(model="m", stream_usage=False).stream_usage is False
