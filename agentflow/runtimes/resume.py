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
without being asked about again (unless its tool's ``enabled`` function now leaves it out: it is then an
unknown tool's ``TOOL_ERROR``, as in a step); a denied one gets the ``denied`` ``TOOL_ERROR`` with the
reason, as a denial in a run does. Each is announced first (``ToolCallRequested``), and counts among the run's
``tool_calls`` and against its ``max_tool_calls``: those beyond the limit get the ``cancelled`` "not run"
result a step's calls beyond it get (the model, told so, may still answer; a call it makes is refused and
ends the run with ``MAX_TOOL_CALLS``). Their results go to memory in call order, then the run's input, if
any, then the loop goes on with the model call — unless a call of the paused turn to a ``return_direct``
tool succeeded (approved now, or run before the pause) and the run has no input: its result is then the
run's answer (``FINAL_ANSWER``, no model call, no handoff that turn made), as when the call is approved
inside a run. A resumed run without input shows the conversation's last
user message as its ``input_text`` (``RunStarted.input``, a planner's goal: ``last_user_text``).

Once written, those results are the run's ``RestorePoint``: a run that fails or is stopped after that
(a guardrail's trip, ``rollback_on_failure``) puts memory back with them, so an approved call that ran is
never open again, to run a second time when the same decisions are sent again.

``approvals=`` must match the open calls exactly, and they must be the conversation's last turn (after them,
nothing but tool calls, their outputs, reasoning and the assistant's text): otherwise the run fails with
``ApprovalDecisionError`` before it runs or writes anything (a guarded run's input guardrails included). A
run without ``approvals=`` answers open calls as it always did, with a synthetic ``cancelled`` result
(``RunContext.remember_input``). Nothing here runs for a run that neither defers nor
resumes: the loop checks ``RunContext.approvals`` (``None`` without tools that need approval) once per step,
and ``RunContext.decisions`` once per run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..agent.items import is_runtime_note, item_text, tool_call_ids, tool_output_call_id
from ..events import ToolFailed, ToolStarted
from ..model.messages import ToolCall
from ..result import StopReason, ToolResult
from ..tools.approval import DEFERRED, ApprovalDecisionError, denied_result
from ..tools.outcome import TOOL_ERROR_PREFIX
from .calls import calls_of, open_tool_calls, stored_outputs, turn_around
from .context import RestorePoint, RunContext
from .tool_availability import choose_tools

if TYPE_CHECKING:
    from .base import AgentRuntime

__all__ = ["check_open_calls", "last_user_text", "pause", "resume"]

_TURN_ROLES = frozenset(("user", "system", "developer"))


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


async def resume(runtime: AgentRuntime, ctx: RunContext) -> StopReason | None:
    """Answer the calls the conversation left open with the run's decisions (see the module doc); the run's
    input is written after (``remember_input``). ``ApprovalDecisionError`` before anything runs when they do
    not match.

    Returns ``StopReason.FINAL_ANSWER`` when the turn's results answer the run (a ``return_direct``
    tool's, read by ``read_tool_answer`` into ``ctx.output_text`` / ``ctx.output``, in a run without input):
    the run then ends without a model call, as it does when the call is approved inside a run. ``None``: the
    run goes on with its input and the model."""
    decisions = ctx.decisions
    assert decisions is not None
    existing = ctx.history_items = ctx.memory.items
    calls = _checked_open_calls(existing, decisions)
    # A run that may put memory back (guardrails, ``rollback_on_failure``) goes back to after these calls'
    # results once they are written: a call that ran is never left open, to run again on the next approval.
    # Cut before, the run's ending answers them (``settle_pending``), and nothing else of the run is in memory
    # yet: no point to go back to.
    point, ctx.restore_point = ctx.restore_point, None
    limit = ctx.options.max_tool_calls
    allowed = calls if limit is None else calls[: max(0, limit - len(ctx.tool_calls))]
    if ctx.all_tools is not None or ctx.tools.has_conditional:
        # ``@tool(enabled=fn)`` as of now: a call approved to a tool the run no longer offers is not run
        # (an unknown tool's ``TOOL_ERROR``), as a step's call to it would not be.
        await choose_tools(ctx)
    await runtime._announce(ctx, calls)
    results: dict[str, ToolResult] = {}
    listening = ctx.bus.has_listeners()
    for call in allowed:
        reason = decisions[call.id]
        if reason is not None:
            found = ctx.tools.resolve(call.name)
            result = denied_result(call, found.name if found is not None else call.name, reason)
            results[call.id] = ctx.finished[call.id] = result
            if listening:
                await ctx.emit(ToolStarted(call=call))
                await ctx.emit(ToolFailed(call=call, result=result))
    approved = tuple(call for call in allowed if decisions[call.id] is None)
    if approved:
        executor = ctx.executor
        for call in approved:
            executor.note_approval(call, False)  # decided already: run without asking again
        try:
            ran = await runtime.run_tool_calls(ctx, approved)
        finally:
            executor.forget_approvals()
        results.update((call.id, result) for call, result in zip(approved, ran, strict=True))
    refused = calls[len(allowed) :]
    if refused:
        # Decided calls count against ``max_tool_calls`` as a step's do: those beyond it are not run.
        reason = f"not run: the run reached its limit of {limit} tool calls"
        refusals = await runtime._refused_results(ctx, refused, reason)
        results.update((call.id, result) for call, result in zip(refused, refusals, strict=True))
    ordered = [results[call.id] for call in calls]
    ctx.record_results(calls, ordered)
    if point is not None:
        ctx.restore_point = RestorePoint(ctx.memory.snapshot(), len(ctx.new_items))
    # A run with input goes on to answer it, whatever the results say: the person asked something new.
    if (
        ctx.tools.has_return_direct
        and not ctx.input_items
        and await runtime.read_tool_answer(ctx, _turn_results(existing, ordered))
    ):
        return StopReason.FINAL_ANSWER
    return None


def _turn_results(items: Sequence[Any], decided: Sequence[ToolResult]) -> list[ToolResult]:
    """The results of every call of the paused turn (``items``, before the decided calls' results), in call
    order: the decided calls' and those the paused run wrote (read back from their outputs)."""
    by_id = {result.call_id: result for result in decided}
    first = next((i for i, item in enumerate(items) if any(c in by_id for c in tool_call_ids(item))), None)
    if first is None:
        return []
    begin, end = turn_around(items, first)
    stored = stored_outputs(items)
    results: list[ToolResult] = []
    for item in items[begin:end]:
        for call in calls_of(item):
            found = by_id.get(call.id)
            if found is None:
                text = stored.get(call.id)
                if text is None:
                    continue
                found = ToolResult(call.id, call.name, text, ok=not text.startswith(TOOL_ERROR_PREFIX))
            results.append(found)
    return results


def check_open_calls(ctx: RunContext) -> tuple[ToolCall, ...]:
    """The open calls a resumed run's decisions answer (``ApprovalDecisionError`` when they do not match):
    checked before anything else of the run (its input guardrails) runs. Pure."""
    assert ctx.decisions is not None
    return _checked_open_calls(ctx.memory.items, ctx.decisions)


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
    """Whether an item closes the turn before it: a user, system or developer message. An assistant's text
    does not (the Responses API may write it before the turn's calls or after them), nor do tool calls, their
    outputs and reasoning."""
    if isinstance(item, Mapping):
        if tool_call_ids(item) or tool_output_call_id(item) is not None:
            return False
        kind = item.get("type", "message" if "role" in item else None)
        return kind == "message" and item.get("role") in _TURN_ROLES
    return getattr(item, "role", None) in _TURN_ROLES  # a ``Message`` value


def last_user_text(items: Sequence[Any]) -> str:
    """The text of the conversation's last message a person wrote (``""`` without one): what a resumed run
    without input continues (``RunStarted.input``, a planner's goal). A runtime's note written as a user
    message (a DeepResearch plan with ``plan_role="user"``, an output retry prompt) is skipped.

    >>> items = [{"role": "user", "content": "Refund A1"}, {"role": "user", "content": "Plan:\\n1. A1"}]
    >>> last_user_text(items)
    'Refund A1'
    """
    for item in reversed(items):
        if isinstance(item, Mapping) and item.get("role") == "user" and not is_runtime_note(item):
            return item_text(item)
    return ""
