"""Bad code never hurts the host: each kind ends as a readable ``CodeResult(ok=False)``, and the next step
works."""

from __future__ import annotations

import anyio
import pytest

from agentflow.sandbox import CodeErrorType, ExecutionLimits, ProcessSandbox

from .conftest import SHORT_WALL, HostTools, echo, gone, short_limits


async def assert_still_works(sandbox: ProcessSandbox, tools: HostTools) -> None:
    result = await sandbox.execute("echo(ok=True)['ok']", tools, tools.names)
    assert result.ok, result.error
    assert result.value is True


async def test_an_endless_loop_is_killed_at_the_wall_time(sandbox: ProcessSandbox, tools: HostTools) -> None:
    await sandbox.execute("kept = 1", tools)
    before = sandbox.pids
    started = anyio.current_time()
    result = await sandbox.execute("print('started')\nwhile True:\n    pass", tools, limits=short_limits())
    elapsed = anyio.current_time() - started
    assert not result.ok
    assert result.error_type is CodeErrorType.TIMEOUT
    assert result.state_lost
    assert result.stdout == "started\n"  # what it printed before it was killed is kept
    assert result.error is not None
    assert "ran longer than 1 s" in result.error
    assert "variables, imports and files from earlier steps are gone" in result.error
    assert elapsed < SHORT_WALL + 5  # returns on time (a generous bound: it is killed, not awaited)
    assert all(gone(pid) for pid in before)
    after = await sandbox.execute("'kept' in globals()", tools)
    assert after.value is False
    await assert_still_works(sandbox, tools)


async def test_a_step_waiting_on_a_tool_that_never_ends_stops_when_cancelled(sandbox: ProcessSandbox) -> None:
    # The wall time does not count time spent waiting for tools: the invoker's own timeout bounds those
    # (a run's tool_timeout and timeout in CodeAct). Cancelling the step still stops everything at once.
    never = anyio.Event()
    started = anyio.Event()

    async def hang(args: dict[str, object]) -> object:
        started.set()
        await never.wait()
        return None

    tools = HostTools(hang=hang, echo=echo)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(sandbox.execute, "hang()", tools, tools.names, short_limits())
        await started.wait()
        tasks.cancel_scope.cancel()
    await assert_still_works(sandbox, tools)


async def test_cpu_seconds_stop_a_busy_loop_and_the_state_survives(
    sandbox: ProcessSandbox, tools: HostTools
) -> None:
    await sandbox.execute("kept = 1", tools)
    limits = ExecutionLimits(wall_time=30, cpu_seconds=1)
    result = await sandbox.execute("n = 0\nwhile True:\n    n += 1", tools, limits=limits)
    assert result.error_type is CodeErrorType.CPU_LIMIT
    assert result.error is not None
    assert result.error.endswith("CpuTimeExceeded: the step used up its CPU time limit")
    assert not result.state_lost
    assert (await sandbox.execute("kept, n > 0", tools, limits=limits)).value == [1, True]


async def test_a_memory_bomb_raises_memory_error(sandbox: ProcessSandbox, tools: HostTools) -> None:
    await sandbox.execute("kept = 1", tools)
    result = await sandbox.execute("hog = bytearray(2 * 1024**3)", tools)
    assert result.error_type is CodeErrorType.MEMORY
    assert result.error is not None
    assert result.error.endswith("MemoryError")
    grow = await sandbox.execute(
        "chunks = []\nwhile True:\n    chunks.append(bytearray(10 * 1024**2))", tools
    )
    assert grow.error_type is CodeErrorType.MEMORY
    assert (await sandbox.execute("del chunks\nkept", tools)).value == 1


async def test_a_fork_bomb_cannot_fork(sandbox: ProcessSandbox, tools: HostTools) -> None:
    result = await sandbox.execute("import os\nwhile True:\n    os.fork()", tools)
    assert result.error_type is CodeErrorType.EXCEPTION
    assert result.error is not None
    assert "BlockingIOError" in result.error
    threads = await sandbox.execute("import threading\nthreading.Thread(target=print).start()", tools)
    assert threads.error is not None
    assert "can't start new thread" in threads.error
    await assert_still_works(sandbox, tools)


async def test_max_processes_allows_that_many_children(sandbox: ProcessSandbox, tools: HostTools) -> None:
    isolation = await sandbox.start(ExecutionLimits(max_processes=1))
    if not isolation.process_limit_enforced:
        pytest.skip(f"RLIMIT_NPROC cannot be exact here: {isolation.notes}")
    code = (
        "import os\n"
        "def spawn():\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        os._exit(0)\n"
        "    return pid\n"
        "first = spawn()\n"  # the one extra process allowed (it counts until it is reaped)
        "try:\n"
        "    spawn()\n"
        "    outcome = 'second allowed'\n"
        "except BlockingIOError:\n"
        "    outcome = 'second refused'\n"
        "os.waitpid(first, 0)\n"
        "os.waitpid(spawn(), 0)\n"  # room again once the first is reaped
        "outcome"
    )
    result = await sandbox.execute(code, tools, limits=ExecutionLimits(max_processes=1))
    assert result.value == "second refused", result


async def test_a_huge_output_is_bounded(sandbox: ProcessSandbox, tools: HostTools) -> None:
    result = await sandbox.execute("print('z' * 50_000_000)\n'survived'", tools)
    assert result.ok
    assert result.value == "survived"
    assert len(result.stdout) < 70 * 1024
    assert result.stdout.endswith(
        f"[... output truncated: {50_000_001 - 64 * 1024} more bytes not shown ...]"
    )


async def test_writing_a_file_over_max_file_bytes_fails(sandbox: ProcessSandbox, tools: HostTools) -> None:
    limits = ExecutionLimits(max_file_bytes=1024 * 1024)
    result = await sandbox.execute("open('big', 'wb').write(b'x' * (2 * 1024 * 1024))", tools, limits=limits)
    assert result.error is not None
    assert "File too large" in result.error
    await assert_still_works(sandbox, tools)


async def test_opening_more_than_max_open_files_fails(sandbox: ProcessSandbox, tools: HostTools) -> None:
    limits = ExecutionLimits(max_open_files=16)
    result = await sandbox.execute("handles = [open('f', 'w') for _ in range(100)]", tools, limits=limits)
    assert result.error_type is CodeErrorType.EXCEPTION
    assert result.error is not None
    assert "Too many open files" in result.error
    await sandbox.execute("del handles", tools, limits=limits)
    assert (await sandbox.execute("echo(ok=True)['ok']", tools, tools.names, limits)).value is True


async def test_exiting_the_process_is_reported_and_the_next_step_restarts(
    sandbox: ProcessSandbox, tools: HostTools
) -> None:
    await sandbox.execute("kept = 1", tools)
    result = await sandbox.execute("import os\nos._exit(3)", tools)
    assert result.error_type is CodeErrorType.KILLED
    assert result.state_lost
    assert result.error is not None
    assert "ended during the step (exit status 3)" in result.error
    assert (await sandbox.execute("'kept' in globals()", tools)).value is False
    await assert_still_works(sandbox, tools)


async def test_a_crash_of_the_interpreter_is_reported(sandbox: ProcessSandbox, tools: HostTools) -> None:
    result = await sandbox.execute("import ctypes\nctypes.string_at(0)", tools)
    assert result.error_type is CodeErrorType.KILLED
    assert "Segmentation fault" in result.stderr
    await assert_still_works(sandbox, tools)


async def test_garbage_on_the_channel_is_a_protocol_error(sandbox: ProcessSandbox, tools: HostTools) -> None:
    # The channel's descriptors are private, but code can find them; it only breaks its own sandbox.
    code = (
        "import os\n"
        "for fd in range(3, 8):\n"
        "    try:\n"
        "        os.write(fd, b'\\xff' * 64)\n"
        "    except OSError:\n"
        "        pass"
    )
    result = await sandbox.execute(code, tools)
    assert result.error_type is CodeErrorType.PROTOCOL
    assert result.state_lost
    await assert_still_works(sandbox, tools)


async def test_closing_the_channel_is_reported_as_killed(sandbox: ProcessSandbox, tools: HostTools) -> None:
    result = await sandbox.execute(
        "import os\nfor fd in range(3, 8):\n    os.close(fd) if fd != 5 else None", tools
    )
    assert result.error_type in (CodeErrorType.KILLED, CodeErrorType.PROTOCOL)
    await assert_still_works(sandbox, tools)
