"""With ``max_processes > 0``, a process the code started that goes on using CPU after its step ended is
noticed like a thread would be: the sandbox is replaced before the next step, which says so."""

from __future__ import annotations

import sys

import anyio
import pytest

from agentflow.sandbox import ExecutionLimits, ProcessSandbox
from agentflow.sandbox.cpu_watch import cpu_exceeded

from .conftest import HostTools

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the idle check reads /proc")

LIMITS = ExecutionLimits(max_processes=2)
SPINNER = "import os\nif os.fork() == 0:\n    while True:\n        pass\n'started'"
DAEMON = """
import os
pid = os.fork()
if pid == 0:
    if os.fork() == 0:  # its parent exits at once: adopted by the runner, PID 1 of its namespace
        while True:
            pass
    os._exit(0)
os.waitpid(pid, 0)
'started'
"""


@pytest.mark.parametrize("code", [SPINNER, DAEMON], ids=["child", "orphan"])
async def test_a_forked_process_spinning_between_steps_gets_the_sandbox_replaced(
    sandbox: ProcessSandbox, code: str
) -> None:
    isolation = await sandbox.start(LIMITS)
    if code == DAEMON and not isolation.host_processes_hidden:
        pytest.skip("no PID namespace here: an orphan leaves the runner's tree")
    started = await sandbox.execute(code, HostTools(), limits=LIMITS)
    assert started.value == "started", started.error
    child = sandbox._child
    assert child is not None
    runner = sandbox.pids[-1]
    with anyio.fail_after(30):  # a guard only: the spinner uses CPU while no step runs
        assert await cpu_exceeded(lambda: child.cpu_time(descendants=True), 1.5)
    assert (child.cpu_time() or 0.0) < 1.0  # the runner itself stays idle: only the spinner counts
    result = await sandbox.execute("'next'", HostTools(), limits=LIMITS)
    assert result.value == "next"
    assert result.stderr.startswith("[note: its code went on running after its step had ended (")
    assert runner not in sandbox.pids


async def test_a_child_that_ran_during_its_step_does_not_count_against_the_next(
    sandbox: ProcessSandbox,
) -> None:
    code = (
        "import os, time\npid = os.fork()\nif pid == 0:\n    end = time.process_time() + 1.5\n"
        "    while time.process_time() < end:\n        pass\n    os._exit(0)\nos.waitpid(pid, 0)\n'done'"
    )
    first = await sandbox.execute(code, HostTools(), limits=LIMITS)
    assert first.value == "done", first.error
    runner = sandbox.pids[-1]
    again = await sandbox.execute("'next'", HostTools(), limits=LIMITS)
    assert again.value == "next"
    assert again.stderr == ""
    assert runner in sandbox.pids
