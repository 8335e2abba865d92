"""The channel between host and sandbox never stalls, whatever the number and size of the calls the code
makes at once, and what crosses it is checked both ways: answers the child could not read are refused on
the host, and a step's outcome must be its own."""

from __future__ import annotations

import decimal
import os
import sys
from typing import Any

import anyio
import pytest

from agentflow.result import ToolResult
from agentflow.sandbox import CodeErrorType, ExecutionLimits, ProcessSandbox, _runner, frames, process_sandbox
from agentflow.sandbox.cpu_watch import cpu_exceeded

from .conftest import HostTools, echo

# Far more than the two 64 KiB pipes hold, in calls of a size a real tool gets (a document to summarise).
DOCS = "docs = ['lorem ipsum ' * 4000 for _ in range(60)]\n"
HELPERS = {
    "map_tool": "out = map_tool('echo', [{'text': d} for d in docs])",
    "parallel": "out = parallel(*[('echo', {'text': d}) for d in docs])",
    "gather": "import asyncio\nout = await asyncio.gather(*[acall_tool('echo', text=d) for d in docs])",
}


@pytest.mark.parametrize("helper", sorted(HELPERS))
@pytest.mark.parametrize("slots", [1, 16])
async def test_many_large_concurrent_calls_finish_through_every_helper(
    sandbox: ProcessSandbox, helper: str, slots: int
) -> None:
    tools = HostTools(echo=echo)
    code = DOCS + HELPERS[helper] + "\n[len(out), all(o['text'] == d for o, d in zip(out, docs))]"
    limits = ExecutionLimits(wall_time=30, max_parallel_tool_calls=slots)
    with anyio.fail_after(60):  # a guard only: a stalled channel used to hold the step until wall_time
        result = await sandbox.execute(code, tools, tools.names, limits)
    assert result.ok, result.error
    assert result.value == [60, True]
    assert len(tools.calls) == 60


async def test_only_running_tools_take_a_slot_and_the_limit_still_holds(sandbox: ProcessSandbox) -> None:
    running = 0
    most = 0

    async def slow_echo(args: dict[str, Any]) -> Any:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await anyio.lowlevel.checkpoint()
        running -= 1
        return args

    tools = HostTools(echo=slow_echo)
    limits = ExecutionLimits(wall_time=30, max_parallel_tool_calls=3)
    result = await sandbox.execute(DOCS + HELPERS["map_tool"] + "\nlen(out)", tools, tools.names, limits)
    assert result.value == 60
    assert most <= 3


async def test_a_tool_result_the_child_could_not_read_is_a_tool_error(
    sandbox: ProcessSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The real limit is the child's 256 MiB; a smaller one here keeps the test light.
    monkeypatch.setattr(process_sandbox, "MAX_CHILD_READS", 1000)

    async def export(args: dict[str, Any]) -> Any:
        return "x" * int(args["n"])

    tools = HostTools(export=export)
    await sandbox.execute("kept = 1", tools, tools.names)
    code = "try:\n    export(n=5000)\nexcept ToolError as e:\n    err = str(e)\nerr, len(export(n=10)), kept"
    result = await sandbox.execute(code, tools, tools.names)
    assert result.ok, result.error
    error, small, kept = result.value
    assert error.startswith("TOOL_ERROR: the result of tool 'export' is ")
    assert "bytes as JSON, over the sandbox's limit of 1000; ask the tool for less" in error
    assert (small, kept) == (10, 1)  # the sandbox lives on


def test_the_host_s_answer_limit_is_the_child_s_frame_limit() -> None:
    assert frames.MAX_CHILD_READS == _runner._MAX_FRAME


async def test_a_decimal_reaches_code_as_a_number_when_a_float_holds_it_exactly(
    sandbox: ProcessSandbox,
) -> None:
    async def invoker(name: str, args: dict[str, Any]) -> ToolResult:
        value = {"price": decimal.Decimal("9.99"), "pi": decimal.Decimal("3.14159265358979323846264")}
        return ToolResult("c", name, "text", value=value)

    code = "v = call_tool('quote')\n[v, type(v['price']).__name__]"
    result = await sandbox.execute(code, invoker, ["quote"])
    assert result.value == [{"price": 9.99, "pi": "3.14159265358979323846264"}, "float"]


FIND_CHANNEL = "import gc, sys\nch = next(o for o in gc.get_objects() if type(o).__name__ == '_Channel')\n"
STEP = "step = int(sys._getframe().f_code.co_filename.strip('<>').split()[1])\n"


async def test_a_forged_outcome_without_its_step_is_a_protocol_error(sandbox: ProcessSandbox) -> None:
    code = FIND_CHANNEL + "ch.send({'t': 'done', 'ok': True, 'value': 'forged'})\nimport time\ntime.sleep(60)"
    result = await sandbox.execute(code, HostTools(), [], ExecutionLimits(wall_time=30))
    assert result.error_type is CodeErrorType.PROTOCOL
    assert result.state_lost
    assert (await sandbox.execute("6 * 7", HostTools())).value == 42


async def test_a_stale_outcome_is_never_taken_for_the_next_step_s(sandbox: ProcessSandbox) -> None:
    # The code ends its step early with an outcome of its own, then goes on and ends it again.
    forge = "ch.send({'t': 'done', 'step': step, 'ok': True, 'value': 'forged'})\n"
    code = FIND_CHANNEL + STEP + forge + "import time\ntime.sleep(0.2)\n'real'"
    assert (await sandbox.execute(code, HostTools())).value == "forged"  # it only fooled itself
    after = await sandbox.execute("'next'", HostTools())
    assert after.error_type is CodeErrorType.PROTOCOL
    assert after.error is not None
    assert "an outcome for step 1 during step 2" in after.error
    assert (await sandbox.execute("'next'", HostTools())).value == "next"


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the idle check reads /proc")
async def test_code_that_runs_on_after_its_step_ended_is_stopped_before_the_next(
    sandbox: ProcessSandbox,
) -> None:
    forge = "ch.send({'t': 'done', 'step': step, 'ok': True, 'value': 'forged'})\n"
    code = FIND_CHANNEL + STEP + forge + "while True:\n    pass"
    forged = await sandbox.execute(code, HostTools(), limits=ExecutionLimits(cpu_seconds=60))
    assert forged.value == "forged"
    runner = sandbox.pids[-1]
    with anyio.fail_after(30):  # it spins while no step runs, unwatched
        assert await cpu_exceeded(lambda: _cpu_seconds(runner), 1.5)
    result = await sandbox.execute("'next'", HostTools())
    assert result.value == "next"
    assert result.stderr.startswith("[note: its code went on running after its step had ended (")
    assert "the sandbox was restarted" in result.stderr
    assert runner not in sandbox.pids
