"""Sandbox processes are started off the event loop's thread (a fork and exec there would stall every task
of the loop), by one thread that lives on (a parent-death signal follows the thread that started the
process), and a start that is cancelled leaves no process behind."""

from __future__ import annotations

import subprocess
import threading
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from agentflow.sandbox import ProcessSandbox
from agentflow.sandbox import spawn as spawn_module
from agentflow.sandbox.spawn import spawn

from .conftest import HostTools, gone


class StartRecorder:
    """Replaces ``subprocess.Popen``: records the thread of every start."""

    def __init__(self) -> None:
        self.threads: list[threading.Thread] = []
        self.original = subprocess.Popen

    def __call__(self, *args: Any, **kwargs: Any) -> subprocess.Popen[Any]:
        self.threads.append(threading.current_thread())
        return self.original(*args, **kwargs)


async def test_sandbox_processes_start_off_the_loop_thread_in_one_lasting_thread(
    monkeypatch: pytest.MonkeyPatch, tools: HostTools
) -> None:
    recorder = StartRecorder()
    monkeypatch.setattr(subprocess, "Popen", recorder)
    loop_thread = threading.current_thread()
    async with ProcessSandbox() as first, ProcessSandbox() as second:
        await first.start()
        await second.start()
        assert (await first.execute("6 * 7", tools)).value == 42
    assert recorder.threads
    assert loop_thread not in recorder.threads
    starters = {thread for thread in recorder.threads if thread.name.startswith("agentflow-sandbox-spawn")}
    assert len(starters) == 1
    assert all(thread.is_alive() for thread in starters)


async def test_a_start_cancelled_while_the_process_starts_leaves_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gate = threading.Event()
    started: list[subprocess.Popen[bytes]] = []
    original = spawn_module._popen

    def held(argv: list[str], options: dict[str, Any]) -> subprocess.Popen[bytes]:
        gate.wait(30)
        process = original(argv, options)
        started.append(process)
        return process

    monkeypatch.setattr(spawn_module, "_popen", held)
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(spawn, ["sleep", "60"])
            await anyio.wait_all_tasks_blocked()
            scope.cancel()
            gate.set()
    assert scope.cancelled_caught
    (process,) = started
    assert process.returncode is not None  # killed and reaped
    assert gone(process.pid)


async def test_the_pipes_report_the_end_of_the_process() -> None:
    process = await spawn(["sh", "-c", "read line; echo got $line; echo oops >&2"])
    await process.stdin.send(b"hello\n")
    out = b"".join([chunk async for chunk in process.stdout])
    err = b"".join([chunk async for chunk in process.stderr])
    assert (out, err) == (b"got hello\n", b"oops\n")
    assert await process.wait() == 0
    with pytest.raises((anyio.BrokenResourceError, anyio.ClosedResourceError)):  # noqa: PT012
        for _ in range(64):  # the write end notices the closed pipe once it has tried
            await process.stdin.send(b"x" * 65536)
            await anyio.lowlevel.checkpoint()
    await process.aclose()


async def test_a_command_that_cannot_start_raises_os_error() -> None:
    with pytest.raises(FileNotFoundError):
        await spawn(["/nonexistent/agentflow-binary"])
