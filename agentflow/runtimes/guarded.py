"""How a run with guardrails is driven (``AgentRuntime.execute`` hands it here; the values are in
``agentflow.runtimes.guardrails``).

::

    [blocking input guardrails, concurrently]            nothing sent to the model until they pass
    ┌ the other input guardrails, concurrently ┐          in the run's task group, inside its scopes
    └ start (input → memory; a plan) and the steps ┘      step 0 waits for them after its model call
    [output guardrails, concurrently, on the answer: a final one, or any text a run that ended otherwise has]
    a trip (or a guardrail that raises): the work it cut short ended, memory as the run found it,
    GuardrailTripped, then RunFailed
    the run ending before the verdict (cancelled, timed out, failed): memory as the run found it too

Decisions, and why:

- **Beside the first model call.** A cheap classifier adds no latency: the input guardrails run in a task of
  the run's own task group while the run starts (DeepResearch's plan, a session's load) and makes its first
  model call. The first to trip cancels the task group: the model call in flight (its HTTP stream closed),
  the other guardrails, a planner's call. A guardrail that calls a model itself (another agent's run) runs
  in that task group too, so cancelling the run (``run.cancel()``, its deadline) cancels it.
- **Step 0 acts only once they passed.** Its model turn waits for the guardrails before anything reads it:
  no tool call starts (eager tools do not start early meanwhile), no CodeAct code runs, no answer ends the
  run, so nothing with a side effect runs on an input that is then rejected (the Agents SDK runs the first
  turn's tools regardless). Text the model streamed meanwhile has reached the subscribers; a guardrail whose
  input must not reach the model or the screen is ``blocking``.
- **Memory forgets a stopped run.** A trip (and a guardrail that raises: the input could not be checked)
  leaves memory as the run found it (``RunContext.restore_point``): neither the input nor anything the model
  wrote, so the next turn of a session does not carry a rejected request (or answer) into its prompt, and a
  stored session saves nothing of it. The error's ``partial`` has the run's work for your logs (an output
  trip's: the answer). A resumed run's restore point is after the results of the calls it decided: those
  ran, and a call that ran is never left open, to run again on the next approval.
- **Fail closed.** While a verdict is pending (``RunContext.unchecked``: input guardrails not all passed, or
  output guardrails checking the answer) a run that ends otherwise, cancelled, timed out or failed, keeps
  nothing either (``run_ending.settle`` puts memory back): its ``RunCancelled`` partial has no
  ``output`` / ``output_text`` and no ``new_items``. An unchecked answer never reaches a caller, nor a store.
- **Every answer is checked.** Output guardrails check a final answer (``StopReason.FINAL_ANSWER``), and the
  text of a run that ended otherwise with some (an answer forced after ``max_steps``, one cut at the token
  limit or by the content filter, a turn's text beside the calls a limit or a pause stopped at):
  ``GuardrailContext.stop_reason`` tells them apart. A refusal's own message (``refusal``) is not checked.
- **A verdict or a failure.** A guardrail that ends without one fails the run with ``GuardrailError``: an
  exception, and a ``CancelledError`` it raised while nothing cancelled the run (awaiting a shared task
  someone else cancelled), which a cancel scope must not mistake for the run's own (``_cancels_us``). The
  run's own cancellation ends it as cancelled; a ``KeyboardInterrupt`` or ``SystemExit`` propagates as
  itself, never inside an exception group.
- **One terminal event.** ``GuardrailTripped`` then ``RunFailed`` (``InputGuardrailTripped`` /
  ``OutputGuardrailTripped``): a policy stop is a failure of the request, raised by ``agent.run()`` as
  ``MaxStepsExceeded`` or ``ToolRetriesExceeded`` are, not a ``RunFinished`` whose result a caller could
  mistake for an answer (as a ``StopReason.REFUSAL`` would be: that is the model's own, and has its text).
- A resumed run (``approvals=``) first runs the calls it left open, which have side effects: its input
  guardrails all run before, as blocking ones, once its decisions are checked (``ApprovalDecisionError``
  first: pure and cheap). A run with no input (a resume without) has none to check.
"""

from __future__ import annotations

import asyncio
import inspect
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio
import attrs

from ..events import GuardrailTripped
from ..result import AgentResult, StopReason
from .context import RestorePoint, RunContext
from .guardrails import (
    Guardrail,
    GuardrailContext,
    GuardrailError,
    GuardrailKind,
    Guardrails,
    InputGuardrailTripped,
    OutputGuardrailTripped,
    Tripwire,
    TripwireError,
)
from .resume import check_open_calls
from .run_ending import CLEANUP_SECONDS, settle

if TYPE_CHECKING:
    from .base import AgentRuntime

__all__ = ["InputCheck", "guarded_run"]

GuardFailure = TripwireError | GuardrailError
"""What a guardrail ends a run with."""

_NO_ANSWER: Any = object()


class InputCheck:
    """The input guardrails that run beside a run's first step, while they run (``RunContext.input_guard``):
    the step waits on ``passed`` before it reads its model turn. ``failure`` is what ended them, if any;
    ``fatal`` a ``BaseException`` one of them raised (``KeyboardInterrupt``), raised as itself once the run's
    task group is left."""

    __slots__ = ("failure", "fatal", "passed")

    def __init__(self) -> None:
        self.passed = anyio.Event()
        self.failure: GuardFailure | None = None
        self.fatal: BaseException | None = None


async def guarded_run(runtime: AgentRuntime, ctx: RunContext, guards: Guardrails) -> AgentResult:
    """``runtime.start`` and ``runtime.run_loop`` with the run's guardrails around them (module docstring);
    raises the ``TripwireError`` or ``GuardrailError`` that stopped the run, with memory put back.

    While a verdict is pending (``RunContext.unchecked``) a run that ends otherwise (cancelled, timed out,
    failed) keeps nothing either: its ending puts memory back (``run_ending.settle``)."""
    if ctx.restore_point is None:  # a ``rollback_on_failure`` session's run took it already
        ctx.restore_point = RestorePoint(ctx.memory.snapshot())
    if ctx.decisions is not None:
        check_open_calls(ctx)  # pure: ``ApprovalDecisionError`` before any guardrail runs
    failure: GuardFailure | None = None
    result: AgentResult | None = None
    inputs = guards.input if ctx.input_items else ()
    before = [g for g in inputs if g.blocking or ctx.decisions is not None]
    beside = [g for g in inputs if g not in before]
    ctx.unchecked = bool(inputs)
    if before:
        failure = await _first_failure(ctx, guards, before, "input", ctx.input_text)
    if failure is None:
        if beside:
            result, failure = await _beside(runtime, ctx, guards, beside)
        else:
            ctx.unchecked = False
            await runtime.start(ctx)
            result = await runtime.run_loop(ctx)
    if failure is None:
        assert result is not None
        answer = _answer(result) if guards.output else _NO_ANSWER
        if answer is _NO_ANSWER:
            ctx.unchecked = False  # held by the last step (``hold_answer``), with nothing to check after all
            return result
        ctx.unchecked = True  # until the answer passes, a cancel or the deadline keeps none of the run
        failure = await _first_failure(ctx, guards, guards.output, "output", answer, result.stop_reason)
        if failure is None:
            ctx.unchecked = False
            return result
    await _forget(runtime, ctx, failure, result)
    raise failure


def hold_answer(ctx: RunContext, stop: StopReason | None, *, final: bool) -> None:
    """After a step of a run with guardrails: if its text may be what the run ends with (the step ends the
    run, or is its last by ``max_steps``) and output guardrails will check it, the verdict is pending from
    now on (``RunContext.unchecked``), so a cancel or the deadline landing before the check (while
    ``StepFinished`` is published, say) keeps none of the run."""
    guards = ctx.guardrails
    if guards is None or not guards.output:
        return
    if stop is StopReason.FINAL_ANSWER:
        ctx.unchecked = True
        return
    if not ctx.output_text:
        return  # a turn of calls alone, a refusal: nothing the output guardrails would check (``_answer``)
    max_steps = ctx.options.max_steps
    if stop is not None or final or (max_steps is not None and ctx.step + 1 >= max_steps):
        ctx.unchecked = True


def _answer(result: AgentResult) -> Any:
    """What output guardrails check of a run's result: a final answer's output (the ``output_type`` value,
    else its text); for a run that ended otherwise, with text (an answer forced after ``max_steps``, one cut
    at the token limit or by the content filter, a turn's text beside the calls a limit or a pause stopped
    at), the output value if it has one, else that text; ``_NO_ANSWER`` when it has no text to show."""
    if result.stop_reason is StopReason.FINAL_ANSWER:
        return result.output
    if not result.output_text:
        return _NO_ANSWER
    return result.output if result.output is not None else result.output_text


async def _beside(
    runtime: AgentRuntime, ctx: RunContext, guards: Guardrails, guardrails: Sequence[Guardrail]
) -> tuple[AgentResult | None, GuardFailure | None]:
    """The run, with ``guardrails`` in a task beside it; its result, or what a guardrail stopped it with."""
    check = InputCheck()
    ctx.input_guard = check
    result: AgentResult | None = None
    error: BaseException | None = None
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(_watch, ctx, guards, guardrails, check, group.cancel_scope)
            try:
                await runtime.start(ctx)
                result = await runtime.run_loop(ctx)
            except anyio.get_cancelled_exc_class():
                raise
            except BaseException as exc:
                # Raised out of the task group it would come wrapped in an exception group.
                error = exc
                group.cancel_scope.cancel()
    finally:
        ctx.input_guard = None
    if check.fatal is not None:
        raise check.fatal
    if check.failure is not None:
        return None, check.failure  # the trip cut the run short: what it was doing is no failure of its own
    if error is not None:
        raise error
    return result, None


async def _watch(
    ctx: RunContext,
    guards: Guardrails,
    guardrails: Sequence[Guardrail],
    check: InputCheck,
    scope: anyio.CancelScope,
) -> None:
    try:
        failure = await _first_failure(ctx, guards, guardrails, "input", ctx.input_text)
    except anyio.get_cancelled_exc_class():
        raise
    except BaseException as exc:  # a KeyboardInterrupt, SystemExit…: raised as itself, not in a group
        check.fatal = exc
        scope.cancel()
        return
    if failure is not None:
        check.failure = failure
        scope.cancel()  # the model call in flight, a plan, whatever else the run was doing
        return
    ctx.input_guard = None  # later steps need not look
    ctx.unchecked = False
    check.passed.set()


async def _first_failure(
    ctx: RunContext,
    guards: Guardrails,
    guardrails: Sequence[Guardrail],
    kind: GuardrailKind,
    value: Any,
    stop_reason: StopReason | None = None,
) -> GuardFailure | None:
    """Run ``guardrails`` concurrently on ``value``; the first trip or error (the others are then cancelled),
    or ``None`` when every one passed. Returned, never raised: so nothing comes in an exception group. A
    ``BaseException`` that is no cancellation of the run (``KeyboardInterrupt``) is raised, as itself."""
    view: GuardrailContext[Any] = GuardrailContext(
        deps=ctx.deps,
        run_id=ctx.run_id,
        # The agent whose turn it is: after a handoff, the one that wrote the answer.
        agent_name=ctx.agent_name or guards.agent,
        kind=kind,
        input_text=ctx.input_text,
        input_items=ctx.input_items,
        session_id=ctx.session_id,
        output_text=ctx.output_text if kind == "output" else None,
        usage=ctx.usage,
        stop_reason=stop_reason,
    )
    if len(guardrails) == 1:
        return await _check(guardrails[0], view, value)
    found: list[GuardFailure] = []
    fatal: list[BaseException] = []

    async def one(guard: Guardrail, scope: anyio.CancelScope) -> None:
        try:
            failure = await _check(guard, view, value)
        except anyio.get_cancelled_exc_class():
            raise  # a real one (``_check`` turned any other into a GuardrailError): the task group's
        except BaseException as exc:
            if not fatal:
                fatal.append(exc)
            scope.cancel()
            return
        if failure is not None and not found:
            found.append(failure)
            scope.cancel()

    async with anyio.create_task_group() as group:
        for guard in guardrails:
            group.start_soon(one, guard, group.cancel_scope)
    if fatal:
        raise fatal[0]
    return found[0] if found else None


async def _check(guard: Guardrail, view: GuardrailContext[Any], value: Any) -> GuardFailure | None:
    """One guardrail on ``value``: ``None`` if it passed, else the error the run fails with.

    A guardrail ends with a verdict or fails the run: what it raises is a ``GuardrailError``, a
    ``CancelledError`` too unless the run (or the task group of the guardrails, after a trip) is really
    being cancelled (``_cancels_us``). ``KeyboardInterrupt``, ``SystemExit`` and the like propagate."""
    kind = view.kind
    try:
        verdict = guard.function(view, value)
        if inspect.isawaitable(verdict):
            verdict = await verdict
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        failed = GuardrailError(kind, guard.name, error)
        failed.__cause__ = exc
        return failed
    except BaseException as exc:
        if not _is_cancellation(exc) or _cancels_us(exc):
            raise
        failed = GuardrailError(
            kind, guard.name, f"{type(exc).__name__} while nothing cancelled the run (it gave no verdict)"
        )
        failed.__cause__ = exc
        return failed
    if verdict is None:
        return None
    if isinstance(verdict, Tripwire):
        tripped = InputGuardrailTripped if kind == "input" else OutputGuardrailTripped
        return tripped(guard.name, verdict.reason, verdict.info)
    return GuardrailError(
        kind,
        guard.name,
        f"returned a {type(verdict).__name__}, which gives no verdict (return None to pass, Tripwire('why') "
        "to stop the run)",
    )


def _is_cancellation(exc: BaseException) -> bool:
    return isinstance(exc, asyncio.CancelledError | anyio.get_cancelled_exc_class())


def _cancels_us(exc: BaseException) -> bool:
    """Whether a cancellation exception is the cancellation of the task running the guardrail (a cancelled
    scope around it: the run's, its deadline, the guardrails' task group; or the task itself cancelled),
    not one the guardrail's code raised or got from elsewhere (a shared task another request cancelled),
    which must not pass for the run's: swallowed by a scope, it would end the run without a verdict."""
    cancelled = anyio.get_cancelled_exc_class()
    if cancelled is not asyncio.CancelledError:
        return isinstance(exc, cancelled)  # trio's Cancelled comes from a cancelled scope alone
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        return True  # ``task.cancel()``: an anyio scope's delivery, or a plain asyncio cancel
    # A scope cancelled whose cancellation has not reached the task yet.
    return anyio.current_effective_deadline() == -math.inf


async def _forget(
    runtime: AgentRuntime,
    ctx: RunContext,
    failure: GuardFailure,
    result: AgentResult | None,
) -> None:
    """End what the stop cut short, put memory back as the run found it, give ``failure`` the run's partial
    result and publish ``GuardrailTripped`` for a trip. The caller raises ``failure`` (then ``RunFailed``)."""
    # A stop keeps nothing of the run, as a run ended before the verdict does: the model turn the stop cut
    # short (or kept waiting for the guardrails), memory (back at ``restore_point``), the answer on ctx.
    ctx.unchecked = True
    broken = await settle(runtime, ctx, f"the run was stopped: {failure}")
    if broken is not None:
        failure.add_note(f"Completing the run's memory failed as well: {type(broken).__name__}: {broken}")
    message = str(failure)
    if result is not None:  # an output guardrail's: the answer it stopped stays for your logs
        # ``new_items``: what memory keeps, a resumed run's decided calls' results (else nothing).
        failure.partial = attrs.evolve(
            result, stop_reason=StopReason.ERROR, error=message, new_items=tuple(ctx.new_items)
        )
    else:
        failure.partial = ctx.result_for(StopReason.ERROR, error=message)
    if isinstance(failure, TripwireError):
        event = GuardrailTripped(
            kind=failure.kind, guardrail=failure.guardrail, reason=failure.reason, info=failure.info
        )
        # The run is ending (``settle`` began it): this publish waits for no subscriber, only callbacks.
        with anyio.move_on_after(CLEANUP_SECONDS, shield=True):
            await ctx.emit(event)
