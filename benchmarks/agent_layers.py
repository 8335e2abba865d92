"""Where (b)'s time goes: 500 tool-loop runs at once, by layer (a diagnostic, not part of ``make bench``).

``python -m benchmarks.agent_layers [ROUNDS]`` starts the agent server, then runs three layers in turn, each
in a fresh subprocess (as ``agent_many`` does), and prints the median wall time and client CPU per run:

- ``floor``: raw aiohttp + orjson (the ``agent_many`` floor);
- ``model``: the typed model layer alone — two ``OpenAIChatModel.chat`` calls with typed messages, the
  three tools called by hand, no agent;
- ``bare``: a lower bound for any agent that meets issue 4: the ``model`` layer plus the run's typed events
  (built, kept in a list: no bus, no subscriber), the tool results and the ``AgentResult``; the tools are
  awaited one after the other, with no validation, timeout, memory or cancellation handling;
- ``bare-group``: ``bare`` with each step's tools in an anyio task group, one task per call, as the issue
  asks for (agentflow starts a task only for a call that waits: ``add`` never does);
- ``agent``: the whole agent (``Agent.run``), as ``agent_many`` measures it.

``model`` against ``floor`` is what the typed model layer costs under load; ``agent`` against ``model`` is the
agent layer's share (events, the tool batch, memory, prompts, the result); ``bare`` shows how much of the
1.5× budget of target (b) is left once the issue's typed model layer and events are paid for.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import orjson

from .agent_contenders import AGENTFLOW, FLOOR, open_runs
from .agent_script import API_KEY, FINAL_TEXT, INSTRUCTIONS, MODEL, TOOL_NAME, TOOL_PROMPT, TOOL_SCHEMA, add
from .harness import server_process

LAYERS = ("floor", "model", "bare", "bare-group", "agent")
RUNS = 500
_ROOT = Path(__file__).resolve().parents[1]


async def _model_layer(base_url: str) -> tuple[Callable[[], Awaitable[None]], Callable[[], Awaitable[None]]]:
    from agentflow import OpenAIChatModel
    from agentflow.model.messages import Message, SystemMessage, ToolResultMessage, UserMessage
    from agentflow.model.request import ChatParameters, ChatRequest
    from agentflow.model.tools import ToolSpec

    model = OpenAIChatModel(base_url=base_url, api_key=API_KEY, model=MODEL)
    function = TOOL_SCHEMA["function"]
    spec = ToolSpec(name=TOOL_NAME, description=function["description"], parameters=function["parameters"])
    params = ChatParameters(tools=(spec,))

    async def tool_run() -> None:
        messages: list[Message] = [SystemMessage(INSTRUCTIONS), UserMessage(TOOL_PROMPT)]
        first = await model.chat(ChatRequest(messages, params))
        messages.append(first.message)
        for call in first.message.tool_calls:
            value = await add(**orjson.loads(call.arguments))
            messages.append(ToolResultMessage(call.id, str(value)))
        second = await model.chat(ChatRequest(messages, params))
        assert second.message.text == FINAL_TEXT

    return tool_run, model.aclose


async def _bare_agent(
    base_url: str, *, group: bool
) -> tuple[Callable[[], Awaitable[None]], Callable[[], Awaitable[None]]]:
    from agentflow import OpenAIChatModel
    from agentflow.events import (
        ModelRequest,
        RunEvent,
        RunFinished,
        RunStarted,
        StepFinished,
        StepStarted,
        ToolCallRequested,
        ToolStarted,
        ToolSucceeded,
    )
    from agentflow.model.events import Event, ModelCompleted, TextDelta
    from agentflow.model.messages import Message, SystemMessage, ToolCall, ToolResultMessage, UserMessage
    from agentflow.model.request import ChatParameters, ChatRequest
    from agentflow.model.response import TokenUsage
    from agentflow.model.tools import ToolSpec
    from agentflow.result import AgentResult, StopReason, ToolResult

    model = OpenAIChatModel(base_url=base_url, api_key=API_KEY, model=MODEL)
    function = TOOL_SCHEMA["function"]
    spec = ToolSpec(name=TOOL_NAME, description=function["description"], parameters=function["parameters"])
    params = ChatParameters(tools=(spec,))
    names = (TOOL_NAME,)

    async def tool_run() -> None:
        events: list[Event | RunEvent] = []
        emit = events.append
        emit(RunStarted(input=TOOL_PROMPT, runtime="react"))
        messages: list[Message] = [SystemMessage(INSTRUCTIONS), UserMessage(TOOL_PROMPT)]
        usage = TokenUsage()
        all_calls: list[ToolCall] = []
        all_results: list[ToolResult] = []
        steps = 0
        while True:
            steps += 1
            emit(StepStarted())
            emit(ModelRequest(model=None, items=len(messages), tools=names))
            response = await model.chat(ChatRequest(messages, params))
            if response.usage is not None:
                usage = usage + response.usage
            if response.message.text:
                emit(TextDelta(response.message.text))
            emit(ModelCompleted(response))
            messages.append(response.message)
            calls = response.message.tool_calls
            if not calls:
                emit(StepFinished(usage=response.usage))
                break
            results: list[ToolResult | None] = [None] * len(calls)

            async def call_tool(results: list[ToolResult | None], index: int, call: ToolCall) -> None:
                emit(ToolStarted(call=call))
                value = await add(**orjson.loads(call.arguments))
                result = results[index] = ToolResult(call_id=call.id, name=call.name, output=str(value))
                emit(ToolSucceeded(call=call, result=result))

            for call in calls:
                emit(ToolCallRequested(call=call))
            if group:
                async with anyio.create_task_group() as tasks:
                    for index, call in enumerate(calls):
                        tasks.start_soon(call_tool, results, index, call)
            else:
                for index, call in enumerate(calls):
                    await call_tool(results, index, call)
            done = [r for r in results if r is not None]
            messages.extend(ToolResultMessage(r.call_id, r.output) for r in done)
            all_calls.extend(calls)
            all_results.extend(done)
            emit(StepFinished(tool_calls=len(calls), usage=response.usage))
        result = AgentResult(
            run_id="bare",
            output_text=response.message.text or "",
            stop_reason=StopReason.FINAL_ANSWER,
            steps=steps,
            tool_calls=tuple(all_calls),
            tool_results=tuple(all_results),
            usage=usage,
            new_items=tuple(messages[1:]),
        )
        emit(RunFinished(result=result))
        assert result.output_text == FINAL_TEXT

    return tool_run, model.aclose


async def _batch(layer: str, base_url: str) -> tuple[float, float]:
    if layer == "model":
        tool_run, close = await _model_layer(base_url)
    elif layer.startswith("bare"):
        tool_run, close = await _bare_agent(base_url, group=layer == "bare-group")
    else:
        opened = open_runs(FLOOR if layer == "floor" else AGENTFLOW, base_url)
        runs = await opened.__aenter__()
        tool_run = runs.tool_run

        async def close() -> None:
            await opened.__aexit__(None, None, None)

    try:
        await tool_run()
        gc.collect()
        wall, cpu = time.perf_counter(), time.process_time()
        async with asyncio.TaskGroup() as group:
            for _ in range(RUNS):
                group.create_task(tool_run())
        return time.perf_counter() - wall, time.process_time() - cpu
    finally:
        await close()


def main() -> int:
    """Run every layer ``ROUNDS`` times (default 5), alternating, and print the medians."""
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        wall, cpu = asyncio.run(_batch(sys.argv[2], sys.argv[3]))
        print(orjson.dumps({"wall": wall, "cpu": cpu}).decode(), flush=True)
        return 0
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    samples: dict[str, list[dict[str, float]]] = {layer: [] for layer in LAYERS}
    with server_process("--bench-deltas", "10", module="benchmarks.agent_server") as url:
        for _ in range(rounds):
            for layer in LAYERS:
                done = subprocess.run(
                    [sys.executable, "-m", "benchmarks.agent_layers", "--child", layer, url],
                    cwd=_ROOT,
                    capture_output=True,
                    text=True,
                    check=True,
                )
                samples[layer].append(orjson.loads(done.stdout.strip().splitlines()[-1]))
    floor = statistics.median(s["wall"] for s in samples["floor"])
    for layer in LAYERS:
        wall = statistics.median(s["wall"] for s in samples[layer])
        cpu = statistics.median(s["cpu"] for s in samples[layer]) / RUNS
        ratio = wall / floor
        print(f"{layer:10s} wall {wall * 1e3:6.1f} ms ({ratio:.2f}× floor)  CPU {cpu * 1e6:6.1f} µs per run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
