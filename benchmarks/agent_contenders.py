"""The contenders of the agent benchmarks: one tool-loop run and one streamed run of each, same server.

``open_runs(name, base_url)`` opens one contender's client and yields its ``Runs``:

- ``tool_run()``: one whole tool loop — the model call answered with three parallel calls to ``add``, the
  three tools run, the second call with their results, the final answer checked;
- ``stream_run()``: one streamed answer consumed to its end as that framework's events; returns how many
  text deltas it saw (the measurement checks that none was lost).

Contenders (``CONTENDERS``):

- ``floor``: raw aiohttp + orjson, no framework (``FloorClient``): post, parse, run the tools, post the
  results, parse; for the stream, ``orjson.loads`` of every ``data:`` line as it arrives;
- ``agentflow``: ``Agent(OpenAIChatModel(...), tools=[add])`` with the ReAct runtime; the stream is
  ``async with agent.stream(prompt) as run: async for event in run`` counting ``TextDelta`` events
  (a bounded backpressure subscription: every delta is delivered);
- ``agentflow, sync tool``: the same with ``add`` written as a plain ``def`` (run in a worker thread);
- ``openai-agents``: ``Runner.run`` / ``Runner.run_streamed`` over ``OpenAIChatCompletionsModel`` (tracing
  off), the stream read through ``stream_events()`` counting ``ResponseTextDeltaEvent``;
- ``pydantic-ai``: ``Agent.run`` / ``Agent.run_stream_events`` over ``OpenAIChatModel``, counting the text
  deltas (the first one arrives in the text part's ``PartStartEvent``).

Each framework is imported only when its contender is opened, so a subprocess that runs one contender
(``agent_many``) loads nothing of the others. Every contender sends the same system prompt, the same tool
and the same model name; the peers' ``AsyncOpenAI`` clients have retries off, as the other benchmarks do.
A peer that is not installed raises ``PeerMissing`` with the reason.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any

from .agent_script import (
    API_KEY,
    DELTA,
    FINAL_TEXT,
    INSTRUCTIONS,
    MODEL,
    STORY_PROMPT,
    TOOL_NAME,
    TOOL_PROMPT,
    TOOL_SCHEMA,
    add,
    add_sync,
)

__all__ = [
    "AGENTFLOW",
    "AGENTFLOW_SYNC",
    "CONTENDERS",
    "FLOOR",
    "OPENAI_AGENTS",
    "PEERS",
    "PYDANTIC_AI",
    "PeerMissing",
    "Runs",
    "open_runs",
]

FLOOR = "floor"
AGENTFLOW = "agentflow"
AGENTFLOW_SYNC = "agentflow, sync tool"
OPENAI_AGENTS = "openai-agents"
PYDANTIC_AI = "pydantic-ai"
PEERS = (OPENAI_AGENTS, PYDANTIC_AI)
CONTENDERS = (FLOOR, AGENTFLOW, AGENTFLOW_SYNC, *PEERS)

_INSTALL = "pip install -e '.[bench]'"


class PeerMissing(Exception):
    """A peer framework is not installed; the message says which and how to install it."""


@dataclass(frozen=True)
class Runs:
    """One contender's operations, with its client open."""

    tool_run: Callable[[], Awaitable[None]]
    stream_run: Callable[[], Awaitable[int]]


def open_runs(name: str, base_url: str) -> AbstractAsyncContextManager[Runs]:
    """Open contender ``name`` against ``base_url`` (an ``agent_server``); ``PeerMissing`` if missing."""
    openers: dict[str, Callable[[str], AbstractAsyncContextManager[Runs]]] = {
        FLOOR: _floor,
        AGENTFLOW: _agentflow,
        AGENTFLOW_SYNC: _agentflow_sync,
        OPENAI_AGENTS: _openai_agents,
        PYDANTIC_AI: _pydantic_ai,
    }
    if name not in openers:
        raise ValueError(f"unknown contender {name!r}; choose from {', '.join(CONTENDERS)}")
    return openers[name](base_url)


def _check_text(text: object) -> None:
    assert text == FINAL_TEXT, f"unexpected final answer {text!r}"


# --- floor ------------------------------------------------------------------------------------------


@asynccontextmanager
async def _floor(base_url: str) -> AsyncIterator[Runs]:
    import orjson

    from .floor import FloorClient

    story = {
        "model": MODEL,
        "messages": [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": STORY_PROMPT}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    async with FloorClient(base_url, API_KEY) as floor:

        async def tool_run() -> None:
            messages: list[dict[str, Any]] = [
                {"role": "system", "content": INSTRUCTIONS},
                {"role": "user", "content": TOOL_PROMPT},
            ]
            body = {"model": MODEL, "messages": messages, "tools": [TOOL_SCHEMA]}
            message = (await floor.post_json("/chat/completions", body))["choices"][0]["message"]
            messages.append(message)
            for call in message["tool_calls"]:
                value = await add(**orjson.loads(call["function"]["arguments"]))
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": str(value)})
            final = (await floor.post_json("/chat/completions", body))["choices"][0]["message"]
            _check_text(final["content"])

        async def stream_run() -> int:
            return await floor.read_stream("/chat/completions", story)

        yield Runs(tool_run, stream_run)


# --- agentflow --------------------------------------------------------------------------------------


@asynccontextmanager
async def _agentflow_with(base_url: str, fn: Callable[..., Any]) -> AsyncIterator[Runs]:
    from agentflow import Agent, OpenAIChatModel, TextDelta, tool

    async with OpenAIChatModel(base_url=base_url, api_key=API_KEY, model=MODEL) as model:
        # The ReAct runtime's instructions are INSTRUCTIONS: the same system prompt as everyone else's.
        agent = Agent(model, tools=[tool(fn, name=TOOL_NAME)])
        storyteller = Agent(model)

        async def tool_run() -> None:
            result = await agent.run(TOOL_PROMPT)
            _check_text(result.output_text)

        async def stream_run() -> int:
            deltas = 0
            async with storyteller.stream(STORY_PROMPT) as run:
                async for event in run:
                    if isinstance(event, TextDelta):
                        deltas += 1
            assert run.result.output_text.startswith(DELTA)
            return deltas

        yield Runs(tool_run, stream_run)


def _agentflow(base_url: str) -> AbstractAsyncContextManager[Runs]:
    return _agentflow_with(base_url, add)


def _agentflow_sync(base_url: str) -> AbstractAsyncContextManager[Runs]:
    return _agentflow_with(base_url, add_sync)


# --- peers ------------------------------------------------------------------------------------------


@asynccontextmanager
async def _openai_agents(base_url: str) -> AsyncIterator[Runs]:
    try:
        from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
        from openai import AsyncOpenAI
        from openai.types.responses import ResponseTextDeltaEvent
    except ImportError as exc:
        raise PeerMissing(f"openai-agents not installed ({_INSTALL}): {exc}") from None

    set_tracing_disabled(True)  # the default exports traces to OpenAI: never from a benchmark
    client = AsyncOpenAI(base_url=base_url, api_key=API_KEY, max_retries=0)
    try:
        model = OpenAIChatCompletionsModel(model=MODEL, openai_client=client)
        agent = Agent(name="bench", instructions=INSTRUCTIONS, model=model, tools=[function_tool(add)])
        storyteller = Agent(name="storyteller", instructions=INSTRUCTIONS, model=model)

        async def tool_run() -> None:
            result = await Runner.run(agent, TOOL_PROMPT)
            _check_text(result.final_output)

        async def stream_run() -> int:
            deltas = 0
            result = Runner.run_streamed(storyteller, STORY_PROMPT)
            async for event in result.stream_events():
                if event.type == "raw_response_event" and isinstance(event.data, ResponseTextDeltaEvent):
                    deltas += 1
            assert str(result.final_output).startswith(DELTA)
            return deltas

        yield Runs(tool_run, stream_run)
    finally:
        await client.close()


@asynccontextmanager
async def _pydantic_ai(base_url: str) -> AsyncIterator[Runs]:
    try:
        from openai import AsyncOpenAI
        from pydantic_ai import Agent
        from pydantic_ai.messages import PartDeltaEvent, PartStartEvent, TextPart, TextPartDelta
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider
    except ImportError as exc:
        raise PeerMissing(f"pydantic-ai not installed ({_INSTALL}): {exc}") from None

    client = AsyncOpenAI(base_url=base_url, api_key=API_KEY, max_retries=0)
    try:
        model = OpenAIChatModel(MODEL, provider=OpenAIProvider(openai_client=client))
        agent = Agent(model, instructions=INSTRUCTIONS, tools=[add])
        storyteller = Agent(model, instructions=INSTRUCTIONS)

        async def tool_run() -> None:
            result = await agent.run(TOOL_PROMPT)
            _check_text(result.output)

        async def stream_run() -> int:
            deltas = 0
            async with storyteller.run_stream_events(STORY_PROMPT) as events:
                async for event in events:
                    if isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
                        deltas += 1
                    elif isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
                        deltas += 1  # the text part starts with the first delta's text
            return deltas

        yield Runs(tool_run, stream_run)
    finally:
        await client.close()
