"""How the loop hands a run over to another agent (the values: ``agentflow.agent.handoffs``).

A step whose turn calls transfer tools runs the first of them (in call order) with its other calls, and
refuses the rest (``split``); once every result is in memory, a transfer that succeeded marks the run
(``take``: ``RunContext.handoff``); before the next step, the loop gives the run to the target (``hand_over``:
``Handoff.switch``, ``HandedOff``, the target runtime's ``take_over``) and goes on with its runtime's steps.
Only a run whose agent has handoffs (``RunContext.handoffs``) comes here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..agent.item_shapes import (
    is_runtime_note,
    is_user_item,
    tool_call_ids,
    tool_output_call_id,
)
from ..agent.overrides import active_override
from ..events import HandedOff
from ..model.messages import ToolCall
from ..result import ToolResult
from ..tools.outcome import TOOL_ERROR_PREFIX
from .calls import calls_of, open_tool_calls, stored_outputs, turn_around

if TYPE_CHECKING:
    from ..agent.handoffs import Handoff
    from ..tools.registry import ToolRegistry
    from .base import AgentRuntime
    from .context import RunContext

__all__ = ["hand_over", "resume_handoffs", "split", "take"]


def split(
    handoffs: Mapping[str, Handoff], offered: ToolRegistry, calls: Sequence[ToolCall], run: list[int]
) -> tuple[list[int], list[int], str]:
    """``run`` (indexes of ``calls`` about to run) without the transfer calls after the first: those left to
    run, those refused, and the reason they get. A call to a transfer tool the step does not offer
    (``handoff(enabled=...)``) is no transfer: it runs, as an unknown tool's, and hands nothing over."""
    first: Handoff | None = None
    kept: list[int] = []
    refused: list[int] = []
    for index in run:
        name = calls[index].name
        found = handoffs.get(name)
        if found is None or offered.get(name) is None:
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


async def hand_over(ctx: RunContext, *, take_over: bool = True, upto: int | None = None) -> AgentRuntime:
    """Give the run to the agent ``ctx.handoff`` names; the runtime whose steps go on with it (its
    ``take_over`` awaited first, unless ``take_over=False``). ``upto``: where the conversation stood at the
    handoff, for one made again on resume (``Handoff.switch``)."""
    handoff = ctx.handoff
    assert handoff is not None
    ctx.handoff = None
    source = ctx.agent_name or ""
    runtime = await handoff.switch(ctx, upto=upto)
    if ctx.bus.has_listeners():
        await ctx.emit(HandedOff(source=source, target=handoff.agent.name, call_id=ctx.handoff_call or ""))
    if take_over:
        await runtime.take_over(ctx)
    return runtime


async def resume_handoffs(ctx: RunContext) -> tuple[Handoff, str] | None:
    """A resumed run (``approvals=``) of an agent with handoffs goes on with the agent its paused run was on.

    That agent made the turn holding the open calls: the handoffs made before that turn, since the paused
    run began, are made again, in order (``HandedOff`` for each), each target shown what its
    ``input_filter`` made of the conversation up to its transfer and the rest as it is. The run began at a
    person's message; a resumed run's input is one too, so the latest such message whose handoffs lead
    (through each agent's own handoffs) to an agent with the open calls' tools is where it began.

    Returns the transfer the open calls' own turn made, if one succeeded: the caller hands over once the
    decided calls are answered with the tools of the agent that made them, as a step would have. The
    target's ``take_over`` comes after (``AgentRuntime.start``)."""
    items = ctx.memory.items
    entry = ctx.handoffs
    assert entry is not None
    open_ids = {call.id for call in open_tool_calls(items)}
    first = next((i for i, item in enumerate(items) if open_ids.intersection(tool_call_ids(item))), None)
    if first is None:
        return None
    begin, end = turn_around(items, first)
    outputs = stored_outputs(items)
    names = {call.name for item in items[begin:end] for call in calls_of(item) if call.id in open_ids}
    transfers = _transfer_names(entry)
    starts = [
        i + 1 for i in range(begin - 1, -1, -1) if is_user_item(items[i]) and not is_runtime_note(items[i])
    ]
    chosen: list[tuple[Handoff, str, int]] | None = None
    for start in (*starts, 0):
        chain = _chain(items, start, begin, entry, outputs, transfers)
        if chain is not None and _has_tools(ctx, chain[-1][0] if chain else None, names):
            chosen = chain
            break
    if chosen is None:
        # No handoffs in the conversation lead to an agent with the open calls' tools (a memory that trims
        # dropped the transfer, say): the first agent the run may reach that has them made the calls.
        found = _reaching(entry, lambda handoff: _has_tools(ctx, handoff, names))
        chosen = [] if found is None else [(found, "", begin)]
    for made, call_id, upto in chosen:
        ctx.handoff, ctx.handoff_call = made, call_id
        await hand_over(ctx, take_over=False, upto=upto)
    offered = ctx.handoffs
    if offered is None:
        return None
    for item in items[begin:end]:
        for call in calls_of(item):
            found = offered.get(call.name)
            if found is not None and _succeeded(outputs.get(call.id)):
                return found, call.id
    return None


def _chain(
    items: Sequence[Any],
    start: int,
    stop: int,
    entry: Mapping[str, Handoff],
    outputs: Mapping[str, str],
    transfers: frozenset[str],
) -> list[tuple[Handoff, str, int]] | None:
    """The handoffs made in ``items[start:stop]`` by a run that began there on the entry agent: each with its
    call id and the end of its turn's outputs. ``None`` when they do not fit: a transfer the agent at that
    point did not have (the run began earlier, on another agent)."""
    handoffs: Mapping[str, Handoff] | None = entry
    chain: list[tuple[Handoff, str, int]] = []
    for index in range(start, stop):
        if not tool_call_ids(items[index]):
            continue
        for call in calls_of(items[index]):
            if call.name not in transfers or not _succeeded(outputs.get(call.id)):
                continue
            found = None if handoffs is None else handoffs.get(call.name)
            if found is None:
                return None
            chain.append((found, call.id, _turn_end(items, index)))
            handoffs = found.agent._handoffs
            break  # a turn hands over once: the first that succeeded
    return chain


def _has_tools(ctx: RunContext, handoff: Handoff | None, names: set[str]) -> bool:
    """Whether the agent ``handoff`` leads to (``None``: the run's own) has tools of all ``names`` (one with
    toolsets may: they are listed only when it takes the run)."""
    if handoff is None:
        tools = ctx.tools
    else:
        agent = handoff.agent
        found = active_override(agent)
        tools = agent.tools if found is None or found.tools is None else found.tools
    return bool(tools.toolsets) or all(tools.resolve(name) is not None for name in names)


def _reaching(entry: Mapping[str, Handoff], wanted: Callable[[Handoff], bool]) -> Handoff | None:
    """The first handoff, breadth first from the entry agent's, that is ``wanted``."""
    seen: set[int] = set()
    queue = [entry]
    while queue:
        for found in queue.pop(0).values():
            if wanted(found):
                return found
            nested = found.agent._handoffs
            if nested is not None and id(nested) not in seen:
                seen.add(id(nested))
                queue.append(nested)
    return None


def _transfer_names(entry: Mapping[str, Handoff]) -> frozenset[str]:
    """The tool names of every handoff the entry agent's run may make, through other agents too."""
    names: set[str] = set()

    def note(handoff: Handoff) -> bool:
        names.add(handoff.tool_name)
        return False  # on to the next: every one is noted

    _reaching(entry, note)
    return frozenset(names)


def _turn_end(items: Sequence[Any], index: int) -> int:
    """The index after the outputs of the turn ``items[index]`` is part of: the conversation up to there is
    what a handoff made in that turn showed its target (through its ``input_filter``)."""
    end = turn_around(items, index)[1]
    while end < len(items) and tool_output_call_id(items[end]) is not None:
        end += 1
    return end


def _succeeded(output: str | None) -> bool:
    """Whether a call's stored output is a result, not a ``TOOL_ERROR`` (``None``: it has none)."""
    return output is not None and not output.startswith(TOOL_ERROR_PREFIX)
