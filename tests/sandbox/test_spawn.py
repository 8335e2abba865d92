"""Sandbox processes are started off the event loop's thread (a fork and exec there would stall every task
of the loop), by one thread that lives on (a parent-death signal follows the thread that started the
process), and a start that is cancelled leaves no process behind. Nothing waits without bound: a start held
up behind the spawner thread can be cancelled, ``aclose`` kills a process that does not end, and one that
even SIGKILL cannot end at once is left to be reaped later while other starts go on."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread
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


async def spawner_done() -> None:
    """Wait until the spawner thread has finished everything submitted so far (and its callbacks)."""
    await asyncio.wrap_future(spawn_module._spawn_thread().submit(lambda: None))


async def test_a_start_cancelled_while_the_process_starts_leaves_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    entered, gate = threading.Event(), threading.Event()
    started: list[subprocess.Popen[bytes]] = []
    original = spawn_module._popen

    def held(argv: list[str], options: dict[str, Any]) -> subprocess.Popen[bytes]:
        entered.set()
        gate.wait(5)
        process = original(argv, options)
        started.append(process)
        return process

    monkeypatch.setattr(spawn_module, "_popen", held)
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(spawn, ["sleep", "60"])
            assert await anyio.to_thread.run_sync(entered.wait, 5)  # the start is under way
            scope.cancel()
    assert scope.cancelled_caught
    # The cancelled start returned while the spawner thread was still held: its wait was not shielded.
    assert not gate.is_set()
    assert started == []
    gate.set()
    await spawner_done()
    (process,) = started
    assert process.returncode is not None  # killed and reaped, on the spawner thread
    assert gone(process.pid)


async def test_a_start_queued_behind_a_held_spawner_thread_is_cancelled_before_it_begins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gate = threading.Event()
    argvs: list[list[str]] = []
    original = spawn_module._popen

    def held(argv: list[str], options: dict[str, Any]) -> subprocess.Popen[bytes]:
        argvs.append(argv)
        gate.wait(5)
        return original(argv, options)

    monkeypatch.setattr(spawn_module, "_popen", held)
    async with anyio.create_task_group() as tasks:
        first: list[Any] = []

        async def first_start() -> None:
            first.append(await spawn(["true"]))

        tasks.start_soon(first_start)
        await anyio.wait_all_tasks_blocked()
        with anyio.move_on_after(0.05) as scope:
            await spawn(["sleep", "60"])
        assert scope.cancelled_caught
        gate.set()
    await spawner_done()
    assert argvs == [["true"]]  # the cancelled start never ran
    await first[0].aclose()


@pytest.fixture
def left_behind() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes a test leaves running on purpose: SIGKILLed and reaped at its end."""
    processes: list[subprocess.Popen[bytes]] = []
    yield processes
    for process in processes:
        if process.returncode is None:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
    spawn_module._unreaped[:] = [p for p in spawn_module._unreaped if p not in processes]


async def test_aclose_kills_a_process_that_does_not_end_after_its_grace() -> None:
    process = await spawn(["sleep", "60"])  # closing its stdin does not end it
    with anyio.fail_after(5):  # (``aclose`` is shielded: this only bounds the test if it never returned)
        await process.aclose(grace=0.05)
    assert process.returncode == -signal.SIGKILL
    assert gone(process.pid)


async def test_a_process_the_kill_cannot_end_is_left_and_later_starts_go_on(
    monkeypatch: pytest.MonkeyPatch, left_behind: list[subprocess.Popen[bytes]]
) -> None:
    # An unkillable process (uninterruptible sleep) is simulated by a SIGKILL that is never sent.
    monkeypatch.setattr(spawn_module, "_sigkill", lambda popen, *, group: None)
    monkeypatch.setattr(spawn_module, "REAP_WAIT", 0.05)
    process = await spawn(["sleep", "60"])
    popen = process._popen
    left_behind.append(popen)
    with anyio.fail_after(5):
        await process.aclose(grace=0.05)
    assert popen.returncode is None
    assert popen in spawn_module._unreaped
    # The spawner thread is free: the next start goes on, and reaps the process once it has ended.
    os.kill(popen.pid, signal.SIGKILL)
    # Until it has ended (``WNOWAIT``: without reaping it, which is the next start's job).
    await anyio.to_thread.run_sync(os.waitid, os.P_PID, popen.pid, os.WEXITED | os.WNOWAIT)
    other = await spawn(["true"])
    assert popen.returncode == -signal.SIGKILL
    assert popen not in spawn_module._unreaped
    await other.aclose()


async def test_a_start_whose_pipes_cannot_be_connected_leaves_no_wait_on_the_spawner_thread(
    monkeypatch: pytest.MonkeyPatch, left_behind: list[subprocess.Popen[bytes]]
) -> None:
    made: list[subprocess.Popen[bytes]] = []
    original = spawn_module._popen

    def recorded(argv: list[str], options: dict[str, Any]) -> subprocess.Popen[bytes]:
        made.append(original(argv, options))
        return made[-1]

    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise OSError("no pipes today")

    monkeypatch.setattr(spawn_module, "_popen", recorded)
    monkeypatch.setattr(spawn_module, "_connect", broken)
    monkeypatch.setattr(spawn_module, "_sigkill", lambda popen, *, group: None)  # unkillable, as above
    monkeypatch.setattr(spawn_module, "REAP_WAIT", 0.05)
    with anyio.fail_after(5), pytest.raises(OSError, match="no pipes today"):
        await spawn(["sleep", "60"])
    (popen,) = made
    left_behind.append(popen)
    assert popen in spawn_module._unreaped
    monkeypatch.undo()
    with anyio.fail_after(5):  # the spawner thread is not waiting for it
        other = await spawn(["true"])
    await other.aclose()


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
