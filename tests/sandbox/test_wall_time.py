"""``wall_time`` bounds the code's own time: time a step spends waiting for tools on the host is the tools'
(their timeout bounds it), so a slow tool does not kill the step and lose the sandbox's state."""

from __future__ import annotations

from typing import Any

import anyio

from agentflow.sandbox import CodeErrorType, ProcessSandbox

from .conftest import SHORT_WALL, HostTools, echo, short_limits


async def test_time_waiting_for_a_slow_tool_does_not_count_against_the_wall_time(
    sandbox: ProcessSandbox,
) -> None:
    async def slow(args: dict[str, Any]) -> Any:
        await anyio.sleep(2 * SHORT_WALL)  # a tool that takes its time (a slow API), not a wait for the test
        return "done"

    tools = HostTools(slow=slow, echo=echo)
    await sandbox.execute("kept = 1", tools)
    sequential = await sandbox.execute("slow(), kept", tools, tools.names, short_limits())
    assert sequential.ok, sequential.error
    assert sequential.value == ["done", 1]
    together = await sandbox.execute("map_tool('slow', [{}, {}])", tools, tools.names, short_limits())
    assert together.value == ["done", "done"]


async def test_the_code_s_own_time_still_adds_up_around_tool_calls(sandbox: ProcessSandbox) -> None:
    tools = HostTools(echo=echo)
    code = f"import time\nfor _ in range(4):\n    echo(n=1)\n    time.sleep({0.4 * SHORT_WALL!r})"
    result = await sandbox.execute(code, tools, tools.names, short_limits())
    assert result.error_type is CodeErrorType.TIMEOUT
    assert result.error is not None
    assert result.error.startswith(
        "TimeoutError: the code ran longer than 1 s (time spent waiting for tool calls not counted) and was "
        "stopped"
    )
