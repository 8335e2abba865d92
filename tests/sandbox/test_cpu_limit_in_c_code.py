"""Code stuck in one long call into C, where the runner's ``SIGXCPU`` handler cannot run, is still stopped at
its CPU limit: the host watches the process's CPU time, kills it and reports ``cpu_limit`` (state lost)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from agentflow.sandbox import CodeErrorType, ExecutionLimits, ProcessSandbox
from agentflow.sandbox.cpu_watch import cpu_exceeded

from .conftest import HostTools

needs_proc = pytest.mark.skipif(
    not os.path.exists("/proc/self/stat"), reason="no /proc here: the host cannot watch the CPU time"
)


@needs_proc
async def test_a_step_spinning_inside_c_code_is_stopped_at_its_cpu_limit(
    sandbox: ProcessSandbox, tools: HostTools
) -> None:
    await sandbox.execute("kept = 1", tools)
    # The wall time is far away: without the host's CPU watch this step would end as a timeout.
    limits = ExecutionLimits(wall_time=60, cpu_seconds=1)
    result = await sandbox.execute("print('spinning')\nsum(range(10**13))", tools, limits=limits)
    assert result.error_type is CodeErrorType.CPU_LIMIT
    assert result.state_lost
    assert result.stdout == "spinning\n"
    assert result.error is not None
    assert result.error.startswith(
        "CpuTimeExceeded: the step used more than its CPU time limit (1 s) and did not stop (the code caught "
        "CpuTimeExceeded and went on, or was inside one long call that cannot be interrupted"
    )
    assert "variables, imports and files from earlier steps are gone" in result.error
    after = await sandbox.execute("'kept' in globals(), echo(ok=True)['ok']", tools, tools.names)
    assert after.value == [False, True]


@needs_proc
async def test_plain_python_that_lifted_its_cpu_limit_is_not_blamed_on_c_code(
    sandbox: ProcessSandbox, tools: HostTools
) -> None:
    lift = "import resource as r\nr.setrlimit(r.RLIMIT_CPU, (r.RLIM_INFINITY, r.RLIM_INFINITY))\n"
    limits = ExecutionLimits(wall_time=60, cpu_seconds=1)
    result = await sandbox.execute(lift + "while True:\n    pass", tools, limits=limits)
    assert result.error_type is CodeErrorType.CPU_LIMIT
    assert result.error is not None
    assert result.error.startswith(
        "CpuTimeExceeded: the step used more than its CPU time limit (1 s) and did not stop (the code raised "
        "its own limit), so the process was stopped"
    )
    assert "call into C" not in result.error


def readings(*values: float | None) -> Iterator[float | None]:
    yield from values
    raise AssertionError("read after the watch should have ended")


async def test_the_cpu_watch_ends_once_the_budget_is_used_up() -> None:
    cpu = readings(10.0, 10.02, 10.3)
    assert await cpu_exceeded(lambda: next(cpu), 0.05)


async def test_the_cpu_watch_gives_up_when_the_cpu_time_cannot_be_read() -> None:
    assert not await cpu_exceeded(lambda: None, 0.25)  # no /proc
    cpu = readings(10.0, 10.01, None)  # the process ended
    assert not await cpu_exceeded(lambda: next(cpu), 0.01)
