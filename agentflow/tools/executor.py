"""``ToolExecutor``: runs a step's tool calls: concurrently, bounded, with timeouts, emitting events.

For every call it emits ``ToolStarted`` when the call starts (after it got a concurrency slot) and
``ToolSucceeded`` or ``ToolFailed`` as soon as it completes, so completion events come in completion
order, while ``run_calls`` returns the results in call order. By default a failure never raises: an unknown
tool, invalid arguments, a timeout or an exception becomes a failed ``ToolResult`` whose output is the
``TOOL_ERROR: {…}`` text for the model. A tool's ``on_error`` (else the executor's ``default_on_error``) may
make its exceptions and timeouts end the run instead, or give the model other text
(``agentflow.tools.failures``): a call that ends the run still gets its result (``on_result``) and its
``ToolFailed`` first, then its exception propagates from ``run_calls`` and cancels the batch's other calls,
which get neither (the run's ending answers them).

Concurrency is structured: one anyio task group per batch, in which a task is started for the next call
only when a call is about to wait, so calls that never wait (most tools) cost no task and any call that
waits runs beside the others; a ``CapacityLimiter`` shared by every call of this executor; a cancel scope
per call for its timeout — or, when every call of a concurrent batch has the same limit and nothing can
make an event wait (``emit_may_wait``), one deadline on the batch's task group instead, which is cheaper
and times out the same calls (see ``run_calls``). Cancelling ``run_calls`` cancels every running tool and
propagates; nothing is left running, with one exception Python imposes: a **sync** tool runs in a worker
thread, and a thread cannot be stopped. When such a call times out or is cancelled, the executor stops
waiting at once (the thread is abandoned and its result discarded) but the function runs on until it
returns. ``inline=True`` sync tools run on the event loop and cannot be interrupted at all.

A call of a tool that ``needs_approval`` is decided once its arguments are valid, before it waits for a
slot: the run's ``ToolApprovals`` (``approvals``) publishes ``ToolApprovalRequested`` and asks its approval
function or waits for ``approve`` / ``deny`` (``agentflow.tools.approval``). That wait holds no concurrency
slot and is no part of the call's time limit (a batch with such a call has no shared deadline); a denied
call gets ``ToolStarted`` and ``ToolFailed`` (``denied``), and a decision that cannot be made ends the run
as a call's ``"raise"`` failure does. Other tools pay one attribute check per call. A run that defers its
decisions (``tool_approval="defer"``) gets, for such a call, a ``deferred`` placeholder result
(``deferred_result``) in its place in ``run_calls``'s list, and nothing else: no ``ToolStarted``, no
completion event, no ``on_result``; the runtime leaves the call open and pauses the run after the step.
``note_approval`` tells the executor what a call's ``needs_approval`` says before it runs (an eager call's
predicate, asked once while the model streamed; a call a person approved before a resumed run).

A run's executor also counts the model's failed attempts per tool (``max_retries``, ``retries_exceeded``;
``agentflow.tools.retries``): a call that fails once too often ends the run as a ``"raise"`` failure does,
after its result and ``ToolFailed``. The count is made on the failure path: a successful call pays two
attribute reads, and a run none of whose calls failed has no counts at all.

A call of a tool with guardrails (``@tool(input_guardrails=..., output_guardrails=...)``;
``agentflow.tools.tool_guardrails``) is checked once its arguments are valid, before its approval is asked
for and before it waits for a slot, and its successful result once the tool returned, after its slot is given
back: neither holds a slot nor counts in the call's time limit (a batch with such a call has no shared
deadline). A ``Rejection`` is the call's ``rejected`` result (``ToolStarted``, then ``ToolFailed``); a trip,
or a guardrail that fails, ends the run as a call's ``"raise"`` failure does, after the call's result and
``ToolFailed``. A call of a tool without guardrails pays one attribute check.

``run_validated`` runs one call whose arguments were validated beforehand, with the same slot, time limit and
events: what a call started early, while the model still streams, goes through
(``agentflow.runtimes.eager_calls``).

Exceptions that are not ``Exception`` (``KeyboardInterrupt``, ``SystemExit``, custom ``BaseException``)
are never turned into results: they propagate. A ``CancelledError`` propagates when the run is being
cancelled; one a tool raises while nobody cancelled it (it awaited a task or future that something else
cancelled) is that tool's failure, an ``exception`` result like any other.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import logging
import math
import time
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread
from anyio.abc import TaskGroup

from ..cancellation import cancel_requested
from ..events import ToolFailed, ToolStarted, ToolSucceeded
from ..model.events import Event
from ..model.messages import ToolCall
from ..result import ToolResult
from .approval import (
    DEFERRED,
    ApprovalRequiredError,
    ToolApprovalRequest,
    ToolApprovals,
    asks_approval,
    deferred_result,
    denied_result,
)
from .arguments import ToolArgumentsError
from .context import ToolContext, UsageSink
from .failures import ToolErrorPolicy, check_policy, noting_others, settle_failure
from .outcome import MAX_ERROR_CHARS, exception_message, failed_result, output_text
from .registry import ToolRegistry
from .retries import COUNTED_FAILURES, RetriesExceeded, ToolRetries, check_max_retries
from .suspension import noting_waits
from .tool import Tool
from .tool_guardrails import ToolGuardrailContext, ToolGuardrailKind, check_call

__all__ = ["SYNC_TOOL_THREADS", "ToolExecutor", "sync_tool_limiter"]

_log = logging.getLogger("agentflow.tools")

Emit = Callable[[Event], Awaitable[Any]]
OnResult = Callable[[int, ToolResult], object]


class _EndsRun(Exception):
    """A call's failure that ends the run: its result (recorded and published first) and the exception the
    run ends with. Raised by ``_execute``, caught by its caller, never seen outside this module."""

    def __init__(self, result: ToolResult, error: Exception) -> None:
        super().__init__(error)
        self.result = result
        self.error = error


# How far a call of a concurrent batch got (``_Batch.stages``).
_WAITING, _STARTED, _DONE = 0, 1, 2


class _Batch:
    """One concurrent batch: its calls, the next one to start, each call's result (in call order) and how
    far it got — what a batch cut short by its shared deadline needs to finish every call's events."""

    __slots__ = (
        "armed",
        "calls",
        "endings",
        "found",
        "group",
        "limit",
        "next",
        "on_result",
        "results",
        "run_id",
        "spare",
        "stages",
        "started",
        "step",
        "take_calls",
    )

    def __init__(
        self,
        calls: Sequence[ToolCall],
        found: Sequence[Tool[..., Any] | None],
        run_id: str,
        step: int,
        on_result: OnResult | None,
        group: TaskGroup,
        limit: float | None,
        take_calls: Callable[[_Batch], Coroutine[Any, Any, None]],
    ) -> None:
        self.calls = calls
        self.found = found
        self.run_id = run_id
        self.step = step
        self.on_result = on_result
        self.group = group
        self.limit = limit
        """The time limit the calls share as the batch's deadline (then they have no scope of their own)."""
        self.started = time.perf_counter()
        self.armed = False
        """Whether the shared deadline is set on the group: only once a call waits, since until then no time
        limit can interrupt anything (nothing else runs)."""
        self.take_calls = take_calls
        self.next = 0
        """The index of the next call to start."""
        self.spare = False
        """Whether a task that will take the next call is started but has not run yet."""
        self.results: list[ToolResult | None] = [None] * len(calls)
        self.stages = [_WAITING] * len(calls)
        self.endings: list[Exception] | None = None
        """The exceptions calls of this batch ended the run with, first first (usually none, or one)."""

    @property
    def shared_deadline(self) -> bool:
        """Whether the batch's deadline is its calls' time limit."""
        return self.limit is not None

    def ended(self, error: Exception) -> None:
        """A call of this batch ends the run with ``error``."""
        if self.endings is None:
            self.endings = []
        self.endings.append(error)

    def waiting(self) -> None:
        """A call of this batch is about to wait: if calls are left and no task will take them, start one,
        so that they run beside it. The first time, set the shared deadline (from the batch's start)."""
        if self.limit is not None and not self.armed:
            self.armed = True
            elapsed = time.perf_counter() - self.started
            self.group.cancel_scope.deadline = anyio.current_time() + self.limit - elapsed
        if not self.spare and self.next < len(self.calls):
            self.spare = True
            self.group.start_soon(self.take_calls, self, name=f"tools of step {self.step}")


_MAX_NAMES_IN_ERROR = 30
_NO_HEADERS: Mapping[str, str] = MappingProxyType({})
_NO_DEADLINE = contextlib.nullcontext()  # reusable: entering it does nothing


class ToolExecutor:
    """Executes tool calls against a ``ToolRegistry``, publishing tool events through ``emit``.

    ``max_concurrency`` caps the calls running at once across every batch of this executor (``None``: no
    cap);
    ``default_timeout`` (seconds, ``None``: no limit) applies to tools without their own ``timeout``, and
    ``default_on_error`` (``"feed"``, ``"raise"`` or a function: ``agentflow.tools.failures``) to tools
    without their own ``on_error``. ``on_fatal``, if given, is told the exception a call ends the run with,
    right before it is raised: a caller that catches what its tool calls raise (CodeAct's sandbox hands the
    code a ``ToolError``) still learns that the run must end (``RunContext.executor`` wires the run's own).
    ``emit`` is usually the run's ``EventBus.publish``; ``emit_may_wait()``, if given, tells whether ``emit``
    could suspend right now (an ``EventBus`` with a subscriber or callback: ``EventBus.has_listeners``), and
    ``listening()``, if given, whether anyone receives the events at all (``EventBus.has_listeners`` again):
    while nobody does, ``ToolStarted`` and the completion events are neither built nor published, which
    nobody can tell (progress reported from a tool still goes to ``emit``); ``progress_listening()``, if
    given, whether anyone receives ``ToolProgress`` (what ``ToolContext.has_listeners`` answers: a tool skips
    building progress nobody would see; default: ``listening``). ``usage``, if given, receives
    the usage a tool reports with ``ToolContext.add_usage`` (a run wires its own in: ``RunContext.executor``).
    ``deps`` and ``extra_headers`` are what every ``ToolContext`` of this executor carries (the run's
    ``deps``, untouched, and its own model-call headers); only calls of tools that take a context see them.
    ``approvals`` decides the calls of tools that ``needs_approval`` (``agentflow.tools.approval``; the
    run's own, ``RunContext.executor``); without it such a call ends the run with ``ApprovalRequiredError``.
    ``retries_exceeded``, if given, makes this executor count the model's failed attempts per tool
    (``agentflow.tools.retries``) against each tool's ``max_retries``, else ``max_retries`` (``None``: no
    limit), and builds the exception a call that fails once too often ends the run with (the run's own,
    ``ToolRetriesExceeded``: ``RunContext.executor``); without it nothing is counted.

    Every call gets exactly one ``ToolStarted`` and then exactly one ``ToolSucceeded`` or ``ToolFailed``
    (unknown tools and invalid arguments included; a deferred one gets neither), unless the batch is
    cancelled first (or a call ends the run): then the calls still running get no completion event and no
    result; ``on_result`` tells which ones finished.
    """

    __slots__ = (
        "_approvals",
        "_asked",
        "_default_on_error",
        "_default_timeout",
        "_deps",
        "_emit",
        "_emit_may_wait",
        "_ended",
        "_headers",
        "_limiter",
        "_listening",
        "_max_retries",
        "_on_fatal",
        "_progress_listening",
        "_registry",
        "_retries",
        "_retries_exceeded",
        "_usage",
    )

    def __init__(
        self,
        registry: ToolRegistry | Iterable[Tool[..., Any] | Callable[..., Any]],
        *,
        max_concurrency: int | None = 8,
        default_timeout: float | None = 60.0,
        emit: Emit,
        emit_may_wait: Callable[[], bool] | None = None,
        listening: Callable[[], bool] | None = None,
        usage: UsageSink | None = None,
        default_on_error: ToolErrorPolicy = "feed",
        on_fatal: Callable[[Exception], object] | None = None,
        progress_listening: Callable[[], bool] | None = None,
        deps: Any = None,
        extra_headers: Mapping[str, str] = _NO_HEADERS,
        approvals: ToolApprovals | None = None,
        max_retries: float | None = None,
        retries_exceeded: RetriesExceeded | None = None,
    ) -> None:
        if max_concurrency is not None and (
            isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int) or max_concurrency < 1
        ):
            raise ValueError(
                f"max_concurrency must be an int >= 1 or None (no limit), got {max_concurrency!r}"
            )
        if default_timeout is not None and not default_timeout > 0:
            raise ValueError(f"default_timeout must be positive or None, got {default_timeout!r}")
        self._registry = registry if isinstance(registry, ToolRegistry) else ToolRegistry(registry)
        self._limiter = anyio.CapacityLimiter(math.inf if max_concurrency is None else max_concurrency)
        self._default_timeout = default_timeout
        self._emit = emit
        self._emit_may_wait = emit_may_wait
        self._listening = listening
        self._usage = usage
        self._default_on_error = check_policy(default_on_error, "default_on_error")
        self._on_fatal = on_fatal
        self._progress_listening = progress_listening if progress_listening is not None else listening
        self._ended = False
        """Whether a call ended the run ``on_fatal`` belongs to."""
        self._deps = deps
        self._headers = extra_headers
        self._approvals = approvals
        self._asked: dict[str, tuple[ToolCall, bool | Exception]] | None = None
        """What ``needs_approval`` is known to say for some calls already (``note_approval``), by call id."""
        self._max_retries = check_max_retries(max_retries, "max_retries")
        self._retries_exceeded = retries_exceeded
        self._retries: ToolRetries | None = None
        """The run's counts of failed attempts: made when a call first fails (``_failed``)."""

    @property
    def registry(self) -> ToolRegistry:
        """The tools this executor runs."""
        return self._registry

    def use(self, registry: ToolRegistry) -> None:
        """Run the next calls with ``registry`` (a step that offers some of the run's tools only:
        ``@tool(enabled=...)``); the counts of failed attempts go on."""
        self._registry = registry

    def note_approval(self, call: ToolCall, needs: bool | Exception) -> None:
        """Say what the ``needs_approval`` of ``call``'s tool says for it, known before the call runs: the
        call's decision then uses this, once, instead of asking again. ``False`` runs it without asking (a
        predicate said so while the model streamed: ``eager_calls``; or a person approved it before this run:
        a resumed run), ``True`` asks for a decision, an exception ends the run with it (the predicate
        raised). Only the very same call (id, name, arguments) takes it; ``forget_approvals`` drops the
        notes no call took."""
        if self._asked is None:
            self._asked = {}
        self._asked[call.id] = (call, needs)

    def forget_approvals(self) -> None:
        """Drop the ``note_approval`` notes no call took (a step's calls are all decided)."""
        self._asked = None

    async def run_calls(
        self,
        calls: Sequence[ToolCall],
        *,
        run_id: str,
        step: int,
        parallel: bool = True,
        on_result: OnResult | None = None,
    ) -> list[ToolResult]:
        """Run ``calls`` (concurrently when ``parallel``) and return their results in call order.

        ``on_result(index, result)`` is called as each call completes, before its completion event: a
        runtime that gets cancelled mid-batch knows from it which calls finished.

        A concurrent batch whose calls all have the same time limit, all get a concurrency slot at once and
        whose events cannot make it wait (nobody listens) puts that limit on its task group, as one deadline,
        instead of one cancel scope per call: each call's limit then counts from the batch's start, which is
        when each of them starts. Calls cut by it time out as they would have on their own.
        """
        if self._ended:
            await self._refuse_after_end()
        found = [self._registry.resolve(call.name) for call in calls]
        if not parallel or len(calls) <= 1:
            results = []
            for index, call in enumerate(calls):
                results.append(await self._run(call, found[index], run_id, step, index, on_result, None))
            return results
        shared = self._shared_limit(found)
        try:
            async with anyio.create_task_group() as group:
                batch = _Batch(calls, found, run_id, step, on_result, group, shared, self._take_calls)
                await self._take_calls(batch)
        except BaseExceptionGroup as failure:
            # Tool failures are results, so what escapes is a real error (a BaseException from a tool,
            # a failing emit) or the exception a call ends the run with; re-raise it as itself when it is
            # alone, or when every one is a call ending the run at the same instant (the first one ends it).
            if len(failure.exceptions) == 1:
                raise failure.exceptions[0] from None
            first = _first_ending(batch.endings, failure)
            if first is not None:
                raise first from None
            raise
        if group.cancel_scope.cancelled_caught:
            # Only the shared deadline cancels the group's own scope (a cancel from outside propagates).
            assert shared is not None
            await self._time_out(batch, shared)
        return [r for r in batch.results if r is not None]

    async def _take_calls(self, batch: _Batch) -> None:
        """Start the batch's calls that have not started, one after another, in this task.

        Every call runs beside the others without a task per call: when a call is about to wait (its tool
        suspends, or it waits for a concurrency slot) and calls are left, a task is started that takes the
        next one (``_Batch.waiting``). Calls that finish without ever waiting (most tools) run one after
        another in the calling task, with no task at all; ``n`` calls that all wait use ``n - 1`` tasks
        beside the caller, as one task per call would.
        """
        batch.spare = False  # this task is the one that was to take the next call (if it is a spare)
        calls = batch.calls
        while batch.next < len(calls):
            index = batch.next
            batch.next += 1
            await self._run(
                calls[index], batch.found[index], batch.run_id, batch.step, index, batch.on_result, batch
            )

    def _heard(self) -> bool:
        """Whether anyone receives this executor's events; while nobody does, they are not even built."""
        return self._listening is None or self._listening()

    def _limit(self, found: Tool[..., Any]) -> float | None:
        limit = found.timeout if found.timeout is not None else self._default_timeout
        return None if limit == math.inf else limit

    def _shared_limit(self, found: Sequence[Tool[..., Any] | None]) -> float | None:
        """The time limit the batch can share as one deadline, or None (then each call gets its own scope)."""
        if self._emit_may_wait is None or self._emit_may_wait():
            # A publish that waits for a subscriber could be cut by the deadline halfway through delivery.
            return None
        if self._limiter.available_tokens < len(found):
            return None  # some calls would wait for a slot: their limit must count from their own start
        if self._registry.has_approval and any(tool is not None and tool.needs_approval for tool in found):
            return None  # a call may wait for approval, which is no part of its time limit
        limits = {self._limit(tool) for tool in found if tool is not None}
        if len(limits) != 1:
            return None
        if self._registry.has_guardrails and any(tool is not None and tool._guarded for tool in found):
            return None  # a guardrail may wait, and its time is no part of its call's limit
        return limits.pop()

    async def _time_out(self, batch: _Batch, limit: float) -> None:
        """The batch's deadline passed: the calls it cut get their timeout results and events, in order.

        Only the events whose publish never began are published here. One the deadline cut halfway through
        delivery (a subscriber that arrived mid-batch let its buffer fill) is the bus's to finish: it hands
        a cut event to the sinks that missed it, so nobody gets it twice.
        """
        duration = time.perf_counter() - batch.started
        run_id, step = batch.run_id, batch.step
        ending: Exception | None = None
        for index, call in enumerate(batch.calls):
            stage = batch.stages[index]
            if stage == _DONE:
                continue
            result = batch.results[index]
            if result is None:
                tool = batch.found[index]
                name = tool.name if tool is not None else call.name
                policy = self._policy(tool) if tool is not None else "feed"
                result, error = self._timed_out(policy, name, call, limit, duration)
                if error is None and self._retries_exceeded is not None:
                    error = self._failed(tool, result, step)
                if ending is None:
                    ending = error
                batch.results[index] = result
                if batch.on_result is not None:
                    batch.on_result(index, result)
            if not self._heard():
                continue  # nobody receives the events: the results are all that matters
            if stage == _WAITING:
                await self._emit(ToolStarted(call=call, run_id=run_id, step=step))
            event = ToolSucceeded if result.ok else ToolFailed
            await self._emit(event(call=call, result=result, run_id=run_id, step=step))
        if ending is not None:
            # Every call of the batch has its result and its event: the run may end now.
            batch.ended(ending)
            self._end_run(ending)

    async def run_call(self, call: ToolCall, *, run_id: str, step: int) -> ToolResult:
        """Run one call (validation, limiter, timeout, events) and return its result."""
        if self._ended:
            await self._refuse_after_end()
        return await self._run(call, self._registry.resolve(call.name), run_id, step, 0, None, None)

    async def run_validated(
        self,
        call: ToolCall,
        found: Tool[..., Any],
        kwargs: dict[str, Any],
        *,
        run_id: str,
        step: int,
        on_result: OnResult | None = None,
    ) -> ToolResult:
        """Run one call of ``found`` whose arguments ``found.parse_arguments`` already turned into ``kwargs``.

        The rest is ``run_call``'s: a concurrency slot, ``ToolStarted``, the tool under its own time limit,
        ``on_result(0, result)`` and then the completion event; cancelled, it propagates with neither. An
        eager start (``agentflow.runtimes.eager_calls``) validates a call to decide whether it may start, and
        starts it with this: the arguments are not parsed twice. ``kwargs`` is the call's (a context argument
        is added to it).
        """
        # ``_run``'s path for a valid call, kept apart so that a batch's calls pay nothing for it.
        ending: Exception | None = None
        arguments: dict[str, Any] | None = None
        denied = None
        if found._guarded:
            arguments = dict(kwargs)  # before the context argument is added
            denied = await self._check(found, "input", call, arguments, arguments, run_id, step, None)
        if denied is None and found.needs_approval:
            denied = await self._approval(found, call, kwargs, run_id, step, None)
        if denied is not None:
            result, ending = denied
            if result.error_type == DEFERRED:
                return result  # left for a later run, as in ``_run``
            if self._heard():
                await self._emit(ToolStarted(call=call, run_id=run_id, step=step))
        else:
            borrower = object()
            try:
                self._limiter.acquire_on_behalf_of_nowait(borrower)
            except anyio.WouldBlock:
                await self._limiter.acquire_on_behalf_of(borrower)
            try:
                if self._heard():
                    await self._emit(ToolStarted(call=call, run_id=run_id, step=step))
                result = await self._execute(found, call, kwargs, run_id, step, None)
            except _EndsRun as ends:
                result, ending = ends.result, ends.error
            finally:
                self._limiter.release_on_behalf_of(borrower)
            if arguments is not None and result.ok:
                checked = await self._check(found, "output", call, arguments, result, run_id, step, None)
                if checked is not None:
                    result, ending = checked
        if not result.ok:
            if ending is None and self._retries_exceeded is not None:
                ending = self._failed(found, result, step)
        elif self._retries is not None:
            self._retries.succeeded(result.name, step)
        if on_result is not None:
            on_result(0, result)
        if self._heard():
            event = ToolSucceeded if result.ok else ToolFailed
            await self._emit(event(call=call, result=result, run_id=run_id, step=step))
        if ending is not None:
            self._end_run(ending)
        return result

    async def _run(
        self,
        call: ToolCall,
        found: Tool[..., Any] | None,
        run_id: str,
        step: int,
        index: int,
        on_result: OnResult | None,
        batch: _Batch | None,
    ) -> ToolResult:
        """One call, from validation to its completion event. In a concurrent ``batch`` it records its result
        and progress there; the batch's shared deadline, if it has one, is then its only time limit."""
        # A call's stage moves before each of its events is published, not after: an event whose publish a
        # batch's deadline cuts is finished by the bus, so ``_time_out`` must not publish it again.
        ending: Exception | None = None
        if found is None:
            result = failed_result(call, "unknown_tool", self._unknown(call.name))
            if batch is not None:
                batch.stages[index] = _STARTED
            if self._heard():
                await self._emit(ToolStarted(call=call, run_id=run_id, step=step))
        else:
            try:
                if call.kind != "function":
                    raise ToolArgumentsError(
                        f"{found.name} is a function tool: call it with JSON arguments, not as a {call.kind} "
                        "tool with free-form input"
                    )
                kwargs = found.parse_arguments(call.arguments)
            except ToolArgumentsError as exc:
                result = failed_result(call, "invalid_arguments", str(exc), tool=found.name)
                if batch is not None:
                    batch.stages[index] = _STARTED
                if self._heard():
                    await self._emit(ToolStarted(call=call, run_id=run_id, step=step))
            else:
                arguments: dict[str, Any] | None = None
                denied = None
                if found._guarded:
                    arguments = dict(kwargs)  # before the context argument is added
                    denied = await self._check(
                        found, "input", call, arguments, arguments, run_id, step, batch
                    )
                if denied is None and found.needs_approval:
                    denied = await self._approval(found, call, kwargs, run_id, step, batch)
                if denied is not None:
                    result, ending = denied
                    if result.error_type == DEFERRED:
                        # Left for a later run: no events, no ``on_result``, nothing for memory.
                        if batch is not None:
                            batch.results[index] = result
                            batch.stages[index] = _DONE
                        return result
                    if batch is not None:
                        batch.stages[index] = _STARTED
                    if self._heard():
                        await self._emit(ToolStarted(call=call, run_id=run_id, step=step))
                else:
                    # A fresh borrower per call: the same task may run several calls (CodeAct, nested tools).
                    borrower = object()
                    try:
                        # No trip through the event loop when a slot is free (the common case).
                        self._limiter.acquire_on_behalf_of_nowait(borrower)
                    except anyio.WouldBlock:
                        if batch is not None:
                            batch.waiting()
                        await self._limiter.acquire_on_behalf_of(borrower)
                    try:
                        if batch is not None:
                            batch.stages[index] = _STARTED
                        if self._heard():
                            await self._emit(ToolStarted(call=call, run_id=run_id, step=step))
                        result = await self._execute(found, call, kwargs, run_id, step, batch)
                    except _EndsRun as ends:
                        result, ending = ends.result, ends.error
                    finally:
                        self._limiter.release_on_behalf_of(borrower)
                    if arguments is not None and result.ok:
                        checked = await self._check(
                            found, "output", call, arguments, result, run_id, step, batch
                        )
                        if checked is not None:
                            result, ending = checked
        if not result.ok:
            if ending is None and self._retries_exceeded is not None:
                ending = self._failed(found, result, step)
        elif self._retries is not None:
            self._retries.succeeded(result.name, step)
        if batch is not None:
            batch.results[index] = result
        if on_result is not None:
            on_result(index, result)
        event = ToolSucceeded if result.ok else ToolFailed
        if batch is not None:
            batch.stages[index] = _DONE
        if self._heard():
            await self._emit(event(call=call, result=result, run_id=run_id, step=step))
        if ending is not None:
            if batch is not None:
                batch.ended(ending)
            self._end_run(ending)
        return result

    async def _check(
        self,
        found: Tool[..., Any],
        kind: ToolGuardrailKind,
        call: ToolCall,
        arguments: dict[str, Any],
        checked: dict[str, Any] | ToolResult,
        run_id: str,
        step: int,
        batch: _Batch | None,
    ) -> tuple[ToolResult, Exception | None] | None:
        """Run the guardrails of ``kind`` of a call of ``found`` (a tool with some) on what they check
        (``checked``: its ``arguments``, or its successful result): ``None`` when they let it go on, else the
        call's result and the exception the run ends with, if any (``agentflow.tools.tool_guardrails``)."""
        if kind == "input":
            guardrails, value, text, duration = found.input_guardrails, checked, None, 0.0
        else:
            assert isinstance(checked, ToolResult)
            guardrails, value, text, duration = (
                found.output_guardrails,
                checked.value,
                checked.output,
                checked.duration,
            )
        if not guardrails:
            return None
        ctx: ToolGuardrailContext[Any] = ToolGuardrailContext(
            run_id=run_id,
            step=step,
            call_id=call.id,
            tool_name=found.name,
            emit=self._emit,
            listening=self._progress_listening,
            usage=self._usage,
            deps=self._deps,
            extra_headers=self._headers,
            kind=kind,
            arguments=MappingProxyType(arguments),
            output_text=text,
        )
        waiting = None if batch is None else batch.waiting
        stopped = await check_call(guardrails, ctx, value, call, waiting, duration)
        if stopped is not None and stopped[1] is not None:
            _log.info(
                "tool %r: its %s guardrail stopped call %s (run %s, step %d); the run ends",
                found.name,
                kind,
                call.id,
                run_id,
                step,
                exc_info=stopped[1],
            )
        return stopped

    async def _approval(
        self,
        found: Tool[..., Any],
        call: ToolCall,
        kwargs: dict[str, Any],
        run_id: str,
        step: int,
        batch: _Batch | None,
    ) -> tuple[ToolResult, Exception | None] | None:
        """Decide a valid call of a tool that ``needs_approval``: ``None`` to run it, else its result (a
        ``denied`` one, or a ``deferred`` placeholder: ``deferred_result``) and the exception the run ends
        with, if no decision could be made (see ``agentflow.tools.approval``). Holds no slot: it is asked
        before the call waits for one. A ``note_approval`` for the call is used (once) instead of its
        ``needs_approval``."""
        try:
            asked = self._asked
            noted = asked.pop(call.id, None) if asked is not None else None
            if noted is not None and noted[0] == call:
                needs = noted[1]
                if isinstance(needs, Exception):
                    raise needs
            else:
                needs = asks_approval(found.needs_approval, kwargs, found.name)
            if not needs:
                return None
            approvals = self._approvals
            if approvals is None:
                raise ApprovalRequiredError(call, found.name)
            request = ToolApprovalRequest(run_id, step, call, found.name, kwargs, self._deps)
            if approvals.defers:
                await approvals.defer(request)
                return deferred_result(call, found.name), None
            if batch is not None:
                batch.waiting()  # the batch's next calls start beside this one, which may wait long
            denial = await approvals.decide(request)
        except Exception as exc:
            why = (
                "it needs approval, and the run had no way to ask for it"
                if isinstance(exc, ApprovalRequiredError)
                else f"deciding whether it may run failed ({type(exc).__name__})"
            )
            _log.info(
                "tool %r: no decision on call %s (run %s, step %d); the run ends",
                found.name,
                call.id,
                run_id,
                step,
                exc_info=exc,
            )
            return denied_result(call, found.name, f"not run: {why}"), exc
        if denial is None:
            return None
        return denied_result(call, found.name, denial), None

    async def _execute(
        self,
        found: Tool[..., Any],
        call: ToolCall,
        kwargs: dict[str, Any],
        run_id: str,
        step: int,
        batch: _Batch | None,
    ) -> ToolResult:
        context = None
        if found.context_parameter is not None:
            context = ToolContext(
                run_id=run_id,
                step=step,
                call_id=call.id,
                tool_name=found.name,
                emit=self._emit,
                listening=self._progress_listening,
                usage=self._usage,
                inline=found.inline,
                deps=self._deps,
                extra_headers=self._headers,
            )
            kwargs[found.context_parameter] = context
        # In a batch with a shared deadline, that deadline is the call's time limit: no scope of its own.
        limit = self._limit(found) if batch is None or not batch.shared_deadline else None
        started = time.perf_counter()
        try:
            with anyio.move_on_after(limit) if limit is not None else _NO_DEADLINE as scope:
                # In a context of its own, as in a task of its own: its context variables stay its own.
                waiting = None if batch is None else batch.waiting
                value = await noting_waits(_invoke(found, kwargs), waiting, contextvars.copy_context())
                output = output_text(value)
        except Exception as exc:
            # The model gets the message (cut at MAX_ERROR_CHARS), unless the tool's policy says otherwise;
            # the traceback is for the developer.
            result, ending = settle_failure(
                self._policy(found),
                exc,
                call,
                "exception",
                exception_message(exc, MAX_ERROR_CHARS),
                tool=found.name,
                duration=time.perf_counter() - started,
            )
            # INFO: a tool failing is a result the model handles, not an error of the service (nothing on
            # stderr); one that ends the run is raised to whoever runs it.
            _log.info(
                "tool %r raised (run %s, step %d, call %s); %s",
                found.name,
                run_id,
                step,
                call.id,
                "the run ends with it" if ending is not None else "the model gets its TOOL_ERROR",
                exc_info=exc,
            )
            if ending is not None:
                raise _EndsRun(result, ending) from None
            return result
        except asyncio.CancelledError:  # agentflow runs on asyncio (aiohttp): anyio's cancel class
            if cancel_requested():
                raise
            # Not a cancel of this call: the tool awaited something that was cancelled elsewhere.
            return failed_result(
                call,
                "exception",
                "CancelledError: the tool awaited a task or future that was cancelled elsewhere "
                "(the run was not cancelled)",
                tool=found.name,
                duration=time.perf_counter() - started,
            )
        finally:
            if context is not None:
                context._finish()
        duration = time.perf_counter() - started
        if scope is not None and scope.cancelled_caught:
            assert limit is not None
            result, ending = self._timed_out(self._policy(found), found.name, call, limit, duration)
            if ending is not None:
                raise _EndsRun(result, ending)
            return result
        return ToolResult(call_id=call.id, name=found.name, output=output, duration=duration, value=value)

    def _failed(self, found: Tool[..., Any] | None, result: ToolResult, step: int) -> Exception | None:
        """A call failed (``result``) and its failure goes to the model: count it against its tool's retry
        limit (``found``: ``None`` for a tool that does not exist); the exception the run ends with if the
        model has had all its retries (``agentflow.tools.retries``)."""
        limit = self._max_retries if found is None or found.max_retries is None else found.max_retries
        if limit is None or limit == math.inf or result.error_type not in COUNTED_FAILURES:
            return None  # no limit, or no failed attempt (a denied call, a refused one)
        retries = self._retries
        if retries is None:
            assert self._retries_exceeded is not None
            retries = self._retries = ToolRetries(self._retries_exceeded)
        return retries.failed(result, limit, step, unknown=found is None)

    def _policy(self, found: Tool[..., Any]) -> ToolErrorPolicy:
        return found.on_error if found.on_error is not None else self._default_on_error

    @staticmethod
    def _timed_out(
        policy: ToolErrorPolicy, name: str, call: ToolCall, limit: float, duration: float
    ) -> tuple[ToolResult, Exception | None]:
        """A call cut by its time limit: its result, and the exception the run ends with if the tool's policy
        says so. A timeout follows the policy: for a tool whose failures must not reach the model (a payment
        that may or may not have gone through), one that ran out of time is no different."""
        message = f"tool {name!r} timed out after {limit:g} s"
        try:
            # Raised and caught, so that a formatter's own exception has it as its context.
            raise TimeoutError(message)
        except TimeoutError as timeout:
            return settle_failure(policy, timeout, call, "timeout", message, tool=name, duration=duration)

    def _end_run(self, error: Exception) -> None:
        """Raise the exception a call ends the run with, once its result and event are out."""
        if self._on_fatal is not None:
            self._ended = True
            self._on_fatal(error)
        raise error

    @staticmethod
    async def _refuse_after_end() -> None:
        """A call after one that ended the run: its caller caught that exception and went on (CodeAct's
        sandbox gives it to the code, which may call another tool at once). The run's scope is cancelled by
        now (``on_fatal``), and this checkpoint delivers that, even for a call that would never wait."""
        await anyio.lowlevel.checkpoint()

    def _unknown(self, name: str) -> str:
        names = self._registry.names
        shown = ", ".join(names[:_MAX_NAMES_IN_ERROR]) + (", …" if len(names) > _MAX_NAMES_IN_ERROR else "")
        return f"unknown tool {name!r}; available tools: {shown or '(none)'}"


def _first_ending(
    endings: list[Exception] | None, failure: BaseExceptionGroup[BaseException]
) -> Exception | None:
    """The exception the first of several calls ending the run at once ended it with, noted with the others
    (``noting_others``); ``None`` when ``failure`` holds anything else."""
    if endings is None or len(endings) != len(failure.exceptions):
        return None
    if not all(any(error is raised for raised in failure.exceptions) for error in endings):
        return None
    return noting_others(endings[0], endings[1:])


def _invoke(found: Tool[..., Any], kwargs: dict[str, Any]) -> Awaitable[Any]:
    """The call as an awaitable: an async tool's own coroutine (nothing in between), else ``_call_sync``."""
    if found.is_async:
        return found.fn(**kwargs)  # type: ignore[no-any-return]
    return _call_sync(found, kwargs)


SYNC_TOOL_THREADS = 40
"""How many sync tools may run in worker threads at once per event loop, across every run (the
``sync_tool_limiter`` of a loop starts with this many tokens). Set it before the loop's first sync tool call;
``sync_tool_limiter().total_tokens = n`` changes the running loop's own."""

_SYNC_TOOL_LIMITERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, anyio.CapacityLimiter] = (
    weakref.WeakKeyDictionary()
)


def sync_tool_limiter() -> anyio.CapacityLimiter:
    """The thread limiter sync tools run on in the running event loop (made on first use, with
    ``SYNC_TOOL_THREADS`` tokens): set its ``total_tokens`` to change how many run at once.

    Not anyio's default limiter (``anyio.to_thread.current_default_thread_limiter()``, also 40): other code
    in the process shares that one (``SQLiteStore`` does not; a web framework's sync endpoints, file I/O
    helpers may), and slow or hung sync tools must not make it wait for a thread. It bounds the threads
    sync tools are waited for, not the threads that exist: a call that times out or is cancelled gives its
    token back at once, while its thread runs on until the function returns (a thread cannot be stopped),
    so a tool that hangs leaves a thread behind per call. Give such a tool a timeout of its own (a socket
    timeout, say), not only the run's.

    One per event loop: an anyio limiter wakes its waiters with the primitives of the loop it is used in,
    and ``run_sync`` calls in several threads each run a loop of their own.
    """
    loop = asyncio.get_running_loop()
    limiter = _SYNC_TOOL_LIMITERS.get(loop)
    if limiter is None:
        limiter = _SYNC_TOOL_LIMITERS[loop] = anyio.CapacityLimiter(SYNC_TOOL_THREADS)
    return limiter


async def _call_sync(found: Tool[..., Any], kwargs: dict[str, Any]) -> Any:
    if found.inline:
        try:
            value = found.fn(**kwargs)
        finally:
            if found.context_parameter is not None:
                # What it reported while it ran on the loop, where publishing could not wait.
                await kwargs[found.context_parameter]._publish_queued()
    else:
        # abandon_on_cancel: a timeout or cancellation stops the wait at once; the thread cannot be stopped.
        value = await anyio.to_thread.run_sync(
            functools.partial(found.fn, **kwargs), abandon_on_cancel=True, limiter=sync_tool_limiter()
        )
    if inspect.isawaitable(value):
        value = await value
    return value
