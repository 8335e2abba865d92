"""Measurement 1: client CPU per non-streaming Chat Completions call.

Contenders, one after the other on the same server (the benchmark reply: a short text with usage):

- floor: ``FloorClient.post_json`` (orjson body, aiohttp POST, ``orjson.loads`` of the answer);
- agentflow: ``await OpenAIChatModel.chat([UserMessage(...)])`` → a typed ``ChatResponse``;
- openai SDK: ``await AsyncOpenAI(base_url=…).chat.completions.create(...)`` (retries off).

Target (issue 2 §6): agentflow at most 1.5× the floor.
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
PROMPT = "Say hello."


@asynccontextmanager
async def contenders(base_url: str, config: Config) -> AsyncIterator[Contenders]:
    """The contenders, each operation one call, with their clients open."""
    body = {"model": MODEL, "messages": [{"role": "user", "content": PROMPT}]}
    async with (
        FloorClient(base_url, API_KEY) as floor,
        OpenAIChatModel(base_url=base_url, api_key=API_KEY, model=MODEL) as model,
        open_sdk(base_url, API_KEY) as sdk,
    ):

        async def floor_call() -> None:
            reply = await floor.post_json("/chat/completions", body)
            assert reply["choices"][0]["message"]["content"]

        async def agentflow_call() -> None:
            response = await model.chat([UserMessage(PROMPT)])
            assert response.message.text

        found: Contenders = [("floor", floor_call), ("agentflow", agentflow_call)]
        if sdk.client is not None:
            client = sdk.client

            async def sdk_call() -> None:
                completion = await client.chat.completions.create(
                    model=MODEL, messages=[{"role": "user", "content": PROMPT}]
                )
                assert completion.choices[0].message.content

            found.append(("openai SDK", sdk_call))
        yield found


async def measure(base_url: str, config: Config) -> Measurement:
    """CPU per call of each contender, in ms."""
    result = Measurement(
        key="chat_call",
        title="Chat call, client CPU per non-streaming call",
        unit="ms",
        targets=[Target("agentflow", 1.5, relative_to="floor")],
    )
    async with contenders(base_url, config) as found:
        warmup = max(3, config.calls // 10)
        result.figures = await compare(
            found, times=config.calls, rounds=config.rounds, scale=1e3, warmup=warmup
        )
    if result.figure("openai SDK") is None:
        result.notes.append(MISSING)
    result.notes.append(f"{config.calls} sequential calls per round, median of {config.rounds} rounds")
    return result
