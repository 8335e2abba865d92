"""The host's backstop for ``cpu_seconds``: end a step that is past its CPU time where the runner cannot.

The runner enforces ``cpu_seconds`` itself: an ``RLIMIT_CPU`` soft limit raises ``SIGXCPU``, whose handler
raises ``CpuTimeExceeded`` in the code and the process lives on. But a Python signal handler runs only
between bytecodes, so code spinning inside one long C call (``sum(range(10**12))``) never sees it. The
kernel cannot be asked to step in either: a hard ``RLIMIT_CPU`` would kill the process, but an unprivileged
process can never raise its hard limit again, so a persistent sandbox could not give its next step a fresh
budget; and the runner is PID 1 of its PID namespace, which ignores every signal whose default action would
kill it (``SIGXCPU``, ``SIGPROF``) except ``SIGKILL``.

So the host watches the runner's CPU time while a step runs (``SandboxProcess.cpu_time``, from ``/proc``)
and once the step has used ``cpu_seconds + CPU_GRACE`` it ends the step: ``ProcessSandbox`` kills the
process and reports a ``cpu_limit`` error with ``state_lost``. Where ``/proc`` cannot be read (macOS) there
is no watch, and the wall-clock kill stays the bound.

This module only decides when; it holds no process and kills nothing.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio

__all__ = ["CPU_GRACE", "cpu_exceeded"]

CPU_GRACE = 2.0
"""CPU seconds a step may use past ``cpu_seconds`` before the host ends it: one because the runner's soft
limit is set in whole seconds (rounded up), one for its ``SIGXCPU`` handler to run when it can."""

_MIN_POLL = 0.05
_MAX_POLL = 1.0


async def cpu_exceeded(cpu_time: Callable[[], float | None], budget: float) -> bool:
    """Wait until the CPU time that ``cpu_time`` reports has grown by more than ``budget`` seconds since
    the call (``True``), or until it cannot be read (``False``: no ``/proc``, or the process is gone).

    It reads rarely: a single thread cannot use CPU faster than the clock runs, so it sleeps for the budget
    still left, at most ``_MAX_POLL`` (threads can use it faster) and at least ``_MIN_POLL``.

    >>> anyio.run(cpu_exceeded, lambda: None, 2.0)  # nothing to watch
    False
    """
    start = cpu_time()
    if start is None:
        return False
    used: float | None = start
    while used is not None:
        left = budget - (used - start)
        if left < 0:
            return True
        await anyio.sleep(min(max(left, _MIN_POLL), _MAX_POLL))
        used = cpu_time()
    return False
