"""``extra_headers=`` on a model call: HTTP headers for that call only (a request id, a trace header, a
gateway's per-user key), after the model's own ``custom_headers`` (so they may replace one), on every
attempt of the call, on both protocols, blocking and streamed; the next call is sent without them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from agentflow import UserMessage
from agentflow.http.retry import RetryPolicy
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.testing import Fault, Reply, ScriptedServer

HI = [UserMessage("hi")]
CALL = {"X-Request-Id": "req-42", "X-Tenant": "acme"}

Call = Callable[[Any, dict[str, str]], Awaitable[object]]
CALLS: dict[str, tuple[type[Any], Call]] = {
    "chat": (OpenAIChatModel, lambda m, h: m.chat(HI, extra_headers=h)),
    "chat-stream": (OpenAIChatModel, lambda m, h: m.stream(HI, extra_headers=h).collect()),
    "responses-chat": (OpenAIResponsesModel, lambda m, h: m.chat(HI, extra_headers=h)),
    "responses-stream": (OpenAIResponsesModel, lambda m, h: m.stream(HI, extra_headers=h).collect()),
    "responses-create": (OpenAIResponsesModel, lambda m, h: m.create("hi", extra_headers=h)),
    "responses-create-stream": (
        OpenAIResponsesModel,
        lambda m, h: m.create_stream("hi", extra_headers=h).collect(),
    ),
}


@pytest.mark.parametrize("name", list(CALLS))
async def test_a_call_s_headers_go_with_every_attempt_of_that_call_only(name: str) -> None:
    kind, call = CALLS[name]
    turns = [Fault.status(503, headers={"retry-after-ms": "0"}), Reply(text="a"), Reply(text="b")]
    async with ScriptedServer(turns) as server:
        model = kind(
            base_url=server.base_url,
            api_key="sk-test",
            model="m",
            custom_headers={"X-Tenant": "default", "X-App": "shop"},
            retry=RetryPolicy(max_retries=1, jitter=0),
        )
        await call(model, CALL)
        await call(model, {})
        await model.aclose()
    first, retried, next_call = (r.headers for r in server.requests)
    for sent in (first, retried):
        assert (sent["x-request-id"], sent["x-tenant"], sent["x-app"]) == ("req-42", "acme", "shop")
    assert "x-request-id" not in next_call
    assert (next_call["x-tenant"], next_call["authorization"]) == ("default", "Bearer sk-test")


async def test_bad_headers_are_refused_before_anything_is_sent() -> None:
    model = OpenAIChatModel(base_url="http://127.0.0.1:9/v1", api_key="sk-test", model="m")
    with pytest.raises(TypeError, match="per-call header 'X-Request-Id' must have a str value, got int"):
        await model.chat(HI, extra_headers={"X-Request-Id": 42})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="per-call headers must be a mapping of str to str, got list"):
        model.stream(HI, extra_headers=[("X-A", "1")])  # type: ignore[arg-type]
