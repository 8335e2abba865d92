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

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from agentflow.model.messages import UserMessage
from agentflow.providers.openai.chat_model import OpenAIChatModel

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

        async def floor_stream() -> None:
            assert await floor.read_stream("/chat/completions", body) > deltas

        async def whole_body() -> None:
            assert await floor.read_whole_stream("/chat/completions", body) > deltas

        async def agentflow_stream() -> None:
            async with model.stream([UserMessage(PROMPT)]) as stream:
                async for _ in stream:
                    pass
            assert len(stream.response.message.text or "") == 5 * deltas

        found: Contenders = [("floor", floor_stream), ("agentflow", agentflow_stream)]
        if sdk.client is not None:
            client = sdk.client

            async def sdk_stream() -> None:
                chunks = await client.chat.completions.create(
                    model=MODEL,
                    messages=[{"role": "user", "content": PROMPT}],
                    stream=True,
                    stream_options={"include_usage": True},
                )
                count = 0
                async for _ in chunks:
                    count += 1
                assert count > deltas

            found.append(("openai SDK", sdk_stream))
        found.append((WHOLE_BODY, whole_body))
        yield found


async def measure(base_url: str, config: Config) -> Measurement:
    """CPU per streamed delta of each contender, in µs."""
    deltas = config.stream_deltas
    result = Measurement(
        key="chat_stream",
        title=f"Chat stream, client CPU per delta ({deltas:,} deltas)",
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
