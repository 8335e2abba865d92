"""A persistent process idle between two steps uses a little CPU of its own (its watch thread wakes ten
times a second): after a long pause that must not look like code that went on running, which gets the
process replaced and its state lost. Time and CPU are faked here: no test waits twenty minutes."""

from __future__ import annotations

from typing import Any

import pytest

from agentflow.sandbox import ProcessSandbox, process_sandbox
from agentflow.sandbox.child_process import SandboxProcess

from .conftest import HostTools


class FakeIdle:
    """Replaces the clock of the time between steps, and adds CPU seconds to what the process used."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = 1000.0
        self.extra_cpu = 0.0
        real_cpu_time = SandboxProcess.cpu_time

        def cpu_time(child: SandboxProcess, *, descendants: bool = False) -> float | None:
            used = real_cpu_time(child, descendants=descendants)
            return None if used is None else used + self.extra_cpu

        monkeypatch.setattr(process_sandbox, "_idle_clock", lambda: self.now)
        monkeypatch.setattr(SandboxProcess, "cpu_time", cpu_time)

    def pause(self, seconds: float, cpu: float) -> None:
        self.now += seconds
        self.extra_cpu += cpu


async def test_twenty_idle_minutes_of_the_watch_thread_keep_the_state(
    sandbox: ProcessSandbox, tools: HostTools, monkeypatch: pytest.MonkeyPatch
) -> None:
    idle = FakeIdle(monkeypatch)
    assert (await sandbox.execute("x = 41", tools)).ok
    if sandbox._child is None or sandbox._child.cpu_time() is None:
        pytest.skip("no /proc to read a process's CPU time from")
    idle.pause(20 * 60, cpu=1.02)  # what its watch thread uses in that time (~0.85 ms per second)
    kept = await sandbox.execute("x + 1", tools)
    assert kept.ok, kept.error
    assert kept.value == 42
    assert kept.stderr == ""


async def test_code_that_goes_on_running_between_steps_still_gets_the_process_replaced(
    sandbox: ProcessSandbox, tools: HostTools, monkeypatch: pytest.MonkeyPatch
) -> None:
    idle = FakeIdle(monkeypatch)
    assert (await sandbox.execute("x = 41", tools)).ok
    if sandbox._child is None or sandbox._child.cpu_time() is None:
        pytest.skip("no /proc to read a process's CPU time from")
    idle.pause(2.0, cpu=1.5)  # most of a core, for two seconds
    replaced: Any = await sandbox.execute("'x' in globals()", tools)
    assert replaced.value is False
    assert replaced.stderr.startswith("[note: its code went on running after its step had ended")
