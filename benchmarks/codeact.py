"""Measurement 5: the CodeAct sandbox — executor start time and host CPU per tool round trip from code.

No model server here: the sandbox is driven directly, as the CodeAct runtime drives it.

- start: wall-clock time of ``await ProcessSandbox().start()`` (a new isolated interpreter, ready for
  code), median of ``executor_starts`` starts; the host CPU it costs is shown beside it.
- round trip: one code step calls a trivial tool ``code_round_trips`` times in a loop
  (``for i in range(N): add(a=i, b=1)``); host CPU per call is (CPU of that step − CPU of an empty step)
  / N, so the step's own fixed cost is not spread over the calls. Two invokers:

  - "raw invoker": returns a ``ToolResult`` at once — the sandbox's channel alone;
  - "via ToolExecutor": the call goes through ``agentflow.tools.ToolExecutor`` (argument validation,
    ``ToolStarted``/``ToolSucceeded`` events, concurrency limit, timeout), as a ReAct tool call does.

  The empty step's CPU is reported too (the fixed cost of a code step on the host).
- round trip through the runtime: the same loop as a whole CodeAct run (``Agents.codeact`` on an in-process
  ``FakeModelClient``, one sandbox shared by the runs so its start is not counted): host CPU of that run
  minus the CPU of a run whose step makes no call, per call. This is the path of a real agent: the
  runtime's tool invoker, ``ToolCallRequested``/``ToolStarted``/``ToolSucceeded`` on the run's event bus,
  the ``ToolExecutor``.

Targets (issue 5): start < 100 ms; a tool call from code < 1 ms of host CPU (on "through CodeActRuntime").
The child's CPU is not counted: it is another process.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from .harness import Config, Figure, Measurement, Target

__all__ = ["measure"]

START = "executor start (wall)"
ROUND_TRIP = "round trip, through CodeActRuntime"

Invoker = Callable[[str, dict[str, Any]], Awaitable[Any]]


def _unavailable() -> str | None:
    """Why the sandbox cannot be measured here, or ``None`` when it can."""
    try:
        import agentflow.sandbox as sandbox
    except Exception as exc:  # an unfinished package may fail in any way
        return f"agentflow.sandbox does not import ({type(exc).__name__}: {exc})"
    if not hasattr(sandbox, "ProcessSandbox"):
        return "agentflow.sandbox has no ProcessSandbox yet"
    return None


async def _start_figures(config: Config) -> tuple[list[float], list[float]]:
    from agentflow.sandbox import ProcessSandbox

    walls: list[float] = []
    cpus: list[float] = []
    for _ in range(config.executor_starts + 1):  # the first start warms the disk cache: dropped below
        sandbox = ProcessSandbox()
        try:
            wall, cpu = time.perf_counter(), time.process_time()
            await sandbox.start()
            walls.append((time.perf_counter() - wall) * 1e3)
            cpus.append((time.process_time() - cpu) * 1e3)
        finally:
            await sandbox.aclose()
    return walls[1:], cpus[1:]


def _invokers() -> dict[str, Invoker]:
    from agentflow.model.messages import ToolCall
    from agentflow.result import ToolResult
    from agentflow.tools import ToolExecutor

    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    async def raw(name: str, arguments: dict[str, Any]) -> ToolResult:
        value = arguments["a"] + arguments["b"]
        return ToolResult(call_id="c", name=name, output=str(value), value=value)

    events: list[object] = []

    async def emit(event: object) -> None:
        events.append(event)
        if len(events) > 1000:
            events.clear()

    executor = ToolExecutor([add], emit=emit)

    async def via_executor(name: str, arguments: dict[str, Any]) -> ToolResult:

        call = ToolCall("call_code", name, orjson.dumps(arguments).decode())
        (result,) = await executor.run_calls([call], run_id="bench", step=1)
        return result

    return {"raw invoker": raw, "via ToolExecutor": via_executor}


async def _round_trip_figures(config: Config) -> tuple[dict[str, list[float]], list[float]]:
    from agentflow.sandbox import ProcessSandbox

    calls = config.code_round_trips
    loop_code = f"total = 0\nfor i in range({calls}):\n    total += add(a=i, b=1)\ntotal"
    expected = sum(range(calls)) + calls
    per_call: dict[str, list[float]] = {}
    empty_steps: list[float] = []
    async with ProcessSandbox() as sandbox:
        for name, invoker in _invokers().items():
            per_call[name] = []
            for round_ in range(config.rounds + 1):  # round 0 warms up
                start = time.process_time()
                empty = await sandbox.execute("None", invoker, ["add"])
                empty_cpu = time.process_time() - start
                start = time.process_time()
                result = await sandbox.execute(loop_code, invoker, ["add"])
                loop_cpu = time.process_time() - start
                assert empty.ok, empty
                assert result.ok, result
                assert result.value == expected, result
                if round_:
                    per_call[name].append((loop_cpu - empty_cpu) / calls * 1e3)
                    empty_steps.append(empty_cpu * 1e3)
    return per_call, empty_steps


async def _runtime_round_trips(config: Config) -> list[float]:
    from agentflow.agent.agents import Agents
    from agentflow.runtimes.codeact import CodeActOptions
    from agentflow.sandbox import ProcessSandbox
    from agentflow.testing.fake import FakeModelClient, reply
    from agentflow.tools import tool

    @tool
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    calls = config.code_round_trips
    loop_code = f"total = 0\nfor i in range({calls}):\n    total += add(a=i, b=1)\ntotal"
    per_call: list[float] = []
    async with ProcessSandbox() as sandbox:
        options = CodeActOptions(executor=sandbox)  # shared by the runs: its process starts once

        async def run_cpu(code: str) -> float:
            answer = orjson.dumps({"type": "code", "language": "python", "code": code}).decode()
            agent = Agents.codeact(FakeModelClient([reply(answer)]), tools=[add], codeact=options)
            start = time.process_time()
            result = await agent.run("add")
            assert result.tool_results or code == "0", result
            return time.process_time() - start

        for round_ in range(config.rounds + 1):  # round 0 warms up
            empty = await run_cpu("0")
            loop = await run_cpu(loop_code)
            if round_:
                per_call.append((loop - empty) / calls * 1e3)
    return per_call


async def measure(config: Config) -> Measurement:
    """Start time (ms, wall) and host CPU per tool round trip (ms); skipped without a working sandbox."""
    result = Measurement(
        key="codeact",
        title="CodeAct sandbox (ProcessSandbox)",
        unit="ms",
        targets=[
            Target(START, 100.0, strict=True),
            Target(ROUND_TRIP, 1.0, strict=True),
        ],
        floor=None,
        sdk=None,
    )
    why = _unavailable()
    if why is not None:
        result.skipped = why
        return result
    walls, cpus = await _start_figures(config)
    per_call, empty_steps = await _round_trip_figures(config)
    runtime = await _runtime_round_trips(config)
    start = Figure(START, walls, note=f"host CPU {sorted(cpus)[len(cpus) // 2]:.1f} ms")
    result.figures = [
        start,
        *(Figure(f"round trip, {name}", values) for name, values in per_call.items()),
        Figure(ROUND_TRIP, runtime),
        Figure("empty code step (host CPU)", empty_steps),
    ]
    result.notes.append(
        f"start: median of {config.executor_starts} starts; round trips: {config.code_round_trips} calls in "
        f"one step, median of {config.rounds} rounds"
    )
    return result
