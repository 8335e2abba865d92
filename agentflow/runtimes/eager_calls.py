"""Eager tool start: in a streamed step, a call to an ``eager`` tool starts once the model has written it.

A tool marked ``@tool(eager=True)`` has no side effects (a lookup, a read), so running it before the model's
turn is complete is harmless: when the stream's ``ToolCallReady`` arrives for a call to it, the call starts
right away, beside the rest of the stream, and the step uses its result when it acts on the turn. Every other
call runs as before. What this module must not do: start a call the normal path would not run, run a call
twice, or let a call outlive its step.

**When a call starts early.** All of these hold, else it waits for the turn and runs as usual:

- the step streams its model call, offers the run's own tools, is not the tool-less "final answer" step,
  and ``parallel_tool_calls`` is not ``False`` (calls that must run one by one, in order, cannot start
  before the turn that orders them is known). ``AgentRuntime.run_step`` checks this once per step, and only
  for a registry that holds an eager tool (``ToolRegistry.has_eager``): any other run pays one attribute
  read per step and never looks at a streamed event for it;
- the call names an eager tool and has an id, which is the one the turn is stored with (ids are completed
  only when they are missing or repeated: ``complete_tool_calls``), and its arguments pass the tool's
  schema: an invalid call is not started, it fails in the normal path as it always did;
- its place in the turn (``ToolCallReady.index``) is within what the run's ``max_tool_calls`` has left: the
  calls that run are the same as without eager start, and never more;
- it needs no approval (``@tool(needs_approval=...)``: ``True``, or a predicate that says so for its
  arguments, or that fails): a call that needs one is decided with the turn's other calls, once the turn is
  complete, as in a step without eager start (a turn that fails never asks anyone). The predicate is asked
  once per call, here: its answer goes to the executor (``ToolExecutor.note_approval``), which the call's
  decision uses, whichever path runs it.

**Ownership.** ``EarlyCalls`` lives for one step. ``run_early_step`` opens its task group around the model
call and the handling of the turn (acting on it included), so early calls run beside the stream and the act
phase and never outlive the step. Each runs in a task of that group, under a cancel scope of its own, through
the run's ``ToolExecutor``: its concurrency limit, the tool's time limit, ``ToolContext`` (run id, step, the
stored call id), progress and result events — as any call.

**Joining.** Once the turn is complete, ``keep`` matches the early calls with the turn's calls as memory will
hold them (same id, name and arguments); one the turn does not hold is cancelled and ends with one
``ToolFailed`` (``cancelled``), never written to memory. ``AgentRuntime.act`` (``act_with_early``) then
announces the other calls, runs them through the executor while the early ones finish, and takes the early
ones' results; the assistant turn is in memory first, then every result, in call order, as always. A step
that may not run the turn's calls (the token budget is reached: ``refuse_with_early``) cancels the early
ones still running; the kept ones' results (the real ones, for those that finished) go to memory with the
refused calls'.

**A step that ends otherwise** (the stream fails or is cut, the run is cancelled or times out, handling the
turn raises): the task group cancels the early calls still running, and the run's ending
(``run_ending.settle``: ``lend`` then ``end_unfinished``) ends every announced call that has not ended
with one ``ToolFailed`` (``cancelled``). A call gets a result in memory only if its turn is there (a turn the
ending keeps); an early call whose turn never reached memory gets none, and no place in the result's
``tool_calls`` either: its events are its only trace. A stream the model layer retries is retried only before
its first event, so nothing can have started from it.

**Events.** An early call's ``ToolCallRequested`` follows its ``ToolCallReady``, before the step's
``ModelCompleted`` (no other call is announced before it: that is how a subscriber tells an early call);
its ``ToolStarted`` follows at once when a concurrency slot is free; its ``ToolProgress`` and
``ToolSucceeded``/``ToolFailed`` come whenever they happen, during the stream or after it. Each call is
announced once and ends once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
import attrs
from anyio.abc import TaskGroup

from ..events import ToolCallRequested, ToolFailed
from ..model.events import ToolCallReady
from ..model.messages import ToolCall
from ..result import StopReason, ToolResult
from ..tools.approval import asks_approval
from ..tools.arguments import ToolArgumentsError
from ..tools.failures import noting_others
from ..tools.outcome import cancelled_result
from ..tools.tool import Tool
from .calls import complete_tool_calls
from .handing_off import split, take
from .resume import pause

if TYPE_CHECKING:
    from ..agent.prompt import AgentPrompt
    from .base import AgentRuntime
    from .context import RunContext

__all__ = ["EarlyCalls", "act_with_early", "refuse_with_early", "run_early_step", "starts_early"]

NOT_IN_TURN = "cancelled: the model's completed turn does not hold this call, which had started early"
"""Why an early call the turn does not hold is stopped (its ``ToolFailed``; never in memory)."""

NOT_USED = "cancelled: the step did not act on this call, which had started early"
"""Why an early call the step never took is stopped once the step is done with its turn."""


def starts_early(ctx: RunContext, prompt: AgentPrompt) -> bool:
    """Whether calls of this step's turn may start while it streams (see the module doc); the caller has
    checked that the registry holds an eager tool and that this is not the final step."""
    if not prompt.stream or prompt.tools is not ctx.tools.specs or ctx.settings.parallel_tool_calls is False:
        return False
    limit = ctx.options.max_tool_calls
    return limit is None or len(ctx.tool_calls) < limit


class _EarlyCall:
    """One call started early: what it runs, how far it got, and what ended it."""

    __slots__ = ("call", "done", "ended", "kept", "kwargs", "reason", "result", "scope", "taken", "tool")

    def __init__(self, call: ToolCall, tool: Tool[..., Any], kwargs: dict[str, Any]) -> None:
        self.call = call
        self.tool = tool
        self.kwargs = kwargs
        self.scope = anyio.CancelScope()
        self.done = anyio.Event()
        """Set once ``result`` is final (never for a call the step's task group cancelled)."""
        self.result: ToolResult | None = None
        self.ended = False
        """Whether the call's terminal event is published, or will be by someone else (the bus finishes a
        publish a cancel cut; ``settle_pending`` ends a pending call): set before the publish begins."""
        self.kept = False
        """Whether the completed turn holds this call (``EarlyCalls.keep``)."""
        self.taken = False
        """Whether the step acts on it (``EarlyCalls.take``): its result is then the call's in memory."""
        self.reason = ""

    def finished(self, _index: int, result: ToolResult) -> None:
        """The executor's ``on_result``: called right before it publishes the completion event."""
        self.result = result
        self.ended = True

    def stop(self, reason: str) -> None:
        """Cancel the call unless it has its result: it then ends with a ``cancelled`` one for ``reason``."""
        if self.result is None:
            self.reason = reason
            self.scope.cancel()

    async def outcome(self) -> ToolResult:
        """The call's result, once it has one."""
        await self.done.wait()
        assert self.result is not None
        return self.result


class EarlyCalls:
    """The calls of one streamed step that started before its model turn was complete (see the module doc).

    Built by ``run_early_step`` on the step's task group and left on ``RunContext.early_calls`` while the step
    runs (and, if the step is cut short, until the run's ending has ended every call). It keeps what it needs
    of the run, not the ``RunContext`` itself: a run's state is never part of a reference cycle.
    """

    __slots__ = (
        "_announced",
        "_bus",
        "_by_id",
        "_executor",
        "_group",
        "_registry",
        "_room",
        "calls",
        "run_id",
        "step",
    )

    def __init__(self, group: TaskGroup, ctx: RunContext) -> None:
        self._group = group
        self._bus = ctx.bus
        self._executor = ctx.executor
        self._registry = ctx.tools
        self._announced = ctx.announced
        limit = ctx.options.max_tool_calls
        self._room = None if limit is None else limit - len(ctx.tool_calls)
        self.run_id = ctx.run_id
        self.step = ctx.step
        self.calls: list[_EarlyCall] = []
        """Every call started early, in the order they started."""
        self._by_id: dict[str, _EarlyCall] = {}

    async def offer(self, event: ToolCallReady) -> None:
        """A call of the turn is complete: start it now if it may start early (see the module doc); else leave
        it to the step, which runs it as usual.

        Announced (``ToolCallRequested``) before it starts, then one checkpoint: its ``ToolStarted`` comes
        before the stream's next event when a concurrency slot is free.
        """
        room = self._room
        if room is not None and (event.index >= room or len(self.calls) >= room):
            return
        raw = event.call
        if raw.kind != "function":
            return  # a custom call's input is no JSON arguments: the normal path answers it
        found = self._registry.resolve(raw.name)
        if found is None or not found.eager:
            return
        call_id = raw.id.strip()
        if not call_id or call_id in self._by_id:
            return  # its id is completed with the turn (or it repeats one): not known yet
        try:
            kwargs = found.parse_arguments(raw.arguments)
        except ToolArgumentsError:
            return  # the normal path fails it, with its ToolStarted and TOOL_ERROR, as without eager start
        # As memory will hold it: the id stripped, the name as registered (what ``complete_tool_calls`` does);
        # ``evolve`` keeps the rest of the call (its provider fields): else ``keep`` misses it in the turn.
        same = call_id == raw.id and found.name == raw.name
        call = raw if same else attrs.evolve(raw, id=call_id, name=found.name)
        if found.needs_approval:
            # Asked once: the executor reuses the answer for this call, whichever path runs it.
            needs = _asks_approval(found, kwargs)
            self._executor.note_approval(call, needs)
            if needs is not False:
                return  # decided in the normal path, with the turn's other calls
        early = _EarlyCall(call, found, kwargs)
        self.calls.append(early)
        self._by_id[call_id] = early
        # Marked first: a publish a cancel cuts still reaches everyone, and the ending must not repeat it.
        self._announced.add(call_id)
        if self._bus.has_listeners():
            await self._bus.publish(ToolCallRequested(call=call), owned=True)
        self._group.start_soon(self._run, early, name=f"eager tool call {call_id}")
        await anyio.lowlevel.checkpoint()

    async def _run(self, early: _EarlyCall) -> None:
        with early.scope:
            await self._executor.run_validated(
                early.call,
                early.tool,
                early.kwargs,
                run_id=self.run_id,
                step=self.step,
                on_result=early.finished,
            )
        if early.result is None:
            # Stopped by the step (``stop``), not by a cancel of the whole step (that propagates from above).
            result = cancelled_result(early.call, early.reason)
            early.finished(0, result)
            await self._bus.publish(ToolFailed(call=early.call, result=result, step=self.step), owned=True)
        early.done.set()

    def keep(self, calls: Sequence[ToolCall]) -> None:
        """The turn is complete and ``calls`` are its calls as memory will hold them: the early calls it holds
        are kept; any other is cancelled (it ends with ``ToolFailed``, and never reaches memory)."""
        held = {call.id: call for call in calls}
        for early in self.calls:
            if held.get(early.call.id) == early.call:
                early.kept = True
            else:
                early.stop(NOT_IN_TURN)

    def take(self, calls: Sequence[ToolCall]) -> dict[int, _EarlyCall]:
        """The kept early calls among ``calls`` (the stored turn's), by their index there; the step acts on
        them from now on (their results are the calls' results)."""
        taken: dict[int, _EarlyCall] = {}
        by_id = self._by_id
        for index, call in enumerate(calls):
            early = by_id.get(call.id)
            if early is not None and early.kept and not early.taken and early.call == call:
                early.taken = True
                taken[index] = early
        return taken

    def close(self) -> None:
        """The step is done with its turn: an early call it did not take is cancelled (``ToolFailed``), and
        what the ``needs_approval`` of its calls said is forgotten (every call that used it has)."""
        for early in self.calls:
            if not early.taken:
                early.stop(NOT_USED)
        self._executor.forget_approvals()

    def lend(self, pending: Sequence[ToolCall], finished: dict[str, ToolResult]) -> None:
        """For the run's ending (before ``settle_pending``): the results of the early calls memory holds
        without output go to ``finished``; those calls are ``settle_pending``'s to end."""
        if not pending:
            return
        held = {call.id: call for call in pending}
        for early in self.calls:
            call = early.call
            if held.get(call.id) == call:
                if early.result is not None:
                    finished.setdefault(call.id, early.result)
                early.ended = True

    async def end_unfinished(self, reason: str) -> None:
        """For the run's ending (after ``settle_pending``): one ``ToolFailed`` (``cancelled``, for ``reason``)
        for each early call that has not ended — its turn never reached memory, so no result goes there."""
        for early in self.calls:
            if not early.ended:
                early.ended = True
                result = cancelled_result(early.call, reason)
                await self._bus.publish(
                    ToolFailed(call=early.call, result=result, step=self.step), owned=True
                )


async def run_early_step(runtime: AgentRuntime, ctx: RunContext, prompt: AgentPrompt) -> StopReason | None:
    """The model call and the handling of its turn (``AgentRuntime.run_step``'s), inside the task group in
    which the turn's eager calls start early; returns what ``handle_model_result`` returned.

    Whatever ends the step early (an exception, a cancel) cancels the early calls still running before it
    propagates; an exception propagates as itself. ``RunContext.early_calls`` is cleared when the step ends
    normally; otherwise the run's ending clears it after ending every early call.
    """
    failure: BaseException | None = None
    stop: StopReason | None = None
    try:
        async with anyio.create_task_group() as group:
            early = ctx.early_calls = EarlyCalls(group, ctx)
            try:
                result = await runtime.call_model(ctx, prompt)
                ctx.unhandled = None
                if early.calls:
                    early.keep(complete_tool_calls(result.tool_calls, ctx.step, ctx.tools.normalize_name))
                stop = await runtime.handle_model_result(ctx, result)
                early.close()
            except anyio.get_cancelled_exc_class():
                raise
            except BaseException as exc:
                # Not through the task group's exit, which would wrap it in an exception group.
                failure = exc
                group.cancel_scope.cancel()
    except BaseExceptionGroup as errors:
        # Only an early call's task can fail here (a BaseException from a tool, or the exception its call
        # ends the run with): re-raised as itself; of calls ending the run at once, the first one's.
        if len(errors.exceptions) == 1:
            raise errors.exceptions[0] from None
        first = ctx.tool_failure
        if first is not None and all(isinstance(e, Exception) for e in errors.exceptions):
            others = [e for e in errors.exceptions if e is not first]
            if len(others) < len(errors.exceptions):
                raise noting_others(first, others) from None
        raise
    if failure is not None:
        try:
            raise failure
        finally:
            failure = None  # no reference cycle through this frame
    ctx.early_calls = None
    return stop


async def act_with_early(
    runtime: AgentRuntime, ctx: RunContext, calls: tuple[ToolCall, ...], early: EarlyCalls | None
) -> StopReason | None:
    """``AgentRuntime.act`` for a turn some of whose calls may have started early (``early``), or of an agent
    with handoffs (``RunContext.handoffs``): the calls are told apart by their index.

    The early calls the turn holds run on; the others are announced and run through ``run_tool_calls`` (the
    first ones in call order, as many as ``max_tool_calls`` leaves beside the early ones: the same calls as
    without eager start, since an early call starts only within that room); every result goes to memory in
    call order, those over the limit refused as ``act`` refuses them; a ``return_direct`` tool's result ends
    the run as in ``act`` (``AgentRuntime.read_tool_answer``), whether its call started early or not. Of the
    transfer calls (handoffs) among those run, the first runs and the others are refused
    (``handing_off.split``); once the results are in memory, one that succeeded hands the run over before the
    next step (``handing_off.take``) unless the step ends the run.
    """
    taken = early.take(calls) if early is not None else {}
    others = [index for index in range(len(calls)) if index not in taken]
    run, refused = others, []
    limit = ctx.options.max_tool_calls
    if limit is not None:
        room = max(0, limit - len(ctx.tool_calls) - len(taken))
        run, refused = others[:room], others[room:]
    handoffs = ctx.handoffs
    extra: list[int] = []
    extra_reason = ""
    if handoffs is not None:
        run, extra, extra_reason = split(handoffs, ctx.tools, calls, run)
    await runtime._announce(ctx, calls, taken)
    results: list[ToolResult | None] = [None] * len(calls)
    if run:
        ran = await runtime.run_tool_calls(ctx, tuple(calls[i] for i in run))
        for index, result in zip(run, ran, strict=True):
            results[index] = result
    for index, started in taken.items():
        results[index] = await started.outcome()
    if extra:
        answers = await runtime._refused_results(ctx, tuple(calls[i] for i in extra), extra_reason)
        for index, result in zip(extra, answers, strict=True):
            results[index] = result
    if refused:
        reason = f"not run: the run reached its limit of {limit} tool calls"
        answers = await runtime._refused_results(ctx, tuple(calls[i] for i in refused), reason)
        for index, result in zip(refused, answers, strict=True):
            results[index] = result
    done = _all(results)
    approvals = ctx.approvals
    if approvals is not None and approvals.deferred:
        return pause(ctx, calls, done)  # ``tool_approval="defer"``: the run stops for a decision
    ctx.record_results(calls, done)
    if ctx.tools.has_return_direct and await runtime.read_tool_answer(ctx, done):
        return StopReason.FINAL_ANSWER
    if refused:
        return StopReason.MAX_TOOL_CALLS
    if handoffs is not None:
        take(ctx, handoffs, done)
    return None


async def refuse_with_early(
    runtime: AgentRuntime, ctx: RunContext, calls: tuple[ToolCall, ...], reason: str, early: EarlyCalls
) -> None:
    """``AgentRuntime.refuse_calls`` for a turn some of whose calls may have started early: those still
    running are cancelled; the ones that finished keep their result. The others are refused as usual."""
    taken = early.take(calls)
    # They did start: "not run: <why>" becomes "cancelled: <why>" for them.
    stopped = f"cancelled: {reason.removeprefix('not run: ')}"
    for started in taken.values():
        started.stop(stopped)
    await runtime._announce(ctx, calls, taken)
    results: list[ToolResult | None] = [None] * len(calls)
    rest = [index for index in range(len(calls)) if index not in taken]
    if rest:
        answers = await runtime._refused_results(ctx, tuple(calls[i] for i in rest), reason)
        for index, result in zip(rest, answers, strict=True):
            results[index] = result
    for index, started in taken.items():
        results[index] = await started.outcome()
    ctx.record_results(calls, _all(results))


def _asks_approval(found: Tool[..., Any], kwargs: dict[str, Any]) -> bool | Exception:
    """Whether an eager call needs approval, or the exception its predicate raised (the normal path, which
    then decides the call, ends the run with it: ``ToolExecutor.note_approval``)."""
    try:
        return asks_approval(found.needs_approval, kwargs, found.name)
    except Exception as exc:
        return exc


def _all(results: list[ToolResult | None]) -> list[ToolResult]:
    done = [r for r in results if r is not None]
    assert len(done) == len(results)  # every index was filled above
    return done
