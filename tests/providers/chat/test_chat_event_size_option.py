"""``OpenAIChatModel(max_event_bytes=…)``: the cap on one server-sent event (8 MiB by default) is the model's
to set, for servers that send larger ones (a whole tool argument in one event)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from chat_local_server import LocalServer, SleepRecorder, collect, sse_body, sse_reply

from agentflow import ProtocolError
from agentflow.http.retry import RetryPolicy
from agentflow.http.sse import DEFAULT_MAX_EVENT_BYTES
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.client import OpenAIHttpClient

BIG = {"choices": [{"index": 0, "delta": {"content": "x" * 4096}, "finish_reason": "stop"}]}


async def stream_big(server: LocalServer, sleeps: SleepRecorder, **options: Any) -> Any:
    server.add(sse_reply([sse_body(BIG)]))
    async with OpenAIChatModel(
        base_url=server.base_url, model="m", retry=RetryPolicy.none(), sleep=sleeps, **options
    ) as model:
        return await collect(model)


async def test_an_event_over_the_models_cap_is_a_protocol_error(
    server: LocalServer, sleeps: SleepRecorder
) -> None:
    _, error = await stream_big(server, sleeps, max_event_bytes=1024)
    assert isinstance(error, ProtocolError)
    assert "larger than 1024 bytes" in error.message


async def test_an_event_within_the_models_cap_is_read(server: LocalServer, sleeps: SleepRecorder) -> None:
    events, error = await stream_big(server, sleeps, max_event_bytes=len(orjson.dumps(BIG)) + 16)
    assert error is None
    assert events[-1].response.message.text == "x" * 4096


def test_the_default_cap_is_8_mib() -> None:
    assert OpenAIChatModel(model="m").client.max_event_bytes == DEFAULT_MAX_EVENT_BYTES == 8 * 1024 * 1024
    assert OpenAIChatModel(model="m", max_event_bytes=16 << 20).client.max_event_bytes == 16 << 20


@pytest.mark.parametrize(
    ("value", "error"),
    [(0, ValueError), (-1, ValueError), ("9", TypeError), (True, TypeError), (1.5, TypeError)],
)
def test_a_wrong_cap_is_refused_at_construction(value: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="max_event_bytes"):
        OpenAIChatModel(model="m", max_event_bytes=value)
    with pytest.raises(error, match="max_event_bytes"):
        OpenAIHttpClient(max_event_bytes=value)


def test_the_responses_model_takes_the_event_size_cap_too() -> None:
    from agentflow import OpenAIResponsesModel

    with pytest.raises(ValueError, match="max_event_bytes must be positive"):
        OpenAIResponsesModel(base_url="http://127.0.0.1:9/v1", model="m", max_event_bytes=0)
    OpenAIResponsesModel(base_url="http://127.0.0.1:9/v1", model="m", max_event_bytes=1024)
