"""``ExecutionLimits``: what one code step may use, as a single value object.

Only data and validation live here; ``launch.py`` turns the process-wide limits into ``setrlimit`` calls in
the child and ``ProcessSandbox`` turns ``wall_time`` and ``max_step_time`` into cancel scopes that kill the
process, and refuses tool calls beyond ``max_step_tool_calls``.
"""

from __future__ import annotations

from typing import Any

import attrs

__all__ = ["ExecutionLimits"]

KiB = 1024
MiB = 1024 * KiB


def _at_least(minimum: float, *, optional: bool = False) -> Any:
    def check(_instance: object, attribute: attrs.Attribute[Any], value: float | None) -> None:
        if value is None and optional:
            return
        if value is None or not value >= minimum:
            also = " or None" if optional else ""
            raise ValueError(
                f"ExecutionLimits.{attribute.name} must be at least {minimum}{also}, not {value!r}"
            )

    return check


@attrs.frozen
class ExecutionLimits:
    """Limits of one code step (``wall_time``, ``cpu_seconds``, outputs) and of the process running it.

    - ``wall_time``: seconds of the code's own time before the host kills the process; time while the code
      waits for a tool call of its own that runs on the host is not counted (the tool's timeout bounds each
      call), so a slow tool does not cost the sandbox its state; code computing while a call it fired runs
      is timed;
    - ``max_step_time``: seconds of the whole step, its tool calls included (``None``: no bound); past it
      the host kills the process (and the tool calls still running) and the step is a ``timeout`` error.
      It bounds code that calls tools in a loop, which ``wall_time`` does not see;
    - ``max_step_tool_calls``: tool calls one step may make (``None``: any number); a call beyond it is
      not run and raises ``ToolError`` in the code, saying so;
    - ``cpu_seconds``: CPU seconds per step; the code gets a ``cpu_limit`` error and the process lives on,
      unless it does not stop there (it is stuck in one long call into C such as ``sum(range(10**12))``
      that the error cannot interrupt, or it caught the error or lifted its limit): then, on Linux, the
      host kills the process a little later (``cpu_limit`` too, with ``state_lost``);
    - ``memory_bytes``: address space of the process (``RLIMIT_AS``): allocations beyond it raise
      ``MemoryError``;
    - ``max_open_files`` (``RLIMIT_NOFILE``), ``max_file_bytes`` (``RLIMIT_FSIZE``: a bigger write fails);
    - ``max_tmp_bytes``: the size of each of the sandbox's private ``/tmp``, ``/var/tmp`` and ``/dev/shm``
      (memory-backed, deleted with the sandbox), where it has them (``SandboxIsolation.private_tmp``); a
      write past it fails with ``ENOSPC``. Not counted in ``memory_bytes``;
    - ``max_processes``: extra processes or threads the code may start (0: no ``fork``, no threads);
    - ``max_output_bytes``: captured stdout and stderr each, per step (the rest is cut with a marker);
    - ``max_result_bytes``: the step's value as JSON; a bigger value is an ``output_limit`` error;
    - ``max_parallel_tool_calls``: tool calls from one step that the host runs at the same time; more wait
      for a slot (the code may make any number of calls at once: the channel cannot deadlock). The run's tool
      executor has its own limit, ``AgentOptions.max_tool_concurrency`` (8 by default); the lower of the two
      wins, so raise both to run more calls at once.

    The process-wide limits (memory, files, processes, temporary directories) are fixed when the process
    starts: a step with different ones restarts a persistent sandbox (its variables are lost, and the step's
    result says so).

    >>> ExecutionLimits(wall_time=5).wall_time
    5
    >>> ExecutionLimits(memory_bytes=1)
    Traceback (most recent call last):
    ...
    ValueError: ExecutionLimits.memory_bytes must be at least 67108864, not 1
    """

    wall_time: float = attrs.field(default=30.0, validator=_at_least(0.001))
    cpu_seconds: int = attrs.field(default=30, validator=_at_least(1))
    memory_bytes: int = attrs.field(default=512 * MiB, validator=_at_least(64 * MiB))
    max_open_files: int = attrs.field(default=64, validator=_at_least(16))
    max_processes: int = attrs.field(default=0, validator=_at_least(0))
    max_output_bytes: int = attrs.field(default=64 * KiB, validator=_at_least(0))
    max_file_bytes: int = attrs.field(default=64 * MiB, validator=_at_least(0))
    max_result_bytes: int = attrs.field(default=1 * MiB, validator=_at_least(64))
    max_parallel_tool_calls: int = attrs.field(default=16, validator=_at_least(1))
    max_step_time: float | None = attrs.field(default=300.0, validator=_at_least(0.001, optional=True))
    max_step_tool_calls: int | None = attrs.field(default=1000, validator=_at_least(1, optional=True))
    # At least 1 MiB: a tmpfs of size 0 would have no limit at all.
    max_tmp_bytes: int = attrs.field(default=64 * MiB, validator=_at_least(1 * MiB))

    @property
    def process_limits(self) -> tuple[int, int, int, int, int]:
        """The limits fixed for a process's lifetime: memory, open files, processes, file size, and the size
        of its private temporary directories."""
        return (
            self.memory_bytes,
            self.max_open_files,
            self.max_processes,
            self.max_file_bytes,
            self.max_tmp_bytes,
        )
