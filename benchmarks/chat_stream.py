"""Measurement 2: client CPU to consume a long Chat Completions stream, in µs per delta.

The server streams the benchmark reply: ``--bench-deltas`` text deltas (10,000 by default), one SSE event
each, then the finish and usage chunks and ``[DONE]``. Contenders consume it to the end:

- floor: ``FloorClient.read_stream`` (line by line, ``orjson.loads`` of every ``data:`` line);
- agentflow: ``async with model.stream(...)``, every typed event iterated, the aggregated
  ``ChatResponse`` read at the end;
- openai SDK: ``chat.completions.create(stream=True)`` iterated to the end (it builds one pydantic chunk
  per delta and aggregates nothing);
- whole body (scale only): ``FloorClient.read_whole_stream``, not incremental.

Target (issue 2 §6): agentflow no more than the floor.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from typing import Any

from agentflow.model.messages import UserMessage
from agentflow.providers.openai.chat_model import OpenAIChatModel

from .floor import FloorClient
from .harness import Config, Contenders, Measurement
from .long_stream import measure_stream, stream_contenders
from .sdk import open_sdk

__all__ = ["contenders", "measure"]

API_KEY = "sk-bench"
MODEL = "bench-model"
PROMPT = "Tell a long story."


@asynccontextmanager
async def contenders(base_url: str, config: Config) -> AsyncIterator[Contenders]:
    """The contenders, each operation one whole stream, with their clients open."""
    deltas = config.stream_deltas
    body = {
        "model": MODEL,
        "messages": [{"role": "user", "content": PROMPT}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    async with (
        FloorClient(base_url, API_KEY) as floor,
        OpenAIChatModel(base_url=base_url, api_key=API_KEY, model=MODEL) as model,
        open_sdk(base_url, API_KEY) as sdk,
    ):

        async def agentflow_stream() -> None:
            async with model.stream([UserMessage(PROMPT)]) as stream:
                async for _ in stream:
                    pass
            assert len(stream.response.message.text or "") == 5 * deltas

        yield stream_contenders(floor, "/chat/completions", body, deltas, agentflow_stream, sdk, _sdk_stream)


def _sdk_stream(client: Any) -> Awaitable[AsyncIterable[Any]]:
    events: Awaitable[AsyncIterable[Any]] = client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": PROMPT}],
        stream=True,
        stream_options={"include_usage": True},
    )
    return events


async def measure(base_url: str, config: Config) -> Measurement:
    """CPU per streamed delta of each contender, in µs."""
    title = "Chat stream, client CPU per delta"
    return await measure_stream("chat_stream", title, contenders(base_url, config), config)
