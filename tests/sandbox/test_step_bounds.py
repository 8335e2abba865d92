"""A code step has hard bounds by default, tool calls included: ``max_step_time`` (its whole time, tool
calls too, which ``wall_time`` does not count) and ``max_step_tool_calls``."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentflow.sandbox import CodeErrorType, ExecutionLimits, ProcessSandbox

from .conftest import HostTools, echo

GUARD = 30  # seconds: a bound that does not hold shows as a failure, not as a hung test run


def test_the_defaults_bound_every_step() -> None:
    limits = ExecutionLimits()
    assert limits.max_step_time == 300
    assert limits.max_step_tool_calls == 1000
    assert ExecutionLimits(max_step_time=None, max_step_tool_calls=None).max_step_time is None
    with pytest.raises(ValueError, match=r"max_step_time must be at least 0\.001 or None"):
        ExecutionLimits(max_step_time=0)
    with pytest.raises(ValueError, match="max_step_tool_calls must be at least 1 or None"):
        ExecutionLimits(max_step_tool_calls=0)


async def test_a_step_waiting_on_tools_ends_at_max_step_time(sandbox: ProcessSandbox) -> None:
    cancelled: list[bool] = []
    never = anyio.Event()

    async def hang(args: dict[str, Any]) -> Any:
        try:
            await never.wait()
        except anyio.get_cancelled_exc_class():
            cancelled.append(True)
            raise

    tools = HostTools(hang=hang)
    # Each call waits forever; the code's own clock (wall_time) stops meanwhile and never runs out.
    limits = ExecutionLimits(wall_time=GUARD, max_step_time=0.5)
    with anyio.fail_after(GUARD):
        result = await sandbox.execute("while True:\n    hang()", tools, tools.names, limits)
    assert not result.ok
    assert result.error_type is CodeErrorType.TIMEOUT
    assert result.error is not None
    assert "ran longer than 0.5 s in all, its tool calls included (ExecutionLimits.max_step_time)" in (
        result.error
    )
    assert result.state_lost
    assert cancelled == [True]  # the tool call in flight was cancelled with the step
    assert (await sandbox.execute("1 + 1", tools)).value == 2  # a fresh process takes the next step


async def test_a_call_over_max_step_tool_calls_raises_in_the_code(sandbox: ProcessSandbox) -> None:
    tools = HostTools(echo=echo)
    code = (
        "refused = []\nfor i in range(8):\n    try:\n        echo(i=i)\n"
        "    except ToolError as error:\n        refused.append(str(error))\n"
        "[len(refused), refused[0]]"
    )
    result = await sandbox.execute(code, tools, tools.names, ExecutionLimits(max_step_tool_calls=5))
    assert result.ok, result.error
    count, message = result.value
    assert count == 3
    assert "not run: this code step reached its limit of 5 tool calls" in message
    assert "ExecutionLimits.max_step_tool_calls" in message
    assert len(tools.calls) == 5  # the refused calls never reached the host's tools

    # Uncaught, it ends the step as a tool error; the next step has its own count.
    loop = await sandbox.execute(
        "for i in range(6):\n    echo(i=i)", tools, tools.names, ExecutionLimits(max_step_tool_calls=5)
    )
    assert loop.error_type is CodeErrorType.TOOL_ERROR
    assert len(tools.calls) == 10


async def test_map_tool_over_the_limit_raises_and_the_sandbox_goes_on(sandbox: ProcessSandbox) -> None:
    tools = HostTools(echo=echo)
    limits = ExecutionLimits(max_step_tool_calls=3)
    result = await sandbox.execute(
        "map_tool('echo', [{'i': i} for i in range(10)])", tools, tools.names, limits
    )
    assert result.error_type is CodeErrorType.TOOL_ERROR
    assert result.error is not None
    assert "limit of 3 tool calls" in result.error
    after = await sandbox.execute("map_tool('echo', [{'i': 1}, {'i': 2}])", tools, tools.names, limits)
    assert after.value == [{"i": 1}, {"i": 2}]
    assert not after.state_lost


async def test_code_that_lifts_the_runner_s_count_is_killed_at_the_limit(sandbox: ProcessSandbox) -> None:
    tools = HostTools(echo=echo)
    code = (
        "import gc\n"
        "calls = [o for o in gc.get_objects() if type(o).__name__ == '_Calls'][0]\n"
        "calls.max_calls = 0\n"
        "for i in range(10):\n    echo(i=i)"
    )
    result = await sandbox.execute(code, tools, tools.names, ExecutionLimits(max_step_tool_calls=4))
    assert result.error_type is CodeErrorType.PROTOCOL
    assert result.error is not None
    assert "5 tool calls in one step, over its limit of 4" in result.error
    assert result.state_lost
    assert len(tools.calls) == 4
