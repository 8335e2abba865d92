"""How the loop hands a run over to another agent (the values: ``agentflow.agent.handoffs``).

A step whose turn calls transfer tools runs the first of them (in call order) with its other calls, and
refuses the rest (``split``); once every result is in memory, a transfer that succeeded marks the run
(``take``: ``RunContext.handoff``); before the next step, the loop gives the run to the target (``hand_over``:
``Handoff.switch``, ``HandedOff``, the target runtime's ``take_over``) and goes on with its runtime's steps.
Only a run whose agent has handoffs (``RunContext.handoffs``) comes here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..agent.item_shapes import is_runtime_note, is_user_item, tool_output_call_id
from ..events import HandedOff
from ..model.messages import ToolCall
from ..result import ToolResult
from ..tools.outcome import TOOL_ERROR_PREFIX
from .calls import calls_of

if TYPE_CHECKING:
    from ..agent.handoffs import Handoff
    from .base import AgentRuntime
    from .context import RunContext

__all__ = ["hand_over", "resume_handoffs", "split", "take"]


def split(
    handoffs: Mapping[str, Handoff], calls: Sequence[ToolCall], run: list[int]
) -> tuple[list[int], list[int], str]:
    """``run`` (indexes of ``calls`` about to run) without the transfer calls after the first: those left to
    run, those refused, and the reason they get."""
    first: Handoff | None = None
    kept: list[int] = []
    refused: list[int] = []
    for index in run:
        found = handoffs.get(calls[index].name)
        if found is None:
            kept.append(index)
        elif first is None:
            first = found
            kept.append(index)
        else:
            refused.append(index)
    reason = ""
    if first is not None:
        reason = (
            f"not run: this turn hands the conversation over to {first.agent.name} already "
            f"({first.tool_name}); a turn hands over once"
        )
    return kept, refused, reason


def take(ctx: RunContext, handoffs: Mapping[str, Handoff], results: Sequence[ToolResult]) -> None:
    """Mark the run for the handoff of the first transfer call among ``results`` (the step's, in call order,
    already in memory) that succeeded, if any: the loop hands over before the next step."""
    for result in results:
        if result.ok:
            found = handoffs.get(result.name)
            if found is not None:
                ctx.handoff = found
                ctx.handoff_call = result.call_id
                return


async def hand_over(ctx: RunContext, *, take_over: bool = True) -> AgentRuntime:
    """Give the run to the agent ``ctx.handoff`` names; the runtime whose steps go on with it (its
    ``take_over`` awaited first, unless ``take_over=False``)."""
    handoff = ctx.handoff
    assert handoff is not None
    ctx.handoff = None
    source = ctx.agent_name or ""
    runtime = await handoff.switch(ctx)
    if ctx.bus.has_listeners():
        await ctx.emit(HandedOff(source=source, target=handoff.agent.name, call_id=ctx.handoff_call or ""))
    if take_over:
        await runtime.take_over(ctx)
    return runtime


async def resume_handoffs(ctx: RunContext) -> None:
    """A resumed run (``approvals=``) of an agent with handoffs goes on with the agent its paused run was on:
    the handoffs that run's transfer calls made (those after the conversation's last user message that
    succeeded) are made again, in order, before the open calls run with that agent's tools. ``HandedOff``
    for each; the target's ``take_over`` comes once the calls are answered (``AgentRuntime.start``)."""
    items = ctx.memory.items
    start = 0
    for index in range(len(items) - 1, -1, -1):
        if is_user_item(items[index]) and not is_runtime_note(items[index]):
            start = index + 1
            break
    outputs: dict[str, Any] = {}
    for item in items[start:]:
        call_id = tool_output_call_id(item)
        if call_id is not None and isinstance(item, Mapping):
            outputs[call_id] = item.get("output", item.get("content"))
    for item in items[start:]:
        for call in calls_of(item):
            handoffs = ctx.handoffs
            found = None if handoffs is None else handoffs.get(call.name)
            output = outputs.get(call.id)
            if found is None or not isinstance(output, str) or output.startswith(TOOL_ERROR_PREFIX):
                continue
            ctx.handoff, ctx.handoff_call = found, call.id
            await hand_over(ctx, take_over=False)
