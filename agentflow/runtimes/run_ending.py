"""How a run ends: memory completed, then exactly one terminal event (``AgentRuntime.execute``'s ending).

Every way a run ends comes here: ``end_finished`` (its answer, or a limit), ``end_cancelled`` (a cancel or the
deadline), ``fail`` (an exception). Each completes memory first (``settle``: the turn a cut left unhandled,
the calls still pending, the eager calls of a cut step; for a guarded run whose guardrails had not given
their verdict, memory put back as the run found it: ``RunContext.unchecked``), then awaits
``RunContext.before_terminal`` (a stored session's save), then publishes the terminal event. All of it runs
shielded and capped at ``CLEANUP_SECONDS`` per part, so a run that is being cancelled still ends whole, and
nothing here raises what went wrong on the way: it is returned, or noted on the run's own error, so the
terminal event comes.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

import anyio

from ..bus import BusClosedError
from ..events import RunCancelled, RunFailed, RunFinished, TerminalEvent
from ..model.errors import ModelError
from ..result import AgentResult, StopReason
from ..tools.outcome import exception_message
from .context import RunContext
from .errors import attach_run_result, own_result
from .model_calls import CutAnswer

if TYPE_CHECKING:
    from .base import AgentRuntime

__all__ = ["CLEANUP_SECONDS", "end_cancelled", "end_failed", "end_finished", "fail", "settle"]

CLEANUP_SECONDS = 10.0
"""How long each shielded part of a run's ending (settling memory; ``RunContext.before_terminal``; the
terminal event) may take.

Publishing never waits for a subscriber once a run is ending (``EventBus.begin_ending``), so only an async
event callback or a runtime's own ``settle_pending`` (CodeAct stopping its sandbox) can use this time."""

_NO_SCOPE = contextlib.nullcontext()  # reusable: entering it does nothing


async def end_finished(ctx: RunContext, result: AgentResult) -> Exception | None:
    """``RunFinished(result)``; or, if ``before_terminal`` fails, ``RunFailed`` for that error, returned for
    the caller to raise."""
    if ctx.before_terminal is not None:
        late = await _before_terminal(ctx)
        if late is not None:
            await end_failed(ctx, late, partial=result)
            return late
    await _publish_terminal(ctx, RunFinished(result=result))
    return None


async def fail(runtime: AgentRuntime, ctx: RunContext, exc: BaseException) -> None:
    """Settle and publish the terminal event of a run that fails with ``exc`` (the caller raises it)."""
    broken = await settle(runtime, ctx, "the run failed before this tool call finished")
    if broken is not None:
        exc.add_note(f"Completing the run's memory failed as well: {exception_message(broken)}")
    await end_failed(ctx, exc)


async def end_failed(ctx: RunContext, exc: BaseException, *, partial: AgentResult | None = None) -> None:
    """Publish ``RunFailed`` for ``exc``; ``partial``: the result of a run that ended otherwise and fails
    for what came after (its ``before_terminal``)."""
    ctx.error = exc
    if partial is None:
        partial = own_result(exc)  # an AgentRunError's own (not one raised mid-step by a tool call)
    if partial is None:
        partial = ctx.result_for(StopReason.ERROR, error=exception_message(exc))
    ctx.result = partial
    # Whatever the run raises carries its partial result (``agent.run()`` has no other handle on it).
    attach_run_result(exc, partial)
    if ctx.before_terminal is not None:
        late = await _before_terminal(ctx)
        if late is not None and late is not exc:
            exc.add_note(f"Ending the run failed as well: {exception_message(late)}")
    model_error = exc if isinstance(exc, ModelError) else None
    retryable = getattr(exc, "retryable", None)  # a ModelError's, a SessionConflictError's…
    failed = RunFailed(
        error_type=type(exc).__name__,
        error=str(exc),
        partial=partial,
        status=model_error.status if model_error is not None else None,
        retryable=retryable if isinstance(retryable, bool) else None,
        request_id=model_error.request_id if model_error is not None else None,
    )
    await _publish_terminal(ctx, failed)


async def end_cancelled(runtime: AgentRuntime, ctx: RunContext, reason: StopReason) -> Exception | None:
    """Settle and publish the terminal event of a cancelled run; the error if settling failed.

    A run whose memory could not be completed (a custom ``Memory`` refused the writes) has not ended
    cleanly: it ends with ``RunFailed`` for that error instead of ``RunCancelled``.
    """
    if reason is StopReason.DEADLINE:
        why = f"the run's time limit ({ctx.options.timeout} s) was reached before this tool call finished"
    else:
        why = "the run was cancelled before this tool call finished"
    broken = await settle(runtime, ctx, why)
    if broken is not None:
        await end_failed(ctx, broken)
        return broken
    ctx.result = ctx.result_for(reason)
    if ctx.before_terminal is not None:
        late = await _before_terminal(ctx)
        if late is not None:
            await end_failed(ctx, late, partial=ctx.result)
            return late
    await _publish_terminal(ctx, RunCancelled(partial=ctx.result))
    return None


async def settle(runtime: AgentRuntime, ctx: RunContext, reason: str) -> Exception | None:
    """Complete memory for an ending run (the runtime's ``keep_turn`` / ``keep_cut_answer`` /
    ``settle_pending`` hooks); what went wrong doing it, if anything.

    Whatever happens here, the run still gets its terminal event: an error is returned, not raised.
    """
    # Shielded (a cancel may be what brought us here) and capped; from now on publishing never waits for a
    # subscriber, so a consumer that stopped reading cannot hold the ending up.
    ctx.bus.begin_ending()
    early, ctx.early_calls = ctx.early_calls, None  # calls of the step cut short that started early
    unchecked = ctx.unchecked
    if unchecked:
        # A guardrail's verdict was pending: the turn it held back (step 0's, waiting for the input
        # guardrails) is not the run's to keep, nor is anything else of it (below).
        ctx.unchecked = False
        ctx.unhandled = None
    try:
        try:
            if ctx.unhandled is not None:
                result, ctx.unhandled = ctx.unhandled, None
                if isinstance(result, CutAnswer):
                    runtime.keep_cut_answer(ctx, result.output_text)
                else:
                    runtime.keep_turn(ctx, result)
            if early is not None:
                early.lend(ctx.pending, ctx.finished)  # memory holds their turn: settled with it
            with anyio.move_on_after(CLEANUP_SECONDS, shield=True):
                await runtime.settle_pending(ctx, reason)
        finally:
            try:
                if early is not None:
                    # Announced, but their turn never reached memory: they end with an event alone.
                    with anyio.move_on_after(CLEANUP_SECONDS, shield=True):
                        await early.end_unfinished(reason)
            finally:
                if unchecked:  # whatever went wrong above: memory is put back all the same
                    _forget_unchecked(ctx)
    except Exception as exc:
        return exc
    return None


def _forget_unchecked(ctx: RunContext) -> None:
    """A guarded run ending before its guardrails' verdict (cancelled, timed out, failed, or stopped by one of
    them) fails closed: memory back at its ``restore_point`` and no ``new_items`` beyond it (a stored session
    saves none of the run), and no answer in its partial result, since none was checked."""
    ctx.output = None
    ctx.output_text = ""
    ctx.reasoning_text = ctx.refusal = None
    ctx.roll_back()


async def _before_terminal(ctx: RunContext) -> Exception | None:
    """Await ``ctx.before_terminal`` (once); the exception that fails the run instead, if any.

    Shielded and capped as the settling is: it may run in a cancelled task, and the terminal event must
    still come. A hook that raises fails the run as one that returns its exception.
    """
    hook, ctx.before_terminal = ctx.before_terminal, None
    assert hook is not None
    late: Exception | None = None
    with anyio.move_on_after(CLEANUP_SECONDS, shield=True):
        try:
            late = await hook()
        except Exception as exc:
            late = exc
    return late


async def _publish_terminal(ctx: RunContext, event: TerminalEvent) -> None:
    # Shielded and capped apart from the settling, so a run always gets its terminal event (the bus closes
    # even if an async callback is cut short). If someone closed the bus early nobody can receive the event
    # any more; the outcome is on ctx. Without a callback the publish cannot suspend (subscriptions never
    # hold the ending up), so it needs no scope.
    shielded = anyio.move_on_after(CLEANUP_SECONDS, shield=True) if ctx.bus.ending_may_wait else None
    with shielded or _NO_SCOPE, contextlib.suppress(BusClosedError):
        await ctx.emit(event)
