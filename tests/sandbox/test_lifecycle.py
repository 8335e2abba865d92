"""Starting, cancelling and closing sandboxes: processes never outlive them, runs never disturb each other."""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

import anyio
import pytest

from agentflow.sandbox import (
    CodeErrorType,
    CodeExecutor,
    CodeResult,
    ExecutionLimits,
    ProcessSandbox,
    SandboxClosedError,
    SandboxIsolation,
    SandboxStartError,
    SandboxUnavailableError,
    SubprocessExecutor,
    launch,
)
from agentflow.sandbox.process_sandbox import _require_strict_isolation

from .conftest import HostTools, echo, gone, short_limits


def started_tool() -> tuple[HostTools, anyio.Event]:
    """A ``started()`` tool the code calls first, so the test knows the code is running."""
    running = anyio.Event()

    async def started(args: dict[str, Any]) -> Any:
        running.set()
        return None

    return HostTools(started=started, echo=echo), running


async def test_it_is_a_code_executor() -> None:
    assert SubprocessExecutor is ProcessSandbox
    assert isinstance(ProcessSandbox(), CodeExecutor)


def test_its_options_are_readable() -> None:
    default = ProcessSandbox()
    assert (default.persistent, default.network, default.site_packages) == (True, False, False)
    custom = ProcessSandbox(persistent=False, network=True, site_packages=True)
    assert (custom.persistent, custom.network, custom.site_packages) == (False, True, True)


async def test_start_reports_the_isolation_and_the_pids(sandbox: ProcessSandbox) -> None:
    assert sandbox.isolation is None
    assert sandbox.pids == ()
    isolation = await sandbox.start()
    assert sandbox.isolation is isolation
    assert isolation.resource_limits
    assert sandbox.pids
    assert not any(gone(pid) for pid in sandbox.pids)


async def test_cancelling_execute_kills_the_process_at_once(sandbox: ProcessSandbox) -> None:
    tools, running = started_tool()
    await sandbox.start()
    pids = sandbox.pids
    outcome: list[CodeResult] = []

    async def run() -> None:
        outcome.append(await sandbox.execute("started()\nwhile True:\n    pass", tools, tools.names))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(run)
        await running.wait()
        tasks.cancel_scope.cancel()
    assert outcome == []
    assert all(gone(pid) for pid in pids)  # killed and reaped: not even a zombie
    assert sandbox.pids == ()
    after = await sandbox.execute("echo(back=True)", tools, tools.names)  # a new process serves the next step
    assert after.value == {"back": True}


async def test_aclose_during_a_step_stops_it(sandbox: ProcessSandbox) -> None:
    tools, running = started_tool()
    await sandbox.start()
    pids = sandbox.pids
    errors: list[BaseException] = []

    async def run() -> None:
        try:
            await sandbox.execute("started()\nwhile True:\n    pass", tools, tools.names)
        except SandboxClosedError as exc:
            errors.append(exc)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(run)
        await running.wait()
        await sandbox.aclose()
    assert len(errors) == 1
    assert all(gone(pid) for pid in pids)


async def test_a_closed_sandbox_refuses_work_and_closing_twice_is_fine(tools: HostTools) -> None:
    box = ProcessSandbox()
    await box.execute("1", tools)
    pids = box.pids
    await box.aclose()
    await box.aclose()
    assert all(gone(pid) for pid in pids)
    with pytest.raises(SandboxClosedError):
        await box.execute("1", tools)
    with pytest.raises(SandboxClosedError):
        await box.start()


async def test_two_sandboxes_run_side_by_side_and_one_timing_out_leaves_the_other(tools: HostTools) -> None:
    results: dict[str, list[CodeResult]] = {"slow": [], "busy": []}

    async with ProcessSandbox() as slow, ProcessSandbox() as busy:

        async def run_slow() -> None:
            results["slow"].append(
                await slow.execute("x = 'slow'\nwhile True:\n    pass", tools, limits=short_limits())
            )

        async def run_busy() -> None:
            await busy.execute("x = 'busy'", tools)
            for n in range(20):
                results["busy"].append(await busy.execute(f"echo(n={n})['n'], x", tools, tools.names))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(run_slow)
            tasks.start_soon(run_busy)
        assert (await slow.execute("1 + 1", tools)).value == 2
    assert results["slow"][0].error_type == "timeout"
    assert [r.value for r in results["busy"]] == [[n, "busy"] for n in range(20)]


async def test_new_process_limits_restart_the_sandbox_and_say_so(
    sandbox: ProcessSandbox, tools: HostTools
) -> None:
    await sandbox.execute("kept = 1", tools)
    same = await sandbox.execute("kept", tools, limits=ExecutionLimits(wall_time=5, cpu_seconds=3))
    assert same.value == 1  # per-step limits change nothing
    changed = await sandbox.execute("'kept' in globals()", tools, limits=ExecutionLimits(max_open_files=32))
    assert changed.value is False
    assert changed.stderr.startswith("[note: the execution limits changed, so the sandbox was restarted")


async def test_a_process_killed_between_steps_is_replaced_and_the_loss_reported(
    sandbox: ProcessSandbox, tools: HostTools
) -> None:
    await sandbox.execute("kept = 1", tools)
    os.kill(sandbox.pids[-1], signal.SIGKILL)
    result = await sandbox.execute("'kept' in globals()", tools)
    # Either the step found the process dead, or the process was already reaped and replaced first.
    if result.ok:
        assert result.value is False
        assert result.stderr.startswith("[note: its process had ended, so the sandbox was restarted")
    else:
        assert result.error_type is CodeErrorType.KILLED
        assert result.state_lost
    assert (await sandbox.execute("echo(n=1)", tools, tools.names)).value == {"n": 1}


async def test_a_python_that_does_not_exist_is_a_start_error(tools: HostTools) -> None:
    async with ProcessSandbox(python="/nonexistent/python3") as box:
        with pytest.raises(SandboxStartError, match="no Python interpreter at '/nonexistent/python3'"):
            await box.execute("1", tools)


async def test_strict_mode_lists_what_is_missing() -> None:
    weak = SandboxIsolation(
        platform="darwin",
        python="python3",
        namespaces=False,
        network_isolated=False,
        host_processes_hidden=False,
        separate_user=False,
        resource_limits=True,
        process_limit_enforced=False,
        notes=("no namespaces on darwin",),
    )
    with pytest.raises(SandboxUnavailableError) as caught:
        _require_strict_isolation(weak, network=False)
    assert str(caught.value) == (
        "strict sandbox isolation is not available here: the code would run as your uid and could read and "
        "write your files (~/.ssh, ~/.aws, .env); a uid of its own needs a host running as root (e.g. in a "
        "container) and separate_user=True; the host's environment is readable; the network is not "
        "isolated (no namespaces on darwin). Fix what is missing, use strict=False and accept it (see "
        "docs/sandbox-security.md), or plug in a container or VM CodeExecutor"
    )


async def test_strict_mode_runs_where_the_isolation_holds(tools: HostTools) -> None:
    async with ProcessSandbox(strict=True) as box:
        isolation = await box.start()
        if not (isolation.host_environment_protected and isolation.network_isolated):
            pytest.fail("unreachable: strict start must have raised")
        assert (await box.execute("6 * 7", tools)).value == 42


async def test_windows_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "win32")
    with pytest.raises(SandboxUnavailableError, match="needs a POSIX system"):
        ProcessSandbox()
    with pytest.raises(SandboxUnavailableError, match="needs a POSIX system"):
        await launch._probe(python=None, network=False, switch_user=False)


async def test_without_unshare_a_plain_process_is_used_and_said_so(
    monkeypatch: pytest.MonkeyPatch, tools: HostTools
) -> None:
    monkeypatch.setattr("agentflow.sandbox.launch.shutil.which", lambda name: None)
    monkeypatch.setattr(launch, "_PLANS", {})
    plan = await launch.plan_launch(python=None, network=False, switch_user=launch.can_switch_user())
    assert plan.prefix == ()
    assert not plan.isolation.namespaces
    assert not plan.isolation.network_isolated
    assert "no 'unshare' binary (util-linux): no namespaces" in plan.isolation.notes
    assert "network is NOT isolated" in plan.isolation.notes
    async with ProcessSandbox() as box:
        assert (await box.execute("import os\nos.getpid() != 1", tools)).value is True
        fork = await box.execute("os.fork()", tools)
        assert fork.error is not None
        assert "BlockingIOError" in fork.error
        if plan.isolation.separate_user:  # a different uid cannot open the host's environ
            peek = await box.execute(f"open('/proc/{os.getpid()}/environ').read()", tools)
            assert peek.error is not None
            assert "PermissionError" in peek.error


async def test_without_a_pid_namespace_processes_the_code_started_die_with_it(
    monkeypatch: pytest.MonkeyPatch, tools: HostTools
) -> None:
    monkeypatch.setattr("agentflow.sandbox.launch.shutil.which", lambda name: None)
    monkeypatch.setattr(launch, "_PLANS", {})
    limits = ExecutionLimits(max_processes=2)
    fork = "import os, time\npid = os.fork()\nif pid == 0:\n    time.sleep(60)\n    os._exit(0)\npid"
    async with ProcessSandbox() as box:
        assert not (await box.start(limits)).host_processes_hidden
        started = await box.execute(fork, tools, limits=limits)
        assert started.ok, started.error
        exited = os.pidfd_open(started.value)  # readable once that process has exited
    try:
        with anyio.fail_after(5):  # a guard only: SIGKILL was sent when the sandbox closed
            await anyio.wait_readable(exited)
    finally:
        os.close(exited)
