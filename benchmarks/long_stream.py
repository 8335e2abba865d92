"""What the two long-stream measurements (Chat Completions and Responses) share.

Both consume the benchmark server's long stream (``--bench-deltas`` text deltas) with the same four
contenders — the raw floor, agentflow, the ``openai`` SDK and the whole-body reference — and report client
CPU per delta in µs against the same target (agentflow no more than the floor). Only the endpoint, the
request body and the agentflow / SDK operations differ; ``chat_stream`` and ``responses_stream`` supply
those and call ``stream_contenders`` and ``measure_stream`` from here.

This module opens no clients and knows nothing about agentflow.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from .floor import FloorClient
from .harness import Config, Contenders, Measurement, Operation, Target, compare
from .sdk import MISSING, SdkHandle

__all__ = ["WHOLE_BODY", "SdkStream", "measure_stream", "stream_contenders"]

WHOLE_BODY = "whole body"


SdkStream = Callable[[Any], Awaitable[AsyncIterable[Any]]]
"""Opens one stream on an ``AsyncOpenAI`` client, e.g. ``client.responses.create(stream=True)``."""


def stream_contenders(
    floor: FloorClient,
    path: str,
    body: dict[str, Any],
    deltas: int,
    agentflow: Operation,
    sdk: SdkHandle,
    sdk_stream: SdkStream,
) -> Contenders:
    """The contenders in table order: floor, agentflow, the SDK (when installed), the whole-body reference.

    Each operation consumes one whole stream of more than ``deltas`` events; the SDK's is iterated to its
    end, one pydantic event per SSE event.
    """

    async def floor_stream() -> None:
        assert await floor.read_stream(path, body) > deltas

    async def whole_body() -> None:
        assert await floor.read_whole_stream(path, body) > deltas

    found: Contenders = [("floor", floor_stream), ("agentflow", agentflow)]
    if sdk.client is not None:
        client = sdk.client

        async def sdk_consume() -> None:
            count = 0
            async for _ in await sdk_stream(client):
                count += 1
            assert count > deltas

        found.append(("openai SDK", sdk_consume))
    found.append((WHOLE_BODY, whole_body))
    return found


async def measure_stream(
    key: str, title: str, contenders: AbstractAsyncContextManager[Contenders], config: Config
) -> Measurement:
    """CPU per streamed delta of each contender, in µs, median of ``config.stream_rounds`` rounds."""
    deltas = config.stream_deltas
    result = Measurement(
        key=key,
        title=f"{title} ({deltas:,} deltas)",
        unit="µs",
        targets=[Target("agentflow", 1.0, relative_to="floor")],
    )
    async with contenders as found:
        result.figures = await compare(found, times=1, rounds=config.stream_rounds, scale=1e6 / deltas)
    for figure in result.figures:
        if figure.name == WHOLE_BODY:
            figure.note = "reads the whole body, then splits it: not incremental; for scale only"
    if result.figure("openai SDK") is None:
        result.notes.append(MISSING)
    result.notes.append(f"one stream per round, median of {config.stream_rounds} rounds")
    return result
