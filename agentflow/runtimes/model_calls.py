"""A run's model calls, besides the stream loop: a blocking call's retries and billed usage, and a turn's
events published whole.

The base runtime (``AgentRuntime.call_model``) and the DeepResearch planner make their blocking calls through
``blocking_call``; ``publish_turn`` publishes what no stream delivered of a model turn. Run state comes in a
``RunContext``; nothing here decides what a run does next.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from ..agent.prompt import AgentModelResult
from ..bus import EventBus
from ..model.errors import ModelError
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

__all__ = ["billed_usage", "blocking_call", "publish_turn"]

T = TypeVar("T")


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
) -> None:
    """The parts of a model turn no stream delivered, whole; then ``ModelCompleted``.

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
    await ctx.emit(ModelCompleted(result))
