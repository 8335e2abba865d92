"""A run paused for human approval, and the run that resumes it (``AgentOptions(tool_approval="defer")``).

**Pausing.** With ``tool_approval="defer"`` a call that needs approval is not decided in the run: the executor
publishes its ``ToolApprovalRequested`` and hands back a ``deferred`` placeholder (``ToolApprovals.defer``),
while the step's other calls run as usual. ``pause`` then writes those calls' results to memory, in call
order, and leaves the deferred calls open (memory holds them without outputs): the run ends with
``StopReason.APPROVAL_REQUIRED``, one ``RunFinished``, and ``AgentResult.pending_approvals`` lists what
waits. ``all_items`` is everything a later run needs (``dump_items`` stores it as JSON); a session's memory
keeps the open calls, and its store saves them.

**Resuming.** A run started with ``approvals={call_id: True | False | "why"}`` (``RunContext.decisions``)
answers the open calls of its conversation before its input and its first model call (``resume``, from
``AgentRuntime.start``): an approved call runs through the run's executor as any call (its arguments
validated again, ``ToolStarted`` / ``ToolSucceeded`` / ``ToolFailed``, its tool's time limit and ``on_error``)
without being asked about again; a denied one gets the ``denied`` ``TOOL_ERROR`` with the reason, as a
denial in a run does. Each is announced first (``ToolCallRequested``), and counts among the run's
``tool_calls``. Their results go to memory in call order, then the run's input, if any, then the loop goes
on with the model call.

``approvals=`` must match the open calls exactly, and they must be the conversation's last turn (after them,
nothing but tool calls and their outputs): otherwise the run fails with ``ApprovalDecisionError`` before it
runs or writes anything. A run without ``approvals=`` answers open calls as it always did, with a synthetic
``cancelled`` result (``RunContext.remember_input``). Nothing here runs for a run that neither defers nor
resumes: the loop checks ``RunContext.approvals`` (``None`` without tools that need approval) once per step,
and ``RunContext.decisions`` once per run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..agent.items import tool_call_ids, tool_output_call_id
from ..events import ToolFailed, ToolStarted
from ..model.messages import ToolCall
from ..result import StopReason, ToolResult
from ..tools.approval import DEFERRED, ApprovalDecisionError, denied_result
from .calls import open_tool_calls
from .context import RunContext

if TYPE_CHECKING:
    from .base import AgentRuntime

__all__ = ["pause", "resume"]


def pause(ctx: RunContext, calls: Sequence[ToolCall], results: Sequence[ToolResult]) -> StopReason:
    """A step some of whose calls were deferred: the others' results to memory (in call order), the deferred
    ones left open; ``pending_approvals`` in call order. The run stops here."""
    kept = [
        (call, result) for call, result in zip(calls, results, strict=True) if result.error_type != DEFERRED
    ]
    ctx.record_results((call for call, _ in kept), (result for _, result in kept))
    approvals = ctx.approvals
    assert approvals is not None  # only a run whose executor defers gets here
    order = {call.id: index for index, call in enumerate(calls)}
    approvals.deferred.sort(key=lambda request: order.get(request.call_id, len(order)))
    return StopReason.APPROVAL_REQUIRED


async def resume(runtime: AgentRuntime, ctx: RunContext) -> None:
    """Answer the calls the conversation left open with the run's decisions (see the module doc); the run's
    input is written after (``remember_input``). ``ApprovalDecisionError`` before anything runs when they do
    not match."""
    decisions = ctx.decisions
    assert decisions is not None
    existing = ctx.history_items = ctx.memory.items
    calls = _checked_open_calls(existing, decisions)
    if not ctx.input_items:
        # What the run continues: a planner (DeepResearch) plans for it, a trace shows it.
        ctx.input_text = _last_user_text(existing)
    await runtime._announce(ctx, calls)
    results: dict[str, ToolResult] = {}
    listening = ctx.bus.has_listeners()
    for call in calls:
        reason = decisions[call.id]
        if reason is not None:
            found = ctx.tools.resolve(call.name)
            result = denied_result(call, found.name if found is not None else call.name, reason)
            results[call.id] = ctx.finished[call.id] = result
            if listening:
                await ctx.emit(ToolStarted(call=call))
                await ctx.emit(ToolFailed(call=call, result=result))
    approved = tuple(call for call in calls if decisions[call.id] is None)
    if approved:
        executor = ctx.executor
        for call in approved:
            executor.note_approval(call, False)  # decided already: run without asking again
        try:
            ran = await runtime.run_tool_calls(ctx, approved)
        finally:
            executor.forget_approvals()
        results.update((call.id, result) for call, result in zip(approved, ran, strict=True))
    ctx.record_results(calls, [results[call.id] for call in calls])


def _checked_open_calls(items: Sequence[Any], decisions: Mapping[str, str | None]) -> tuple[ToolCall, ...]:
    """The open calls of ``items``, each with a decision, in the conversation's last turn; else
    ``ApprovalDecisionError``."""
    calls = open_tool_calls(items)
    ids = [call.id for call in calls]
    undecided = tuple(call_id for call_id in ids if call_id not in decisions)
    unknown = tuple(call_id for call_id in decisions if call_id not in ids)
    if undecided or unknown:
        raise ApprovalDecisionError(undecided=undecided, unknown=unknown)
    last_break = max((i for i, item in enumerate(items) if _ends_turn(item)), default=-1)
    in_last_turn = {call_id for item in items[last_break + 1 :] for call_id in tool_call_ids(item)}
    earlier = tuple(call_id for call_id in ids if call_id not in in_last_turn)
    if earlier:
        raise ApprovalDecisionError(
            undecided=(),
            unknown=(),
            message=(
                "approvals= decides calls the conversation left open before its last turn ("
                + ", ".join(repr(call_id) for call_id in earlier)
                + "): a paused run's open calls are its conversation's last items; resume from the items "
                "the paused run left (its all_items), without adding to them"
            ),
        )
    return calls


def _ends_turn(item: Any) -> bool:
    """Whether an item closes the turn before it: a message other than an assistant turn's calls (a user or
    system message, an assistant's text); tool calls, their outputs and reasoning do not."""
    if tool_call_ids(item) or tool_output_call_id(item) is not None:
        return False
    if isinstance(item, Mapping):
        return bool(item.get("type", "message" if "role" in item else None) == "message")
    return True


def _last_user_text(items: Sequence[Any]) -> str:
    """The text of the conversation's last user message (``""`` without one)."""
    for item in reversed(items):
        if isinstance(item, Mapping) and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, Sequence):
                return "".join(
                    str(part.get("text", ""))
                    for part in content
                    if isinstance(part, Mapping) and isinstance(part.get("text"), str)
                )
            return ""
    return ""
