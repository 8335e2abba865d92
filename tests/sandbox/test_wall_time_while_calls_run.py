"""``wall_time`` stops only while the code waits for a tool call of its own that runs on the host: code
that fires a call (``acall_tool`` not awaited yet) and goes on computing is timed all along. The child says
when it waits; the host trusts that only while one of the code's calls runs."""

from __future__ import annotations

from typing import Any

import anyio

from agentflow.sandbox import CodeErrorType, ExecutionLimits, ProcessSandbox
from agentflow.sandbox.process_sandbox import _CodeClock

from .conftest import SHORT_WALL, HostTools

WALL = ExecutionLimits(wall_time=SHORT_WALL, max_step_time=10, cpu_seconds=60)


async def test_computing_while_a_fired_call_runs_is_timed(sandbox: ProcessSandbox) -> None:
    async def never(args: dict[str, Any]) -> Any:
        await anyio.sleep_forever()

    tools = HostTools(never=never)
    code = (
        "import asyncio\n"
        "pending = asyncio.ensure_future(acall_tool('never'))\n"
        "await asyncio.sleep(0)\n"  # the call goes out
        "while True:\n"
        "    pass"
    )
    result = await sandbox.execute(code, tools, tools.names, WALL)
    assert result.error_type is CodeErrorType.TIMEOUT
    assert result.error is not None
    # The wall time ended it, not the bound of the whole step.
    assert result.error.startswith(f"TimeoutError: the code ran longer than {SHORT_WALL:g} s")


async def test_waiting_for_slow_calls_from_threads_or_beyond_the_free_slots_is_not_timed(
    sandbox: ProcessSandbox,
) -> None:
    async def slow(args: dict[str, Any]) -> Any:
        await anyio.sleep(0.6 * SHORT_WALL)  # a tool that takes its time, not a wait for the test
        return "done"

    tools = HostTools(slow=slow)
    threads = (
        "from concurrent.futures import ThreadPoolExecutor\n"
        "with ThreadPoolExecutor(2) as pool:\n"
        "    out = list(pool.map(lambda _: slow(), range(6)))\n"
        "out"
    )
    limits = ExecutionLimits(wall_time=SHORT_WALL, max_processes=8)
    result = await sandbox.execute(threads, tools, tools.names, limits)
    assert result.ok, result.error
    assert result.value == ["done"] * 6
    # Six calls, two at a time: the host holds back the child's frames meanwhile, and does not count that.
    queued = ExecutionLimits(wall_time=SHORT_WALL, max_parallel_tool_calls=2)
    result = await sandbox.execute("map_tool('slow', [{}] * 6)", tools, tools.names, queued)
    assert result.ok, result.error
    gathered = "import asyncio\nawait asyncio.gather(*[acall_tool('slow') for _ in range(3)])"
    result = await sandbox.execute(gathered, tools, tools.names, ExecutionLimits(wall_time=SHORT_WALL))
    assert result.value == ["done"] * 3


async def test_the_clock_stops_only_while_the_code_waits_and_a_call_of_it_runs() -> None:
    clock = _CodeClock(10.0)
    clock.code_waits(True)  # no call runs: a wait says nothing
    assert not clock.stopped
    clock.tool_started()  # fired, not waited for
    assert not clock.stopped
    clock.code_waits(True)
    assert clock.stopped
    clock.code_waits(False)
    assert not clock.stopped
    clock.tool_started(waits=True)  # a call that its thread waits for at once
    assert clock.stopped
    clock.tool_finished()
    assert clock.stopped  # the other call still runs, and the code said it waits
    clock.tool_finished()
    assert not clock.stopped
    clock.tool_started()  # the wait ended with the last call: a new call is not waited for yet
    assert not clock.stopped
    clock.holding(True)  # every slot taken: what the child says meanwhile is unread
    assert clock.stopped
    clock.holding(False)
    assert not clock.stopped
