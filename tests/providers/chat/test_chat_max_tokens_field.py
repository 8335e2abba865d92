"""``OpenAIChatModel(max_tokens_field=…)``: the one wire field that carries the output token limit, for the
servers that read only ``max_tokens`` (Ollama, LM Studio, llama-cpp-python ignore ``max_completion_tokens``;
older vLLM rejects it). Applied where the body is encoded, so blocking calls and streams alike honour it."""

from __future__ import annotations

from typing import Any

import pytest
from chat_local_server import LocalServer, json_reply, sse_body, sse_reply

from agentflow import UserMessage
from agentflow.model.request import ChatParameters, ChatRequest
from agentflow.providers.openai.chat_codec import encode_parameters
from agentflow.providers.openai.chat_model import OpenAIChatModel

OK = {"choices": [{"index": 0, "message": {"content": "ok"}, "finish_reason": "stop"}]}
ANSWER = {"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": "stop"}]}
HI = [UserMessage("hi")]


def limits(body: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in body.items() if "tokens" in key}


async def blocking_body(server: LocalServer, params: ChatParameters, **options: Any) -> dict[str, Any]:
    server.add(json_reply(OK))
    async with OpenAIChatModel(base_url=server.base_url, model="m", **options) as model:
        await model.chat(ChatRequest(HI, params))
    return limits(server.requests[-1].json())


async def test_max_completion_tokens_goes_out_as_max_tokens(server: LocalServer) -> None:
    body = await blocking_body(
        server, ChatParameters(max_completion_tokens=64), max_tokens_field="max_tokens"
    )
    assert body == {"max_tokens": 64}


async def test_max_tokens_goes_out_as_max_completion_tokens(server: LocalServer) -> None:
    body = await blocking_body(
        server, ChatParameters(max_tokens=64), max_tokens_field="max_completion_tokens"
    )
    assert body == {"max_completion_tokens": 64}


async def test_with_both_limits_set_the_smaller_is_sent(server: LocalServer) -> None:
    # A model default and a request's limit: both are upper bounds, the tighter one honours both.
    assert await blocking_body(
        server, ChatParameters(max_completion_tokens=64), max_tokens_field="max_tokens", max_tokens=32
    ) == {"max_tokens": 32}
    assert await blocking_body(
        server, ChatParameters(max_completion_tokens=16), max_tokens_field="max_tokens", max_tokens=32
    ) == {"max_tokens": 16}


async def test_without_a_field_each_limit_keeps_its_own_name(server: LocalServer) -> None:
    body = await blocking_body(server, ChatParameters(max_completion_tokens=64), max_tokens=32)
    assert body == {"max_tokens": 32, "max_completion_tokens": 64}


async def test_a_call_override_is_sent_under_the_field(server: LocalServer) -> None:
    server.add(json_reply(OK))
    async with OpenAIChatModel(base_url=server.base_url, model="m", max_tokens_field="max_tokens") as model:
        await model.chat(HI, max_completion_tokens=8)
    assert limits(server.requests[-1].json()) == {"max_tokens": 8}


async def test_a_stream_sends_the_limit_under_the_field(server: LocalServer) -> None:
    server.add(sse_reply([sse_body(ANSWER)]))
    async with OpenAIChatModel(
        base_url=server.base_url, model="m", max_tokens_field="max_tokens", max_completion_tokens=50
    ) as model:
        await model.stream(HI).collect()
    assert limits(server.requests[-1].json()) == {"max_tokens": 50}


async def test_no_limit_sends_no_field(server: LocalServer) -> None:
    assert await blocking_body(server, ChatParameters(), max_tokens_field="max_tokens") == {}


def test_the_codec_takes_the_field() -> None:
    params = ChatParameters(temperature=0.5, max_completion_tokens=10)
    assert encode_parameters(params, max_tokens_field="max_tokens") == {"temperature": 0.5, "max_tokens": 10}
    with pytest.raises(ValueError, match="max_tokens_field"):
        encode_parameters(params, max_tokens_field="max_output_tokens")  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["max_output_tokens", "", 3])
def test_an_unknown_field_is_refused_at_construction(value: Any) -> None:
    with pytest.raises(ValueError, match="max_tokens_field must be 'max_tokens' or 'max_completion_tokens'"):
        OpenAIChatModel(model="m", max_tokens_field=value)


def test_the_field_is_readable() -> None:
    assert OpenAIChatModel(model="m").max_tokens_field is None
    assert OpenAIChatModel(model="m", max_tokens_field="max_tokens").max_tokens_field == "max_tokens"
