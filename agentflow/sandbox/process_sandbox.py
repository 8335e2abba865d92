"""``ProcessSandbox``: the default ``CodeExecutor`` — code runs in a separate, isolated Python process.

One sandbox serves one agent run. Steps run one at a time; with ``persistent=True`` (the default) they
share one interpreter, like notebook cells, and with ``persistent=False`` every step gets a fresh process
and working directory. Each step:

- sends the code to the child and serves the tool calls it makes (concurrently, at most
  ``max_parallel_tool_calls`` tools running) through the host's ``ToolInvoker`` — the child never runs a
  tool itself; with a ``ParameterizedInvoker`` the code may also pass a tool's arguments by position;
- collects the output the child streams (bounded), then its outcome; with an ``on_output`` listener, each
  piece is also handed to it as it arrives (what the capture keeps, nothing past its budget), never waiting
  for it;
- is bounded by ``wall_time`` of the code's own time: the time while the code waits for a tool call of its
  own that runs on the host is not counted (the invoker's tool timeout bounds each call; see ``_CodeClock``).
  Past it the process is killed and the step returns a ``timeout`` result. A killed persistent process is
  replaced at the next step (its variables are gone; the result says so with ``state_lost``; after a
  cancelled step, which returns nothing, the next step's ``stderr`` note says so);
- is bounded by ``max_step_time`` in all, tool calls included (code calling a tool in a loop), the same
  way, and by ``max_step_tool_calls``: the runner refuses a call beyond it (``ToolError`` in the code), and
  a process that sends one anyway (code writing to the channel itself) is killed;
- is bounded by ``cpu_seconds`` in the child (a ``cpu_limit`` error, the process lives on) and, for code
  that does not stop there (a long call into C, or code that lifted or caught the limit), by the host: past
  ``cpu_seconds + CPU_GRACE`` CPU seconds the process is killed and the step is a ``cpu_limit`` error with
  ``state_lost`` (see ``cpu_watch``).

The channel cannot deadlock: an answer is written without holding a tool slot, so a slot frees as soon as
its tool finishes, and the child may write any number of calls before it reads an answer (``map_tool``
does). While every slot is taken, the host reads no further frame until one frees: a child writing much
output meanwhile waits on its pipe for that long, no longer.

The child is not trusted: a frame that breaks the protocol, a ``done`` for another step, or a process that
keeps using CPU between steps (code that went on after its step ended) gets the process killed.

Cancelling ``execute`` kills the process before the cancellation propagates. Code that is not valid text
(a lone surrogate) is a ``syntax`` error without reaching the process. What is isolated, and how,
is decided in ``launch.py`` and reported by ``isolation``; see docs/sandbox-security.md.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Sequence
from types import TracebackType
from typing import Any, Literal

import anyio
import attrs

from ..result import ToolResult
from .child_process import ChildExited, SandboxProcess
from .code_result import CodeErrorType, CodeResult
from .cpu_watch import CPU_GRACE, cpu_exceeded
from .errors import SandboxClosedError, SandboxUnavailableError
from .executor import OutputListener, ToolInvoker
from .frames import (
    MAX_CHILD_READS,
    CodeWaits,
    FrameError,
    OutputChunk,
    Ready,
    StepDone,
    ToolCallRequest,
    exec_frame,
    max_frame_bytes,
    tool_failure_frame,
    tool_result_frame,
)
from .launch import SandboxIsolation, can_switch_user, host_site_dirs, plan_launch
from .limits import ExecutionLimits
from .step_output import StepOutput
from .tool_parameters import tool_parameters

__all__ = ["ProcessSandbox", "SubprocessExecutor"]

_DEFAULT_LIMITS = ExecutionLimits()
_LOST = "the sandbox was restarted, so variables, imports and files from earlier steps are gone"
_IDLE_CPU = 1.0
"""CPU seconds a persistent process may use between two steps (with the processes its code started, when
``max_processes > 0``), plus ``_IDLE_CPU_RATE`` per second between them. Idle, it waits on its channel
(late tool answers cost it almost nothing); more means code kept running after its step ended (it wrote a
``done`` frame of its own, left a thread or a process running), unwatched by ``wall_time``."""
_IDLE_CPU_RATE = 0.01
"""CPU seconds per second between steps that an idle process may use on top of ``_IDLE_CPU``: its watch
thread wakes ten times a second (under a millisecond of CPU per second), which after a long pause (a user
who answers twenty minutes later) must not look like code that went on running. Code that does go on
running uses a hundred times more."""
_idle_clock = time.monotonic
"""The clock that measures the time between steps (a test may replace it)."""


class _CodeClock:
    """The wall time a step's code has used: all of the step's time but that while the code waits for a
    tool call of its own that runs on the host.

    Time waiting for a tool is the tool's (its timeout bounds it), so a slow tool does not end the step;
    code that goes on computing while its call runs (an ``acall_tool`` it does not await yet) is timed. The
    child says when it waits (``CodeWaits``, ``ToolCallRequest.waits``) and is trusted no further: the clock
    stops only while one of its calls runs too, so a child that claims to wait gains at most its calls'
    time, as before it said anything. While every tool slot is taken the host reads no further frame
    (``holding``): what the child said meanwhile is unknown, and the clock stops then too.
    """

    def __init__(self, budget: float) -> None:
        self._budget = budget
        self._used = 0.0
        self._since = anyio.current_time()
        self._tools = 0
        self._waiting = False
        self._holding = False
        self._stopped = False
        self._resumed: anyio.Event | None = None  # what ``run_out`` waits on while the clock is stopped

    @property
    def stopped(self) -> bool:
        """Whether the code's time is not counted now."""
        return self._stopped

    def tool_started(self, *, waits: bool = False) -> None:
        """A call of the code runs on the host; ``waits``: its frame said the code now waits for it."""
        self._tools += 1
        if waits:
            self._waiting = True
        self._update()

    def tool_finished(self) -> None:
        self._tools -= 1
        if self._tools == 0:
            # Whatever the code waited for has been answered: a wait it did not take back is over.
            self._waiting = False
        self._update()

    def code_waits(self, waiting: bool) -> None:
        """The child said it started (or stopped) waiting; a wait while no call of it runs says nothing."""
        self._waiting = waiting and self._tools > 0
        self._update()

    def holding(self, holding: bool) -> None:
        """Whether the host holds back the child's next frames (every tool slot is taken)."""
        self._holding = holding
        self._update()

    def _update(self) -> None:
        stopped = self._tools > 0 and (self._waiting or self._holding)
        if stopped == self._stopped:
            return
        now = anyio.current_time()
        self._stopped = stopped
        if stopped:
            self._used += now - self._since
            return
        self._since = now
        resumed, self._resumed = self._resumed, None
        if resumed is not None:
            resumed.set()

    async def run_out(self) -> None:
        """Return once the code has used up its budget."""
        # A stop only moves the end later: the sleep then ends early, and the time left is worked out again.
        while True:
            if self._stopped:
                self._resumed = resumed = anyio.Event()
                await resumed.wait()
                continue
            left = self._budget - self._used - (anyio.current_time() - self._since)
            if left <= 0:
                return
            await anyio.sleep(left)


class _Stop:
    """Why the host ended a step before its outcome came: the first watch to end it says."""

    __slots__ = ("lifted", "reason")

    def __init__(self) -> None:
        self.reason: Literal["wall_time", "step_time", "cpu"] | None = None
        self.lifted = False
        """(``cpu``) whether the code had raised its own CPU limit."""

    def end(self, step: anyio.CancelScope, reason: Literal["wall_time", "step_time", "cpu"]) -> None:
        if self.reason is None:
            self.reason = reason
        step.cancel()


class ProcessSandbox:
    """Runs CodeAct code in a separate, resource-limited, network-less Python process.

    - ``persistent``: keep one interpreter for all steps (variables survive), else a fresh one per step;
    - ``python``: the interpreter (default: this one, or a system ``python3`` when the sandbox's own uid
      cannot run this one); only its standard library is needed;
    - ``network``: allow network access (default: none, where the OS can take it away);
    - ``site_packages``: let code import installed packages (default: stdlib only). When the sandbox runs
      another interpreter than the host's (see ``python``) the host's package directories are added to it,
      which needs the same Python minor version and directories the sandbox's user can read; else the
      start fails with ``SandboxStartError`` rather than the code finding its imports missing;
    - ``separate_user``: when the host runs as root, run the sandbox under a fresh unprivileged uid
      (otherwise the code runs as the host's uid and can read and write its files; ``isolation.notes``
      says so, and ``strict`` refuses it);
    - ``strict``: refuse to run (``SandboxUnavailableError``) unless the code runs under a uid of its own
      (a host running as root, with ``separate_user``), the host's environment is unreadable, the network
      is cut (when ``network=False``) and resource limits apply;
    - ``startup_timeout``: how long a new process gets to start.

    Use it as an async context manager, or call ``aclose()``; ``isolation`` reports what holds here.
    Steps of one sandbox run one at a time (a second ``execute`` waits). On Windows the constructor
    raises ``SandboxUnavailableError``.
    """

    def __init__(
        self,
        *,
        persistent: bool = True,
        python: str | None = None,
        network: bool = False,
        site_packages: bool = False,
        separate_user: bool = True,
        strict: bool = False,
        startup_timeout: float = 10.0,
        workdir_parent: str | None = None,
    ) -> None:
        if sys.platform == "win32":
            raise SandboxUnavailableError(
                "ProcessSandbox needs a POSIX system (resource limits, process groups, signals); "
                "on Windows plug in a container or remote CodeExecutor instead"
            )
        self._persistent = persistent
        self._python = python
        self._network = network
        self._site_packages = site_packages
        self._separate_user = separate_user
        self._strict = strict
        self._startup_timeout = startup_timeout
        self._workdir_parent = workdir_parent
        self._lock = anyio.Lock()
        self._child: SandboxProcess | None = None
        self._isolation: SandboxIsolation | None = None
        self._closed = False
        self._step = 0
        self._note: str | None = None
        self._idle_cpu: float | None = None  # the process's CPU time when its last step ended
        self._idle_since = 0.0  # and when (``_idle_clock``)

    @property
    def isolation(self) -> SandboxIsolation | None:
        """What the sandbox is isolated from on this machine (known once it has started)."""
        return self._isolation

    @property
    def persistent(self) -> bool:
        """Whether variables survive between steps."""
        return self._persistent

    @property
    def network(self) -> bool:
        """Whether code may use the network (``network=True``); otherwise it has none where the OS allows."""
        return self._network

    @property
    def site_packages(self) -> bool:
        """Whether code may import the interpreter's installed packages, not only the standard library."""
        return self._site_packages

    @property
    def python_version(self) -> str | None:
        """The ``major.minor`` Python the code runs on, as a prompt may name it from its first step: without
        ``python=``, this interpreter's (the usual case), or, once started, that of the interpreter the
        process fell back to when its user could not run this one; with ``python=``, ``None`` (the prompt
        then names none, rather than one that appears only from the second step and changes what a
        provider caches)."""
        if self._python is not None:
            return None
        child = self._child
        if child is not None and child.python_version:
            return ".".join(child.python_version.split(".")[:2])
        return f"{sys.version_info.major}.{sys.version_info.minor}"

    @property
    def pids(self) -> tuple[int, ...]:
        """Host pids of the live sandbox process (launcher and runner); empty when none runs."""
        child = self._child
        return child.pids if child is not None and child.alive else ()

    async def start(self, limits: ExecutionLimits = _DEFAULT_LIMITS) -> SandboxIsolation:
        """Start the process now rather than at the first step; returns what is isolated."""
        async with self._lock:
            self._check_open()
            await self._ensure_child(limits)
            assert self._isolation is not None
            return self._isolation

    async def execute(
        self,
        code: str,
        tools: ToolInvoker,
        tool_names: Sequence[str] = (),
        limits: ExecutionLimits = _DEFAULT_LIMITS,
        *,
        on_output: OutputListener | None = None,
    ) -> CodeResult:
        """Run one code step; tool calls in it go to ``tools``. Bad code ends as ``ok=False``, never raises.

        ``on_output(stream, text)`` hears each piece of output as the child sends it (a line, or a burst of
        small writes; at most ``max_output_bytes`` per stream): a plain function the step does not wait for,
        so it must return at once. Raises ``SandboxClosedError`` after ``aclose()``, ``SandboxStartError``
        when no process could start.
        """
        async with self._lock:
            self._check_open()
            unreadable = _unencodable(code)
            if unreadable is not None:
                return unreadable  # nothing ran: the process and its state are as they were
            child = await self._ensure_child(limits)
            self._step += 1
            output = StepOutput(limits, on_output)
            started = anyio.current_time()
            keep = ended = False
            try:
                result, keep = await self._run_step(child, code, tools, tool_names, limits, output)
                ended = True
            finally:
                if not keep or not self._persistent:
                    if not ended and self._persistent and not self._closed:
                        # No result says that the state is gone (as a timeout's does): the next one will.
                        self._note = f"[note: the previous step was cancelled while it ran, so {_LOST}]"
                    await self._discard()
                else:
                    self._idle_cpu = child.cpu_time(descendants=True)
                    self._idle_since = _idle_clock()
            self._check_open()
            result = _with_duration(result, anyio.current_time() - started)
            if self._note is not None:
                result = _with_note(result, self._note)
                self._note = None
            return result

    async def aclose(self) -> None:
        """Kill the process (a running step ends at once) and delete its working directory. Idempotent."""
        self._closed = True
        await self._discard()

    async def __aenter__(self) -> ProcessSandbox:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    # -- internals ------------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise SandboxClosedError("this sandbox was closed; create a new one for a new run")

    async def _ensure_child(self, limits: ExecutionLimits) -> SandboxProcess:
        child = self._child
        if child is not None:
            why = self._why_replace(child, limits)
            if why is None:
                return child
            if self._persistent:
                self._note = f"[note: {why}, so {_LOST}]"
            await self._discard()
        plan = await plan_launch(
            python=self._python,
            network=self._network,
            switch_user=self._separate_user and can_switch_user(),
        )
        self._isolation = plan.isolation
        if self._strict:
            _require_strict_isolation(plan.isolation, network=self._network)
        # The interpreter's own packages are not the ones the host's code was written against.
        use_host_packages = self._site_packages and self._python is None and not plan.runs_host_python
        child = await SandboxProcess.spawn(
            plan,
            limits=limits,
            site_packages=self._site_packages,
            site_dirs=host_site_dirs() if use_host_packages else (),
            workdir_parent=self._workdir_parent,
            startup_timeout=self._startup_timeout,
        )
        self._idle_cpu = None
        if self._closed:  # aclose() ran while the process started
            await child.kill()
            self._check_open()
        self._child = child
        return child

    def _why_replace(self, child: SandboxProcess, limits: ExecutionLimits) -> str | None:
        """Why the process cannot run the next step, or ``None`` when it can."""
        if not child.alive:
            return "its process had ended"
        if child.process_limits != limits.process_limits:
            return "the execution limits changed"
        used = child.cpu_time(descendants=True)
        allowed = _IDLE_CPU + _IDLE_CPU_RATE * max(0.0, _idle_clock() - self._idle_since)
        if self._idle_cpu is not None and used is not None and used - self._idle_cpu > allowed:
            return (
                f"its code went on running after its step had ended ({used - self._idle_cpu:.1f} CPU "
                "seconds between steps)"
            )
        return None

    async def _discard(self) -> None:
        child, self._child = self._child, None
        if child is not None:
            await child.kill()

    async def _run_step(
        self,
        child: SandboxProcess,
        code: str,
        tools: ToolInvoker,
        tool_names: Sequence[str],
        limits: ExecutionLimits,
        output: StepOutput,
    ) -> tuple[CodeResult, bool]:
        """Drive one step to its end; returns the result and whether the process may be kept."""
        slots = anyio.Semaphore(limits.max_parallel_tool_calls)
        clock = _CodeClock(limits.wall_time)
        child.max_frame = max_frame_bytes(limits)  # per step: max_result_bytes may differ between steps
        outcome: tuple[CodeResult, bool] | None = None
        stop = _Stop()
        calls = 0
        frame = exec_frame(code, self._step, tool_names, limits, child.rlimits, tool_parameters(tools))
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(child.drain_stderr, output.stderr.add_raw)
            tasks.start_soon(self._watch_cpu, child, limits, stop, tasks.cancel_scope)
            tasks.start_soon(self._watch_clock, clock, stop, tasks.cancel_scope)
            if limits.max_step_time is not None:
                tasks.start_soon(self._watch_step_time, limits.max_step_time, stop, tasks.cancel_scope)
            try:
                await child.send(frame)
                while True:
                    message = await child.receive()
                    if isinstance(message, ToolCallRequest):
                        calls += 1
                        if limits.max_step_tool_calls is not None and calls > limits.max_step_tool_calls:
                            # The runner refuses such a call itself: only code that writes to the
                            # channel on its own gets here.
                            raise FrameError(
                                f"{calls} tool calls in one step, over its limit of "
                                f"{limits.max_step_tool_calls} (ExecutionLimits.max_step_tool_calls)"
                            )
                        await self._take_slot(slots, clock)
                        clock.tool_started(waits=message.waits)
                        tasks.start_soon(self._serve_call, child, message, tools, slots, clock)
                    elif isinstance(message, CodeWaits):
                        clock.code_waits(message.waiting)
                    elif isinstance(message, OutputChunk):
                        output.add(message)
                    elif isinstance(message, StepDone):
                        if message.step != self._step:
                            raise FrameError(f"an outcome for step {message.step} during step {self._step}")
                        outcome = self._finished(message, output, limits), True
                        break
                    elif isinstance(message, Ready):
                        raise FrameError("the sandbox greeted the host again in the middle of a step")
            except ChildExited:
                if not output.stderr.raw_stopped:  # else what is left in the pipe is not wanted
                    with anyio.move_on_after(1.0):
                        await child.stderr_closed.wait()
                outcome = await self._crashed(child, output), False
            except FrameError as exc:
                outcome = self._broken(exc, output), False
            except anyio.ClosedResourceError:
                if not self._closed:
                    raise
                # ``aclose()`` closed the channel while the step waited on it: ``execute`` says so
                # (``SandboxClosedError``) once the step has wound down.
            tasks.cancel_scope.cancel()
        if outcome is not None:
            return outcome
        if stop.reason == "cpu":
            return self._over_cpu(limits, output, lifted=stop.lifted), False
        return self._timed_out(limits, output, stop.reason), False

    @staticmethod
    async def _take_slot(slots: anyio.Semaphore, clock: _CodeClock) -> None:
        """Wait for a free tool slot. Only a running tool holds one (its answer is written without one), so
        this ends when a tool finishes, whatever the code does meanwhile."""
        try:
            slots.acquire_nowait()
        except anyio.WouldBlock:
            clock.holding(True)
            try:
                await slots.acquire()
            finally:
                clock.holding(False)

    async def _watch_clock(self, clock: _CodeClock, stop: _Stop, step: anyio.CancelScope) -> None:
        """End the step (``step`` is its scope) once its code has used up ``wall_time``."""
        await clock.run_out()
        stop.end(step, "wall_time")

    async def _watch_step_time(self, seconds: float, stop: _Stop, step: anyio.CancelScope) -> None:
        """End the step (``step`` is its scope) ``seconds`` after it started, tool calls included."""
        await anyio.sleep(seconds)
        stop.end(step, "step_time")

    async def _watch_cpu(
        self,
        child: SandboxProcess,
        limits: ExecutionLimits,
        stop: _Stop,
        step: anyio.CancelScope,
    ) -> None:
        """End the step (``step`` is its scope) once it is past its CPU time in code the runner did not stop
        (see ``cpu_watch``), noting whether the code had lifted its limit."""
        if await cpu_exceeded(child.cpu_time, limits.cpu_seconds + CPU_GRACE):
            soft, used = child.cpu_soft_limit(), child.cpu_time()
            # Past its soft limit the kernel raises it a second at a time (sending SIGXCPU each time), so
            # it stays just above the time used, unless the code set it higher itself.
            stop.lifted = soft is not None and used is not None and soft > used + CPU_GRACE + 1
            stop.end(step, "cpu")

    async def _serve_call(
        self,
        child: SandboxProcess,
        call: ToolCallRequest,
        tools: ToolInvoker,
        slots: anyio.Semaphore,
        clock: _CodeClock,
    ) -> None:
        try:
            frame = await self._answer(call, tools)
        finally:
            # The tool is done: its slot is free and the code's clock runs again, even if the code reads
            # the answer only later (it may be writing more calls first).
            clock.tool_finished()
            slots.release()
        with contextlib.suppress(ChildExited):  # the step's reader reports that
            await child.send(frame)

    @staticmethod
    async def _answer(call: ToolCallRequest, tools: ToolInvoker) -> bytes:
        """Run one call through the invoker; the frame that answers it (a failure if the child could not
        read the result)."""
        try:
            result = await tools(call.name, call.args)
        except Exception as exc:  # the invoker should not raise; the code still gets an answer
            return tool_failure_frame(
                call.id, f"TOOL_ERROR: calling {call.name!r} failed on the host: {type(exc).__name__}: {exc}"
            )
        if isinstance(result, ToolResult):
            return tool_result_frame(call.id, result, MAX_CHILD_READS)
        kind = type(result).__name__
        return tool_failure_frame(call.id, f"TOOL_ERROR: the host's tool invoker returned {kind}")

    def _finished(self, done: StepDone, output: StepOutput, limits: ExecutionLimits) -> CodeResult:
        # The runner checks the value's size, but code that found the channel can write its own outcome: it
        # gets the same answer as an honest oversized value. A frame no bigger than the limit cannot hold a
        # value over it, so only a big one is measured.
        if done.ok and done.value is not None and done.frame_bytes > limits.max_result_bytes:
            size = _json_size(done.value, done.frame_bytes)
            if size > limits.max_result_bytes:
                return CodeResult(
                    ok=False,
                    stdout=output.stdout.text(done.dropped_stdout),
                    stderr=output.stderr.text(done.dropped_stderr),
                    error=(
                        f"the result is {size} bytes as JSON, over the limit of {limits.max_result_bytes}; "
                        "return a smaller value (a summary or a slice) instead"
                    ),
                    error_type=CodeErrorType.OUTPUT_LIMIT,
                )
        return CodeResult(
            ok=done.ok,
            value=done.value,
            stdout=output.stdout.text(done.dropped_stdout),
            stderr=output.stderr.text(done.dropped_stderr),
            error=done.error,
            error_type=done.error_type,
            is_final=done.is_final,
        )

    async def _crashed(self, child: SandboxProcess, output: StepOutput) -> CodeResult:
        status = await child.exit_status()
        detail = "still running" if status is None else f"exit status {status}"
        if status is not None and status < 0:
            detail = f"killed by signal {-status}"
        return self._process_lost(
            output, f"the sandbox process ended during the step ({detail})", CodeErrorType.KILLED
        )

    def _timed_out(self, limits: ExecutionLimits, output: StepOutput, reason: str | None) -> CodeResult:
        if reason == "step_time":
            error = (
                f"TimeoutError: the step ran longer than {limits.max_step_time:g} s in all, its tool calls "
                "included (ExecutionLimits.max_step_time), and was stopped"
            )
        else:
            error = (
                f"TimeoutError: the code ran longer than {limits.wall_time:g} s (time spent waiting for "
                "tool calls not counted) and was stopped"
            )
        return self._process_lost(output, error, CodeErrorType.TIMEOUT)

    def _over_cpu(self, limits: ExecutionLimits, output: StepOutput, *, lifted: bool) -> CodeResult:
        why = (
            "the code raised its own limit"
            if lifted
            else "the code caught CpuTimeExceeded and went on, or was inside one long call that cannot be "
            "interrupted (such as a long call into C)"
        )
        return self._process_lost(
            output,
            f"CpuTimeExceeded: the step used more than its CPU time limit ({limits.cpu_seconds} s) and did "
            f"not stop ({why}), so the process was stopped",
            CodeErrorType.CPU_LIMIT,
        )

    def _broken(self, error: FrameError, output: StepOutput) -> CodeResult:
        return self._process_lost(
            output,
            "the code broke the sandbox's channel to the host (it wrote to or closed a file descriptor it "
            f"does not own) and was stopped: {error}",
            CodeErrorType.PROTOCOL,
        )

    def _process_lost(self, output: StepOutput, error: str, error_type: CodeErrorType) -> CodeResult:
        """A step whose process is gone: what it printed, the error, and (persistent) its lost state."""
        lost = f"; {_LOST}" if self._persistent else ""
        return CodeResult(
            ok=False,
            # The child's count of what it cut comes with its outcome, which never came.
            stdout=output.stdout.text(None),
            stderr=output.stderr.text(None),
            error=error + lost,
            error_type=error_type,
            state_lost=self._persistent,
        )


SubprocessExecutor = ProcessSandbox
"""The name the CodeAct issue uses for the default executor."""


def _require_strict_isolation(isolation: SandboxIsolation, *, network: bool) -> None:
    missing = []
    if not isolation.separate_user:
        missing.append(
            "the code would run as your uid and could read and write your files (~/.ssh, ~/.aws, .env); "
            "a uid of its own needs a host running as root (e.g. in a container) and separate_user=True"
        )
    if not isolation.host_environment_protected:
        missing.append("the host's environment is readable")
    if not network and not isolation.network_isolated:
        missing.append("the network is not isolated")
    if not isolation.resource_limits:
        missing.append("no resource limits")
    if missing:
        raise SandboxUnavailableError(
            "strict sandbox isolation is not available here: "
            + "; ".join(missing)
            + (f" ({'; '.join(isolation.notes)})" if isolation.notes else "")
            + ". Fix what is missing, use strict=False and accept it (see docs/sandbox-security.md), or plug "
            "in a container or VM CodeExecutor"
        )


def _json_size(value: Any, bound: int) -> int:
    """The size of ``value`` as the runner measures it (stdlib ``json``, UTF-8), written compactly, so never
    more than the runner found for an honest value; ``bound`` (the frame's size) when it is too deep to
    write here.

    >>> _json_size({"k": ["é", 1e-05]}, 100)
    18
    """
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (RecursionError, ValueError):
        return bound
    return len(text.encode("utf-8", "replace"))


def _unencodable(code: str) -> CodeResult | None:
    """The result of code that is not valid text (a lone surrogate, which no UTF-8 can carry), as Python's
    ``compile`` would fail it; ``None`` for any other code.

    >>> _unencodable("x = 1") is None
    True
    >>> print(_unencodable("s = '\\ud800'").error[:73])
    SyntaxError: the code holds a lone surrogate, '\ud800' (line 1, column 6)
    """
    if code.isascii():
        return None
    try:
        code.encode("utf-8")
    except UnicodeEncodeError as exc:
        line = code.count("\n", 0, exc.start) + 1
        column = exc.start - (code.rfind("\n", 0, exc.start) + 1) + 1
        char = code[exc.start]
        return CodeResult(
            ok=False,
            error=(
                f"SyntaxError: the code holds a lone surrogate, {char!r} (line {line}, column {column}), "
                f"which is not valid text; write it as an escape ({char!a}) in a string"
            ),
            error_type=CodeErrorType.SYNTAX,
        )
    return None


def _with_duration(result: CodeResult, duration: float) -> CodeResult:
    return attrs.evolve(result, duration=duration)


def _with_note(result: CodeResult, note: str) -> CodeResult:
    return attrs.evolve(result, stderr=f"{note}\n{result.stderr}" if result.stderr else note)
