"""Measurement 3: client CPU to consume a long Responses stream, in µs per text delta.

The server streams the benchmark reply on ``/v1/responses``: the lifecycle events around
``--bench-deltas`` ``response.output_text.delta`` events (10,000 by default). Contenders consume it to the
end:

- floor: ``FloorClient.read_stream`` (line by line, ``orjson.loads`` of every ``data:`` line);
- agentflow: ``async with OpenAIResponsesModel.create_stream(...)``, every typed event iterated, the
  aggregated ``ResponsesResponse`` read at the end;
- openai SDK: ``responses.create(stream=True)`` iterated to the end (one pydantic event per SSE event);
- whole body (scale only): ``FloorClient.read_whole_stream``, not incremental.

Target (issue 3): agentflow no more than the floor.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from typing import Any

from agentflow.providers.openai.responses_model import OpenAIResponsesModel

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
    body = {"model": MODEL, "input": PROMPT, "stream": True}
    async with (
        FloorClient(base_url, API_KEY) as floor,
        OpenAIResponsesModel(base_url=base_url, api_key=API_KEY, model=MODEL) as model,
        open_sdk(base_url, API_KEY) as sdk,
    ):

        async def agentflow_stream() -> None:
            async with model.create_stream(PROMPT) as stream:
                async for _ in stream:
                    pass
            assert len(stream.response.output_text) == 5 * deltas

        yield stream_contenders(floor, "/responses", body, deltas, agentflow_stream, sdk, _sdk_stream)


def _sdk_stream(client: Any) -> Awaitable[AsyncIterable[Any]]:
    events: Awaitable[AsyncIterable[Any]] = client.responses.create(model=MODEL, input=PROMPT, stream=True)
    return events


async def measure(base_url: str, config: Config) -> Measurement:
    """CPU per streamed text delta of each contender, in µs."""
    title = "Responses stream, client CPU per delta"
    return await measure_stream("responses_stream", title, contenders(base_url, config), config)
