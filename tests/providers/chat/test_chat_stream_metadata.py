"""Stream metadata (``id``, ``model``, ``created``): taken from the first chunk, with the values it leaves
empty filled from the next ones — Azure opens its streams with a ``prompt_filter_results`` chunk whose id
and model are ``""`` and created ``0``."""

from __future__ import annotations

from typing import Any

import orjson
from chat_local_server import LocalServer, sse_body, sse_reply

from agentflow import UserMessage
from agentflow.http.retry import RetryPolicy
from agentflow.http.sse import SseEvent
from agentflow.model.response import ChatResponse
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.chat_stream import ChatStreamDecoder

FILTERS = {"hate": {"filtered": False, "severity": "safe"}}
REAL = {"id": "chatcmpl-8V1mz", "object": "chat.completion.chunk", "created": 1702405737, "model": "gpt-4"}


def chunk(content: str | None, finish: str | None = None, **meta: Any) -> dict[str, Any]:
    delta = {} if content is None else {"content": content}
    return {**meta, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


# The shape of an Azure OpenAI stream (AbanteAI/mentat#429, sashabaranov/go-openai#444).
AZURE = (
    {
        "choices": [],
        "created": 0,
        "id": "",
        "model": "",
        "object": "",
        "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": FILTERS}],
    },
    {**REAL, "choices": [{"index": 0, "finish_reason": None, "delta": {"role": "assistant"}}]},
    chunk("Hello", **REAL),
    chunk(None, "stop", **REAL),
)


def decode(*payloads: dict[str, Any]) -> ChatResponse:
    decoder = ChatStreamDecoder()
    for payload in payloads:
        decoder.feed(SseEvent(orjson.dumps(payload).decode()))
    decoder.feed(SseEvent("[DONE]"))
    return decoder.response()


def test_empty_metadata_of_the_first_chunk_is_filled_from_the_next() -> None:
    response = decode(*AZURE)
    assert response.metadata == {"id": "chatcmpl-8V1mz", "model": "gpt-4", "created": 1702405737}
    assert response.message.text == "Hello"


def test_metadata_set_by_the_first_chunk_is_kept() -> None:
    first = {"id": "a", "model": "m1", "created": 1}
    response = decode(chunk("x", **first), chunk("y", "stop", id="b", model="m2", created=2))
    assert response.metadata == first


def test_values_still_empty_at_the_first_chunk_with_choices_stay_empty() -> None:
    # Looked for up to the first chunk with choices only: a server that never sends a value costs no lookup
    # per chunk.
    response = decode(chunk("x", id="a", created=0), chunk("y", "stop", id="a", created=5))
    assert response.metadata == {"id": "a", "created": 0}


async def test_azure_stream_metadata_over_http(server: LocalServer) -> None:
    server.add(sse_reply([sse_body(*AZURE)]))
    async with OpenAIChatModel(
        base_url=f"{server.base_url}/openai/deployments/gpt-4?api-version=2024-10-21",
        model="gpt-4",
        retry=RetryPolicy.none(),
    ) as model:
        response = await model.stream([UserMessage("hi")]).collect()
    assert response.metadata == {"id": "chatcmpl-8V1mz", "model": "gpt-4", "created": 1702405737}
