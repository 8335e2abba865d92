"""A run's model calls: a streamed call's events relayed to the run's bus, a blocking call's retries and
billed usage, and a turn's events published whole.

The base runtime (``AgentRuntime.call_model``) streams through ``streamed_call`` (the agent hot path: one pass
of its loop per text delta) and makes its blocking calls, as the DeepResearch planner does, through
``blocking_call``; ``publish_turn`` publishes what no stream delivered of a model turn. Run state comes in a
``RunContext``; nothing here decides what a run does next: a streamed call hands each ``ToolCallReady`` to the
step's ``EarlyCalls`` when it has one (``agentflow.runtimes.eager_calls`` decides whether the call starts).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import attrs

from ..agent.prompt import AgentModelResult, AgentPrompt
from ..bus import EventBus
from ..model.errors import ModelError, StreamCutOffError
from ..model.events import (
    ModelCompleted,
    ModelRetry,
    ReasoningDelta,
    RefusalDelta,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallReady,
    ToolCallStarted,
    UsageReported,
)
from ..model.response import TokenUsage
from ..model.retries import retry_listener
from .context import RunContext

__all__ = ["CutAnswer", "billed_usage", "blocking_call", "publish_turn", "streamed_call"]

T = TypeVar("T")

_ANSWER_EVENTS = (TextDelta, ReasoningDelta, RefusalDelta, ToolCallStarted)
"""The events that are part of a model's answer: the first one is its first chunk."""


@attrs.frozen
class CutAnswer(AgentModelResult):
    """The text a streamed model call had published when it was cut short (cancelled, failed): not a turn.

    ``streamed_call`` leaves it in ``RunContext.unhandled``; the run's ending hands it to
    ``AgentRuntime.keep_cut_answer`` instead of ``keep_turn``.
    """


def billed_usage(error: ModelError) -> TokenUsage | None:
    """What a model call that failed on its answer (an incomplete response…) was billed, if it says."""
    usage = getattr(getattr(error, "partial", None), "usage", None)
    return usage if isinstance(usage, TokenUsage) else None


class _RetryRelay:
    """Publishes a blocking model call's retries on the run's bus while the call lasts.

    Emptied when the call ends: the tasks the HTTP library starts during the call keep a copy of the
    context, hence of this listener, for as long as it keeps them (a pooled connection keeps its last
    request's); through a bound ``ctx.publish`` that copy would hold the whole run, in a reference cycle.
    """

    __slots__ = ("bus",)

    def __init__(self, bus: EventBus) -> None:
        self.bus: EventBus | None = bus

    async def __call__(self, retry: ModelRetry) -> None:
        if self.bus is not None:
            await self.bus.publish(retry)


async def blocking_call(ctx: RunContext, call: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
    """``await call(*args, **kwargs)``: a blocking model call of the run.

    Its retries are published on the run's bus as they happen (``ModelRetry``, through ``retry_listener``,
    set before the call is made: a blocking call has no stream to carry them), and what it was billed
    although it failed (an incomplete response) counts in the run's usage. A step's call and a DeepResearch
    planner's go through here.
    """
    relay = _RetryRelay(ctx.bus)
    token = retry_listener.set(relay)
    try:
        return await call(*args, **kwargs)
    except ModelError as exc:
        spent = billed_usage(exc)
        if spent is not None:
            ctx.add_usage(spent)
        raise
    finally:
        retry_listener.reset(token)
        relay.bus = None


async def publish_turn(
    ctx: RunContext,
    result: AgentModelResult,
    *,
    text: bool,
    reasoning: bool,
    refusal: bool,
    calls: bool = False,
    first_chunk: float | None = None,
) -> None:
    """The parts of a model turn no stream delivered, whole; then ``ModelCompleted`` (with ``first_chunk``,
    a streamed call's time to its first chunk).

    ``calls`` (a blocking call) adds what a stream carries besides: each tool call as ``ToolCallStarted``,
    one ``ToolCallArgumentsDelta`` and ``ToolCallReady``, and the usage as ``UsageReported`` — only when
    someone listens (nobody else could tell), so an unobserved ``agent.run()`` pays nothing for them.
    """
    if reasoning and result.reasoning_text:
        await ctx.emit(ReasoningDelta(result.reasoning_text))
    if text and result.output_text:
        await ctx.emit(TextDelta(result.output_text))
    if refusal and result.refusal:
        await ctx.emit(RefusalDelta(result.refusal))
    if calls and ctx.bus.has_listeners():
        for index, call in enumerate(result.tool_calls):
            await ctx.emit(ToolCallStarted(index, call.id, call.name))
            if call.arguments:
                await ctx.emit(ToolCallArgumentsDelta(index, call.arguments))
            await ctx.emit(ToolCallReady(index, call))
        if result.usage is not None:
            await ctx.emit(UsageReported(result.usage))
    await ctx.emit(ModelCompleted(result, first_chunk))


async def streamed_call(ctx: RunContext, prompt: AgentPrompt) -> AgentModelResult:
    """One streamed model call of a step: every model event published on the run's bus as it arrives.

    What no delta delivered of the turn is published whole with its ``ModelCompleted`` (``publish_turn``).
    In a step where calls to eager tools may start early (``RunContext.early_calls``), each ``ToolCallReady``
    is offered to it after it is published (``EarlyCalls.offer``).
    The call's usage counts the moment it completes (a cancel after that keeps it), or, for a stream cut
    short, as far as the server reported it; the text it published by then is left for the run's ending
    (``CutAnswer``). Leaving early (cancel, deadline) closes the stream and with it the HTTP response.
    """
    completed: AgentModelResult | None = None
    reported: TokenUsage | None = None
    saw_reasoning = saw_refusal = False
    # The answer's text as published, kept for a call cut short ("stop generating"). Text deltas are
    # tested first, so keeping each costs what testing for the completion first used to.
    texts: list[str] = []
    keep_text = texts.append
    publish = ctx.bus.publish  # once per delta: no wrapper in between
    early = ctx.early_calls  # a step in which calls to eager tools may start early; None in any other
    first_chunk: float | None = None
    started = time.perf_counter()
    try:
        async with ctx.model.create_stream(prompt) as stream:
            async for event in stream:
                if first_chunk is None and isinstance(event, _ANSWER_EVENTS):
                    # The answer began. A usage report or a retry of the call (a 429) is no answer: the time
                    # counts from the first attempt, as the user waits, to the first part of the answer.
                    first_chunk = time.perf_counter() - started
                if isinstance(event, TextDelta):
                    keep_text(event.text)
                elif isinstance(event, ModelCompleted):
                    completed = ctx.unhandled = event.response
                    reported = None
                    ctx.add_usage(completed.usage)
                    await publish_turn(
                        ctx,
                        completed,
                        text=not texts,
                        reasoning=not saw_reasoning,
                        refusal=not saw_refusal,
                        first_chunk=first_chunk,
                    )
                    continue
                elif isinstance(event, ReasoningDelta):
                    saw_reasoning = True
                elif isinstance(event, RefusalDelta):
                    saw_refusal = True
                elif isinstance(event, UsageReported):
                    reported = event.usage  # cumulative: the latest report is the call's usage so far
                elif early is not None and isinstance(event, ToolCallReady):
                    await publish(event)
                    await early.offer(event)  # an eager tool's call starts now, beside the stream
                    continue
                await publish(event)
    except ModelError as exc:
        # A stream that failed on its answer (an incomplete response) may carry what it was billed.
        if reported is None:
            reported = billed_usage(exc)
        raise
    finally:
        if reported is not None:
            # Cut short (cancelled, failed) after the server reported usage: those tokens were spent.
            ctx.add_usage(reported)
        if completed is None and texts:
            # Cut short mid-answer: the run's ending keeps the text its readers saw (``keep_cut_answer``).
            cut = "".join(texts)
            if cut:
                ctx.unhandled = CutAnswer(output_text=cut)
    if completed is None:
        raise StreamCutOffError("the model stream ended without a completion event")
    return completed
