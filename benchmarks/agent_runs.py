"""Measurement 6: client CPU per agent run, with many runs at once.

Against ``benchmarks.agent_server`` (a tool call to ``add``, then a final text), each round starts
``agent_runs`` runs (100 by default) concurrently in one task group and waits for all; the figure is the
round's CPU divided by the number of runs. Every run is two Chat Completions calls and one tool call.

- floor: a hand-written ReAct loop on ``FloorClient`` (raw aiohttp + orjson, the tool called directly);
- agentflow: ``await Agent(OpenAIChatModel(...), tools=[add]).run(...)`` — memory, tool validation and
  execution, the run's events on its bus, the ``AgentResult``. ``add`` is a plain ``def``, which the tool
  executor runs in a worker thread; "agentflow, async tool" is the same run with ``async def add``;
- openai SDK: the same hand-written loop on ``AsyncOpenAI`` (the SDK has no agent loop of its own).

No target is set in the issues; the ratio to the floor is the framework's cost per run.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any

import anyio
import orjson

from agentflow.agent.agent import Agent
from agentflow.providers.openai.chat_model import OpenAIChatModel

from .agent_server import FINAL_TEXT, TOOL_NAME
from .floor import FloorClient
from .harness import Config, Contenders, Measurement, compare
from .sdk import MISSING, open_sdk

__all__ = ["contenders", "measure"]

ASYNC_TOOL = "agentflow, async tool"

API_KEY = "sk-bench"
MODEL = "bench-model"
PROMPT = "What is 2 + 3? Use the tool."
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": TOOL_NAME,
            "description": "Add two integers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
        },
    }
]


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first addend.
        b: the second addend.
    """
    return a + b


async def add_async(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first addend.
        b: the second addend.
    """
    return a + b


def concurrently(
    run: Callable[[], Coroutine[Any, Any, None]], count: int
) -> Callable[[], Coroutine[Any, Any, None]]:
    """An operation that runs ``count`` copies of ``run`` at once and waits for all of them."""

    async def batch() -> None:
        async with anyio.create_task_group() as group:
            for _ in range(count):
                group.start_soon(run)

    return batch


@asynccontextmanager
async def contenders(base_url: str, config: Config) -> AsyncIterator[Contenders]:
    """The contenders, each operation ``config.agent_runs`` concurrent runs, with their clients open."""
    runs = config.agent_runs
    async with (
        FloorClient(base_url, API_KEY) as floor,
        OpenAIChatModel(base_url=base_url, api_key=API_KEY, model=MODEL) as model,
        open_sdk(base_url, API_KEY) as sdk,
    ):
        agent = Agent(model, tools=[add])
        async_agent = Agent(model, tools=[add_async])

        async def floor_run() -> None:
            messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
            body = {"model": MODEL, "messages": messages, "tools": TOOLS}
            message = (await floor.post_json("/chat/completions", body))["choices"][0]["message"]
            messages.append(message)
            for call in message["tool_calls"]:
                value = add(**orjson.loads(call["function"]["arguments"]))
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": str(value)})
            final = (await floor.post_json("/chat/completions", body))["choices"][0]["message"]
            assert final["content"] == FINAL_TEXT

        async def agentflow_run() -> None:
            outcome = await agent.run(PROMPT)
            assert outcome.output_text == FINAL_TEXT, outcome

        async def agentflow_async_tool_run() -> None:
            outcome = await async_agent.run(PROMPT)
            assert outcome.output_text == FINAL_TEXT, outcome

        found: Contenders = [
            ("floor", concurrently(floor_run, runs)),
            ("agentflow", concurrently(agentflow_run, runs)),
            (ASYNC_TOOL, concurrently(agentflow_async_tool_run, runs)),
        ]
        if sdk.client is not None:
            client = sdk.client

            async def sdk_run() -> None:
                messages: list[Any] = [{"role": "user", "content": PROMPT}]
                reply = await client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
                message = reply.choices[0].message
                messages.append(message.model_dump(exclude_none=True))
                for call in message.tool_calls or ():
                    value = add(**orjson.loads(call.function.arguments))
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": str(value)})
                final = await client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
                assert final.choices[0].message.content == FINAL_TEXT

            found.append(("openai SDK", concurrently(sdk_run, runs)))
        yield found


async def measure(base_url: str, config: Config) -> Measurement:
    """CPU per run of each contender, in ms, ``config.agent_runs`` runs at a time."""
    runs = config.agent_runs
    result = Measurement(
        key="agent_runs",
        title=f"ReAct runs, client CPU per run ({runs} concurrent, 1 tool round trip each)",
        unit="ms",
    )
    async with contenders(base_url, config) as found:
        result.figures = await compare(found, times=1, rounds=config.agent_rounds, scale=1e3 / runs)
    figure = result.figure(ASYNC_TOOL)
    if figure is not None:
        figure.note = "the same tool as `async def`: no worker-thread hop per call"
    if result.figure("openai SDK") is None:
        result.notes.append(MISSING)
    result.notes.append(
        f"{runs} runs at once per round, median of {config.agent_rounds} rounds; floor and SDK are "
        "hand-written loops (no memory, events, validation); agentflow runs the sync tool in a worker thread"
    )
    return result
