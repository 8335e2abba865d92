"""How a run with guardrails is driven (``AgentRuntime.execute`` hands it here; the values are in
``agentflow.runtimes.guardrails``).

::

    [blocking input guardrails, concurrently]            nothing sent to the model until they pass
    ┌ the other input guardrails, concurrently ┐          in the run's task group, inside its scopes
    └ start (input → memory; a plan) and the steps ┘      step 0 waits for them after its model call
    [output guardrails, concurrently, on a final answer]
    a trip (or a guardrail that raises): the work it cut short ended, memory as the run found it,
    GuardrailTripped, then RunFailed

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
  leaves memory as the run found it: neither the input nor anything the model wrote, so the next turn of a
  session does not carry a rejected request (or answer) into its prompt, and a stored session saves nothing
  of it. The error's ``partial`` has the run's work for your logs (an output trip's: the answer).
- **One terminal event.** ``GuardrailTripped`` then ``RunFailed`` (``InputGuardrailTripped`` /
  ``OutputGuardrailTripped``): a policy stop is a failure of the request, raised by ``agent.run()`` as
  ``MaxStepsExceeded`` or ``ToolRetriesExceeded`` are, not a ``RunFinished`` whose result a caller could
  mistake for an answer (as a ``StopReason.REFUSAL`` would be: that is the model's own, and has its text).
- A resumed run (``approvals=``) first runs the calls it left open, which have side effects: its input
  guardrails all run before, as blocking ones. A run with no input (a resume without) has none to check.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio
import attrs

from ..events import GuardrailTripped
from ..result import AgentResult, StopReason
from .context import RunContext
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
from .run_ending import CLEANUP_SECONDS, settle

if TYPE_CHECKING:
    from .base import AgentRuntime

__all__ = ["InputCheck", "guarded_run"]

GuardFailure = TripwireError | GuardrailError
"""What a guardrail ends a run with."""


class InputCheck:
    """The input guardrails that run beside a run's first step, while they run (``RunContext.input_guard``):
    the step waits on ``passed`` before it reads its model turn. ``failure`` is what ended them, if any."""

    __slots__ = ("failure", "passed")

    def __init__(self) -> None:
        self.passed = anyio.Event()
        self.failure: GuardFailure | None = None


async def guarded_run(runtime: AgentRuntime, ctx: RunContext, guards: Guardrails) -> AgentResult:
    """``runtime.start`` and ``runtime.run_loop`` with the run's guardrails around them (module docstring);
    raises the ``TripwireError`` or ``GuardrailError`` that stopped the run, with memory put back."""
    snapshot = ctx.memory.snapshot()
    failure: GuardFailure | None = None
    result: AgentResult | None = None
    inputs = guards.input if ctx.input_items else ()
    before = [g for g in inputs if g.blocking or ctx.decisions is not None]
    beside = [g for g in inputs if g not in before]
    if before:
        failure = await _first_failure(ctx, guards, before, "input", ctx.input_text)
    if failure is None:
        if beside:
            result, failure = await _beside(runtime, ctx, guards, beside)
        else:
            await runtime.start(ctx)
            result = await runtime.run_loop(ctx)
    if failure is None:
        assert result is not None
        if not guards.output or result.stop_reason is not StopReason.FINAL_ANSWER:
            return result
        failure = await _first_failure(ctx, guards, guards.output, "output", result.output)
        if failure is None:
            return result
    await _forget(runtime, ctx, failure, snapshot, result)
    raise failure


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
    failure = await _first_failure(ctx, guards, guardrails, "input", ctx.input_text)
    if failure is not None:
        check.failure = failure
        scope.cancel()  # the model call in flight, a plan, whatever else the run was doing
        return
    ctx.input_guard = None  # later steps need not look
    check.passed.set()


async def _first_failure(
    ctx: RunContext, guards: Guardrails, guardrails: Sequence[Guardrail], kind: GuardrailKind, value: Any
) -> GuardFailure | None:
    """Run ``guardrails`` concurrently on ``value``; the first trip or error (the others are then cancelled),
    or ``None`` when every one passed. Returned, never raised: so nothing comes in an exception group."""
    view: GuardrailContext[Any] = GuardrailContext(
        deps=ctx.deps,
        run_id=ctx.run_id,
        agent_name=guards.agent,
        kind=kind,
        input_text=ctx.input_text,
        input_items=ctx.input_items,
        session_id=ctx.session_id,
        output_text=ctx.output_text if kind == "output" else None,
        usage=ctx.usage,
    )
    if len(guardrails) == 1:
        return await _check(guardrails[0], view, value)
    found: list[GuardFailure] = []

    async def one(guard: Guardrail, scope: anyio.CancelScope) -> None:
        failure = await _check(guard, view, value)
        if failure is not None and not found:
            found.append(failure)
            scope.cancel()

    async with anyio.create_task_group() as group:
        for guard in guardrails:
            group.start_soon(one, guard, group.cancel_scope)
    return found[0] if found else None


async def _check(guard: Guardrail, view: GuardrailContext[Any], value: Any) -> GuardFailure | None:
    """One guardrail on ``value``: ``None`` if it passed, else the error the run fails with."""
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
    if verdict is None:
        return None
    if isinstance(verdict, Tripwire):
        tripped = InputGuardrailTripped if kind == "input" else OutputGuardrailTripped
        return tripped(guard.name, verdict.reason, verdict.info)
    return GuardrailError(
        kind,
        guard.name,
        f"nothing it may return: it returned a {type(verdict).__name__} (return None to pass, "
        "Tripwire('why') to stop the run)",
    )


async def _forget(
    runtime: AgentRuntime,
    ctx: RunContext,
    failure: GuardFailure,
    snapshot: tuple[Any, ...],
    result: AgentResult | None,
) -> None:
    """End what the stop cut short, put memory back as the run found it, give ``failure`` the run's partial
    result and publish ``GuardrailTripped`` for a trip. The caller raises ``failure`` (then ``RunFailed``)."""
    # A model turn the stop cut short (or kept waiting for the guardrails) is not the run's: not kept.
    ctx.unhandled = None
    broken = await settle(runtime, ctx, f"the run was stopped: {failure}")
    if broken is not None:
        failure.add_note(f"Completing the run's memory failed as well: {type(broken).__name__}: {broken}")
    try:
        ctx.memory.restore(snapshot)
    except Exception as exc:
        failure.add_note(f"Putting the run's memory back failed as well: {type(exc).__name__}: {exc}")
    ctx.new_items.clear()  # nothing of the run is in memory: a stored session saves none of it
    message = str(failure)
    if result is not None:  # an output guardrail's: the answer it stopped stays for your logs
        failure.partial = attrs.evolve(result, stop_reason=StopReason.ERROR, error=message, new_items=())
    else:
        failure.partial = ctx.result_for(StopReason.ERROR, error=message)
    if isinstance(failure, TripwireError):
        event = GuardrailTripped(
            kind=failure.kind, guardrail=failure.guardrail, reason=failure.reason, info=failure.info
        )
        # The run is ending (``settle`` began it): this publish waits for no subscriber, only callbacks.
        with anyio.move_on_after(CLEANUP_SECONDS, shield=True):
            await ctx.emit(event)
