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

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from agentflow.providers.openai.responses_model import OpenAIResponsesModel

from .floor import FloorClient
from .harness import Config, Contenders, Measurement, Target, compare
from .sdk import MISSING, open_sdk

__all__ = ["contenders", "measure"]

API_KEY = "sk-bench"
MODEL = "bench-model"
PROMPT = "Tell a long story."
WHOLE_BODY = "whole body"


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

        async def floor_stream() -> None:
            assert await floor.read_stream("/responses", body) > deltas

        async def whole_body() -> None:
            assert await floor.read_whole_stream("/responses", body) > deltas

        async def agentflow_stream() -> None:
            async with model.create_stream(PROMPT) as stream:
                async for _ in stream:
                    pass
            assert len(stream.response.output_text) == 5 * deltas

        found: Contenders = [("floor", floor_stream), ("agentflow", agentflow_stream)]
        if sdk.client is not None:
            client = sdk.client

            async def sdk_stream() -> None:
                events = await client.responses.create(model=MODEL, input=PROMPT, stream=True)
                count = 0
                async for _ in events:
                    count += 1
                assert count > deltas

            found.append(("openai SDK", sdk_stream))
        found.append((WHOLE_BODY, whole_body))
        yield found


async def measure(base_url: str, config: Config) -> Measurement:
    """CPU per streamed text delta of each contender, in µs."""
    deltas = config.stream_deltas
    result = Measurement(
        key="responses_stream",
        title=f"Responses stream, client CPU per delta ({deltas:,} deltas)",
        unit="µs",
        targets=[Target("agentflow", 1.0, relative_to="floor")],
    )
    async with contenders(base_url, config) as found:
        result.figures = await compare(found, times=1, rounds=config.stream_rounds, scale=1e6 / deltas)
    for figure in result.figures:
        if figure.name == WHOLE_BODY:
            figure.note = "reads the whole body, then splits it: not incremental; for scale only"
    if result.figure("openai SDK") is None:
        result.notes.append(MISSING)
    result.notes.append(f"one stream per round, median of {config.stream_rounds} rounds")
    return result
