"""Credentials sent in a call's own headers are masked in its errors, as the client's own are.

A server may echo the key it refused (``Invalid API key provided: …``); a key passed per call
(``extra_headers=`` on ``chat``/``stream``, a run's ``ModelSettings(extra_headers=...)``) must then show
masked in the error's message and body, in a retry's reason and in the log, as one passed to the model does.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from agentflow import ModelError, ModelSettings, UserMessage
from agentflow.agent.agent import Agent
from agentflow.http.retry import RetryPolicy
from agentflow.model.events import ModelRetry
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.testing import Fault, ScriptedServer

HI = [UserMessage("hi")]
KEY = "tenant-key-0123456789abcdef"
HEADERS = {"x-api-key": KEY}
ECHO = f"Invalid API key provided: {KEY}"

Call = Callable[[Any], Awaitable[object]]
CALLS: dict[str, tuple[type[Any], Call]] = {
    "chat": (OpenAIChatModel, lambda m: m.chat(HI, extra_headers=HEADERS)),
    "chat-stream": (OpenAIChatModel, lambda m: m.stream(HI, extra_headers=HEADERS).collect()),
    "responses-chat": (OpenAIResponsesModel, lambda m: m.chat(HI, extra_headers=HEADERS)),
    "responses-stream": (OpenAIResponsesModel, lambda m: m.stream(HI, extra_headers=HEADERS).collect()),
    "agent-run": (
        OpenAIChatModel,
        lambda m: Agent(m).run("x", settings=ModelSettings(extra_headers=HEADERS)),
    ),
    "responses-agent-run": (
        OpenAIResponsesModel,
        lambda m: Agent(m).run("x", settings=ModelSettings(extra_headers=HEADERS)),
    ),
}


def assert_masked(error: ModelError) -> None:
    assert KEY not in str(error)
    assert KEY not in (error.body or "")
    assert "ten***cdef" in str(error)


@pytest.mark.parametrize("name", list(CALLS))
async def test_a_per_call_key_echoed_by_the_server_is_masked(name: str) -> None:
    kind, call = CALLS[name]
    async with ScriptedServer([Fault.status(401, message=ECHO)]) as server:
        model = kind(base_url=server.base_url, api_key="sk-client-aaaaaaaaaaaa", model="m")
        with pytest.raises(ModelError) as caught:
            await call(model)
        await model.aclose()
    assert server.requests[0].headers["x-api-key"] == KEY  # it was sent
    assert_masked(caught.value)


async def test_a_retry_s_reason_and_log_mask_a_per_call_key(caplog: pytest.LogCaptureFixture) -> None:
    turns = [
        Fault.status(503, message=ECHO, headers={"retry-after-ms": "0"}),
        Fault.status(401, message=ECHO),
    ]
    async with ScriptedServer(turns) as server:
        model = OpenAIChatModel(
            base_url=server.base_url, api_key="sk-client-aaaaaaaaaaaa", model="m", retry=RetryPolicy(jitter=0)
        )
        retries: list[ModelRetry] = []

        async def consume() -> None:
            async for event in model.stream(HI, extra_headers=HEADERS):
                if isinstance(event, ModelRetry):
                    retries.append(event)

        with caplog.at_level(logging.INFO), pytest.raises(ModelError) as caught:
            await consume()
        await model.aclose()
    assert_masked(caught.value)
    [retry] = retries
    assert "ten***cdef" in retry.reason
    assert KEY not in retry.reason
    assert KEY not in caplog.text


async def test_a_call_without_a_key_of_its_own_masks_the_client_s_keys_only() -> None:
    echo = "bad headers: sk-client-aaaaaaaaaaaa, x-trace trace-value-123456789"
    async with ScriptedServer([Fault.status(400, message=echo)]) as server:
        model = OpenAIChatModel(base_url=server.base_url, api_key="sk-client-aaaaaaaaaaaa", model="m")
        with pytest.raises(ModelError) as caught:
            await model.chat(HI, extra_headers={"x-trace": "trace-value-123456789"})
        await model.aclose()
    assert "sk-client-aaaaaaaaaaaa" not in str(caught.value)
    assert "trace-value-123456789" in str(caught.value)  # not named like a credential: no secret
